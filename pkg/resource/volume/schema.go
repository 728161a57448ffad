// Package volume holds the volume connector and volume target API rules
// that do not need HTTP (docs/api.md §4.5): their catalogues, whose rows
// check values as Ironic's create and post-patch schemas do, with its
// error wording; target properties are masked when shown.
package volume

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/ident"
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

func schemaErr(resource, format string, args ...any) *errs.Error {
	return errs.New(errs.KindInvalid, "Schema error for %s: %s", resource, fmt.Sprintf(format, args...))
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// checkValue checks a value of property p of a resource as its create
// schema does.
func checkValue(resource string, p prop, v any) error {
	switch p.kind {
	case kString:
		str, ok := v.(string)
		if !ok {
			return schemaErr(resource, "%s is not of type 'string'", pyRepr(v))
		}
		if str == "" {
			return schemaErr(resource, "'' is too short")
		}
		if p.maxLen > 0 && len([]rune(str)) > p.maxLen {
			return schemaErr(resource, "%s is too long", pyRepr(v))
		}
		if p.enum != nil && !slices.Contains(p.enum, str) {
			return schemaErr(resource, "%s is not one of %s", pyRepr(v), pyRepr(anySlice(p.enum)))
		}
	case kInteger:
		n, ok := integer(v)
		if !ok {
			return schemaErr(resource, "%s is not of type 'integer'", pyRepr(v))
		}
		if p.nonNegative && n < 0 {
			return schemaErr(resource, "%d is less than the minimum of 0", n)
		}
	case kObject:
		if _, ok := v.(map[string]any); !ok {
			return schemaErr(resource, "%s is not of type 'object'", pyRepr(v))
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
		keys := slices.Sorted(maps.Keys(t))
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
