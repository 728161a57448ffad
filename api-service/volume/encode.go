package volume

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/ferricbm/ferric/api-service/present"
	"github.com/ferricbm/ferric/pkg/model"
)

// AppendConnector appends the JSON of RenderConnector(base, c, fields) to
// buf, byte for byte what encoding/json writes for it. The full and the
// default shape, those of nearly every listed item, are written directly;
// a 100-item page then costs no reflection.
func AppendConnector(buf []byte, base string, c *model.VolumeConnector, fields []string) ([]byte, error) {
	full := fields == nil
	if !full && !slices.Equal(fields, Connectors.DefaultFields) {
		return appendMarshal(buf, RenderConnector(base, c, fields))
	}
	buf = appendKey(buf, '{', "uuid")
	buf = present.AppendString(buf, c.UUID)
	buf = appendKey(buf, ',', "node_uuid")
	buf = present.AppendString(buf, c.NodeUUID)
	buf = appendKey(buf, ',', "type")
	buf = present.AppendString(buf, c.Type)
	buf = appendKey(buf, ',', "connector_id")
	buf = present.AppendString(buf, c.ConnectorID)
	if full {
		var err error
		buf = appendKey(buf, ',', "extra")
		if buf, err = appendObject(buf, c.Extra, present.AppendValue); err != nil {
			return nil, err
		}
		buf = appendTimes(buf, &c.CreatedAt, c.UpdatedAt)
	}
	buf = appendKey(buf, ',', "links")
	buf = present.AppendLinks(buf, base, Connectors.Path+"/"+c.UUID)
	return append(buf, '}'), nil
}

// AppendTarget appends the JSON of RenderTarget(base, t, fields) to buf
// as AppendConnector does, properties masked as they are written.
func AppendTarget(buf []byte, base string, t *model.VolumeTarget, fields []string) ([]byte, error) {
	full := fields == nil
	if !full && !slices.Equal(fields, Targets.DefaultFields) {
		return appendMarshal(buf, RenderTarget(base, t, fields))
	}
	buf = appendKey(buf, '{', "uuid")
	buf = present.AppendString(buf, t.UUID)
	buf = appendKey(buf, ',', "node_uuid")
	buf = present.AppendString(buf, t.NodeUUID)
	buf = appendKey(buf, ',', "volume_type")
	buf = present.AppendString(buf, t.VolumeType)
	buf = appendKey(buf, ',', "boot_index")
	buf = strconv.AppendInt(buf, int64(t.BootIndex), 10)
	buf = appendKey(buf, ',', "volume_id")
	buf = present.AppendString(buf, t.VolumeID)
	if full {
		var err error
		buf = appendKey(buf, ',', "properties")
		if buf, err = appendObject(buf, t.Properties, present.AppendMasked); err != nil {
			return nil, err
		}
		buf = appendKey(buf, ',', "extra")
		if buf, err = appendObject(buf, t.Extra, present.AppendValue); err != nil {
			return nil, err
		}
		buf = appendTimes(buf, &t.CreatedAt, t.UpdatedAt)
	}
	buf = appendKey(buf, ',', "links")
	buf = present.AppendLinks(buf, base, Targets.Path+"/"+t.UUID)
	return append(buf, '}'), nil
}

// appendKey appends sep and "key":.
func appendKey(buf []byte, sep byte, key string) []byte {
	buf = append(buf, sep, '"')
	buf = append(buf, key...)
	return append(buf, '"', ':')
}

// appendObject writes a dict field: {} when empty, never null.
func appendObject(buf []byte, m map[string]any, write func([]byte, any) ([]byte, error)) ([]byte, error) {
	if len(m) == 0 {
		return append(buf, "{}"...), nil
	}
	return write(buf, m)
}

func appendTimes(buf []byte, created, updated *time.Time) []byte {
	buf = appendKey(buf, ',', "created_at")
	buf = appendTime(buf, created)
	buf = appendKey(buf, ',', "updated_at")
	return appendTime(buf, updated)
}

func appendTime(buf []byte, t *time.Time) []byte {
	if s, ok := present.Time(t).(string); ok {
		return present.AppendString(buf, s)
	}
	return append(buf, "null"...)
}

func appendMarshal(buf []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(buf, b...), nil
}
