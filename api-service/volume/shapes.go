package volume

import (
	"slices"

	"github.com/ferricbm/ferric/api-service/present"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/secrets"
)

// The two shapes almost every response has, the full object and a list's
// default fields, are structs: encoding/json writes them several times
// faster than maps, which matters for 100-item pages. Any other field
// selection is a map.

type connectorFull struct {
	UUID        string         `json:"uuid"`
	NodeUUID    string         `json:"node_uuid"`
	Type        string         `json:"type"`
	ConnectorID string         `json:"connector_id"`
	Extra       map[string]any `json:"extra"`
	CreatedAt   any            `json:"created_at"`
	UpdatedAt   any            `json:"updated_at"`
	Links       []present.Link `json:"links"`
}

type connectorShort struct {
	UUID        string         `json:"uuid"`
	NodeUUID    string         `json:"node_uuid"`
	Type        string         `json:"type"`
	ConnectorID string         `json:"connector_id"`
	Links       []present.Link `json:"links"`
}

type targetFull struct {
	UUID       string         `json:"uuid"`
	NodeUUID   string         `json:"node_uuid"`
	VolumeType string         `json:"volume_type"`
	BootIndex  int            `json:"boot_index"`
	VolumeID   string         `json:"volume_id"`
	Properties map[string]any `json:"properties"`
	Extra      map[string]any `json:"extra"`
	CreatedAt  any            `json:"created_at"`
	UpdatedAt  any            `json:"updated_at"`
	Links      []present.Link `json:"links"`
}

type targetShort struct {
	UUID       string         `json:"uuid"`
	NodeUUID   string         `json:"node_uuid"`
	VolumeType string         `json:"volume_type"`
	BootIndex  int            `json:"boot_index"`
	VolumeID   string         `json:"volume_id"`
	Links      []present.Link `json:"links"`
}

// RenderConnector is the JSON value of a connector: every field, or only
// fields (plus links) when fields is not nil.
func RenderConnector(base string, c *model.VolumeConnector, fields []string) any {
	links := present.Links(base, Connectors.Path+"/"+c.UUID)
	switch {
	case fields == nil:
		return connectorFull{UUID: c.UUID, NodeUUID: c.NodeUUID, Type: c.Type, ConnectorID: c.ConnectorID,
			Extra: present.Obj(c.Extra), CreatedAt: present.Time(&c.CreatedAt), UpdatedAt: present.Time(c.UpdatedAt), Links: links}
	case slices.Equal(fields, Connectors.DefaultFields):
		return connectorShort{UUID: c.UUID, NodeUUID: c.NodeUUID, Type: c.Type, ConnectorID: c.ConnectorID, Links: links}
	}
	return render(fields, links, func(name string) any {
		switch name {
		case "uuid":
			return c.UUID
		case "node_uuid":
			return c.NodeUUID
		case "type":
			return c.Type
		case "connector_id":
			return c.ConnectorID
		case "extra":
			return present.Obj(c.Extra)
		case "created_at":
			return present.Time(&c.CreatedAt)
		case "updated_at":
			return present.Time(c.UpdatedAt)
		}
		return nil
	})
}

// RenderTarget is the JSON value of a target, every field or only fields
// (plus links), with its properties masked (the stored value keeps its
// credentials). Only the requested fields are computed.
func RenderTarget(base string, t *model.VolumeTarget, fields []string) any {
	links := present.Links(base, Targets.Path+"/"+t.UUID)
	switch {
	case fields == nil:
		return targetFull{UUID: t.UUID, NodeUUID: t.NodeUUID, VolumeType: t.VolumeType, BootIndex: t.BootIndex,
			VolumeID: t.VolumeID, Properties: present.Obj(secrets.Mask(t.Properties)), Extra: present.Obj(t.Extra),
			CreatedAt: present.Time(&t.CreatedAt), UpdatedAt: present.Time(t.UpdatedAt), Links: links}
	case slices.Equal(fields, Targets.DefaultFields):
		return targetShort{UUID: t.UUID, NodeUUID: t.NodeUUID, VolumeType: t.VolumeType, BootIndex: t.BootIndex,
			VolumeID: t.VolumeID, Links: links}
	}
	return render(fields, links, func(name string) any {
		switch name {
		case "uuid":
			return t.UUID
		case "node_uuid":
			return t.NodeUUID
		case "volume_type":
			return t.VolumeType
		case "boot_index":
			return t.BootIndex
		case "volume_id":
			return t.VolumeID
		case "properties":
			return present.Obj(secrets.Mask(t.Properties))
		case "extra":
			return present.Obj(t.Extra)
		case "created_at":
			return present.Time(&t.CreatedAt)
		case "updated_at":
			return present.Time(t.UpdatedAt)
		}
		return nil
	})
}

// render builds a map of the named fields and the links.
func render(fields []string, links []present.Link, get func(name string) any) map[string]any {
	obj := make(map[string]any, len(fields)+1)
	for _, f := range fields {
		if f != "links" {
			obj[f] = get(f)
		}
	}
	obj["links"] = links
	return obj
}
