// Package present holds the building blocks every resource representation
// shares: link pairs, timestamps, field selection and the typed errors for
// bad field lists (docs/api.md §3.3, §3.5, §3.9).
package present

import (
	"sort"
	"strings"
	"time"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
)

// Link is one {href, rel} entry.
type Link struct {
	Href string `json:"href"`
	Rel  string `json:"rel"`
	Type string `json:"type,omitempty"`
}

// Links is the self/bookmark pair of base/v1/path and base/path.
func Links(base, path string) []Link {
	return []Link{
		{Href: base + "/v1/" + path, Rel: "self"},
		{Href: base + "/" + path, Rel: "bookmark"},
	}
}

// timeLayout is ISO 8601 with microseconds and a numeric offset, which is
// how Ironic prints timestamps and what RFC 3339 parsers accept.
const timeLayout = "2006-01-02T15:04:05.000000-07:00"

// Time renders t in UTC; nil stays null.
func Time(t *time.Time) any {
	if t == nil || t.IsZero() {
		return nil
	}
	return t.UTC().Format(timeLayout)
}

// Str turns a nullable column into a JSON value.
func Str(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// BoolPtr turns a nullable boolean into a JSON value.
func BoolPtr(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

// Obj makes a dict field {} when empty, never null.
func Obj(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// Field is what selection needs to know about an output field.
type Field struct {
	Name  string
	Since microversion.Version
}

// CheckFields validates a ?fields= list against a catalogue at version v:
// unknown names are a 400, names newer than v a 406.
func CheckFields(requested []string, catalogue []Field, v microversion.Version) error {
	byName := make(map[string]Field, len(catalogue))
	for _, f := range catalogue {
		byName[f.Name] = f
	}
	var unknown []string
	for _, r := range requested {
		f, ok := byName[r]
		if !ok {
			unknown = append(unknown, r)
			continue
		}
		if !v.AtLeast(f.Since) {
			return errs.NotAcceptable("")
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return errs.InvalidParameterValue("Field(s) \"%s\" are not valid", strings.Join(unknown, ", "))
	}
	return nil
}

// Select keeps only the requested keys of obj, plus links.
func Select(obj map[string]any, fields []string) map[string]any {
	out := make(map[string]any, len(fields)+1)
	for _, f := range fields {
		if v, ok := obj[f]; ok {
			out[f] = v
		}
	}
	if l, ok := obj["links"]; ok {
		out["links"] = l
	}
	return out
}
