// Package volume holds the volume connector and volume target API rules
// that do not need HTTP (docs/api.md §4.5): the create and post-patch
// schemas with Ironic's error wording, JSON-PATCH application, field
// selection and the representations, with target properties masked.
package volume

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ferricbm/ferric/api-service/ident"
	"github.com/ferricbm/ferric/pkg/errs"
)

// kind of a schema property.
type kind int

const (
	kString kind = iota
	kInteger
	kObject
)

// prop is one property of a create schema.
type prop struct {
	name     string
	kind     kind
	required bool
	// nullable properties accept null (read back as empty or generated).
	nullable bool
	// maxLen bounds strings (the database column width); 0 = unbounded.
	maxLen int
	// enum, when set, lists the only strings allowed.
	enum []string
	// nonNegative integers only.
	nonNegative bool
}

// schema is a resource's create document: the JSON-Schema subset Ironic
// declares for it, checked in a fixed order so errors are stable.
type schema struct {
	name  string // "connector" or "target", as in the error text
	props []prop
}

func (s schema) prop(name string) (prop, bool) {
	for _, p := range s.props {
		if p.name == name {
			return p, true
		}
	}
	return prop{}, false
}

func (s schema) fail(format string, args ...any) *errs.Error {
	return errs.New(errs.KindInvalid, "Schema error for %s: %s", s.name, fmt.Sprintf(format, args...))
}

// check validates a document: no unknown keys, every required key present
// (and not null), every value of the declared type.
func (s schema) check(doc map[string]any) error {
	var unknown []string
	for k := range doc {
		if _, ok := s.prop(k); !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return s.fail("Additional properties are not allowed ('%s' %s unexpected)", strings.Join(unknown, "', '"), wasWere(len(unknown)))
	}
	for _, p := range s.props {
		if v, ok := doc[p.name]; p.required && (!ok || v == nil) {
			return s.fail("'%s' is a required property", p.name)
		}
	}
	for _, p := range s.props {
		v, ok := doc[p.name]
		if !ok || (v == nil && p.nullable) {
			continue
		}
		if err := s.checkValue(p, v); err != nil {
			return err
		}
	}
	return nil
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

func (s schema) checkValue(p prop, v any) error {
	switch p.kind {
	case kString:
		str, ok := v.(string)
		if !ok {
			return s.fail("%s is not of type 'string'", pyRepr(v))
		}
		if str == "" {
			return s.fail("'' is too short")
		}
		if p.maxLen > 0 && len([]rune(str)) > p.maxLen {
			return s.fail("%s is too long", pyRepr(v))
		}
		if p.enum != nil && !slices.Contains(p.enum, str) {
			return s.fail("%s is not one of %s", pyRepr(v), pyRepr(anySlice(p.enum)))
		}
	case kInteger:
		n, ok := integer(v)
		if !ok {
			return s.fail("%s is not of type 'integer'", pyRepr(v))
		}
		if p.nonNegative && n < 0 {
			return s.fail("%d is less than the minimum of 0", n)
		}
	case kObject:
		if _, ok := v.(map[string]any); !ok {
			return s.fail("%s is not of type 'object'", pyRepr(v))
		}
	}
	return nil
}

// integer reads a JSON integer that fits the boot_index column; strings,
// booleans and fractions are not integers.
func integer(v any) (int, bool) {
	var n int64
	switch t := v.(type) {
	case json.Number:
		i, err := strconv.ParseInt(t.String(), 10, 64)
		if err != nil {
			return 0, false
		}
		n = i
	case float64:
		if t != math.Trunc(t) {
			return 0, false
		}
		n = int64(t)
	case int:
		n = int64(t)
	case int64:
		n = t
	default:
		return 0, false
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return 0, false
	}
	return int(n), true
}

func anySlice(strs []string) []any {
	out := make([]any, len(strs))
	for i, str := range strs {
		out[i] = str
	}
	return out
}

// pyRepr renders a JSON value as Python prints it in jsonschema messages.
func pyRepr(v any) string {
	switch t := v.(type) {
	case nil:
		return "None"
	case bool:
		if t {
			return "True"
		}
		return "False"
	case string:
		return "'" + strings.ReplaceAll(t, "'", `\'`) + "'"
	case json.Number:
		return t.String()
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = pyRepr(k) + ": " + pyRepr(t[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = pyRepr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// uuidOf reads an optional "uuid" value: a new UUID when absent or null.
func uuidOf(doc map[string]any) (string, error) {
	raw, ok := doc["uuid"]
	if !ok || raw == nil {
		return ident.NewUUID(), nil
	}
	s, _ := raw.(string)
	u, valid := ident.CanonicalUUID(s)
	if !valid {
		return "", errs.InvalidParameterValue("Expected UUID for uuid: %s", s)
	}
	return u, nil
}

// nodeUUIDOf reads node_uuid, which must be a UUID (a node name is not
// accepted). create selects Ironic's wording for create or patch.
func nodeUUIDOf(doc map[string]any, create bool) (string, error) {
	s, _ := doc["node_uuid"].(string)
	u, ok := ident.CanonicalUUID(s)
	if !ok {
		if create {
			return "", errs.InvalidParameterValue("Expected UUID for node_uuid: %s", s)
		}
		return "", errs.InvalidParameterValue("Expected a UUID for node_uuid, but received %s.", s)
	}
	return u, nil
}

func object(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}
