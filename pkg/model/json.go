package model

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
)

// JSONObject is a JSON object column (driver_info, extra, ...). It is
// stored as text and always reads back as a non-nil map, because the API
// shows empty dict fields as {} and never null.
type JSONObject map[string]any

func (j JSONObject) Value() (driver.Value, error) {
	if j == nil {
		return "{}", nil
	}
	b, err := json.Marshal(map[string]any(j))
	if err != nil {
		return nil, fmt.Errorf("encode json object: %w", err)
	}
	return string(b), nil
}

func (j *JSONObject) Scan(src any) error {
	raw, err := textOf(src)
	if err != nil {
		return err
	}
	m := map[string]any{}
	// "{}", most stored dicts, needs no decoder.
	if len(raw) > 0 && string(raw) != "null" && string(raw) != "{}" {
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("decode json object: %w", err)
		}
	}
	*j = m
	return nil
}

// MarshalJSON keeps a nil map rendered as {}.
func (j JSONObject) MarshalJSON() ([]byte, error) {
	if j == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]any(j))
}

// StringList is a JSON list-of-strings column (traits, drivers, ...).
type StringList []string

func (l StringList) Value() (driver.Value, error) {
	if l == nil {
		return "[]", nil
	}
	b, err := json.Marshal([]string(l))
	if err != nil {
		return nil, fmt.Errorf("encode json list: %w", err)
	}
	return string(b), nil
}

func (l *StringList) Scan(src any) error {
	raw, err := textOf(src)
	if err != nil {
		return err
	}
	out := []string{}
	if len(raw) > 0 && string(raw) != "null" && string(raw) != "[]" {
		if err := json.Unmarshal(raw, &out); err != nil {
			return fmt.Errorf("decode json list: %w", err)
		}
	}
	*l = out
	return nil
}

func (l StringList) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]string(l))
}

func textOf(src any) ([]byte, error) {
	switch v := src.(type) {
	case nil:
		return nil, nil
	case []byte:
		return v, nil
	case string:
		return []byte(v), nil
	default:
		return nil, fmt.Errorf("unsupported json column type %T", src)
	}
}
