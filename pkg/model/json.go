package model

import (
	"bytes"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
)

// MaxText is the most bytes a text column holds: MySQL's TEXT. Past it
// MySQL refuses the write, or in a lax mode cuts it (SQLite stores it), so
// longer values are refused with 400, the same answer on either backend.
const MaxText = 65535

// tooLarge refuses an encoded JSON document that no TEXT column holds.
func tooLarge(b []byte) error {
	if len(b) <= MaxText {
		return nil
	}
	return errs.InvalidParameterValue("A JSON field is too large: %d bytes encoded, at most %d are stored.", len(b), MaxText)
}

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
	if err := tooLarge(b); err != nil {
		return nil, err
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
		if m, err = decodeObject(raw); err != nil {
			return err
		}
	}
	*j = m
	return nil
}

// UnmarshalJSON decodes like Scan, so a stored number beyond float64
// crosses RPC as it reads from the database. JSON null is a nil map, as
// encoding/json makes it.
func (j *JSONObject) UnmarshalJSON(raw []byte) error {
	if string(raw) == "null" {
		*j = nil
		return nil
	}
	m, err := decodeObject(raw)
	if err != nil {
		return err
	}
	*j = m
	return nil
}

// decodeObject decodes a JSON object with numbers as float64, except those
// beyond float64's range (1e400): an older version, or a hand-written row,
// may have stored one, and that row must still read, list, patch and
// delete. Such a number stays a json.Number and is written back as the
// same literal. The API refuses new ones.
func decodeObject(raw []byte) (map[string]any, error) {
	var m map[string]any
	err := json.Unmarshal(raw, &m)
	if err == nil || !isNumberRange(err) {
		if err != nil {
			return nil, fmt.Errorf("decode json object: %w", err)
		}
		return m, nil
	}
	// The failed decode filled part of m; start again from nothing.
	m = nil
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode json object: %w", err)
	}
	for k, v := range m {
		m[k] = floatNumbers(v)
	}
	return m, nil
}

// isNumberRange reports whether err is encoding/json's complaint about a
// number that does not fit a float64.
func isNumberRange(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te) && strings.HasPrefix(te.Value, "number ")
}

// floatNumbers turns the json.Numbers of v that fit a float64 into
// float64, the type every reader of these columns expects.
func floatNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if f, err := strconv.ParseFloat(string(t), 64); err == nil {
			return f
		}
	case map[string]any:
		for k, e := range t {
			t[k] = floatNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = floatNumbers(e)
		}
	}
	return v
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
	if err := tooLarge(b); err != nil {
		return nil, err
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
