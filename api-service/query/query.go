// Package query parses collection query strings the way the Bare Metal API
// does (docs/api.md §3.4-3.6): strict parameter sets, Python-style booleans,
// comma-or-repeated lists, and paging parameters.
package query

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
)

var (
	trueWords  = []string{"1", "t", "true", "on", "y", "yes"}
	falseWords = []string{"0", "f", "false", "off", "n", "no"}
)

// ParseBool reads a boolean the way oslo's strutils does.
func ParseBool(name, raw string) (bool, error) {
	l := strings.ToLower(strings.TrimSpace(raw))
	for _, w := range trueWords {
		if l == w {
			return true, nil
		}
	}
	for _, w := range falseWords {
		if l == w {
			return false, nil
		}
	}
	return false, errs.InvalidParameterValue("Invalid %s: Unrecognized value '%s', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'", name, raw)
}

// Bool reads an optional boolean parameter; nil when absent.
func Bool(v url.Values, name string) (*bool, error) {
	if !v.Has(name) {
		return nil, nil
	}
	b, err := ParseBool(name, v.Get(name))
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// List reads a list given comma-separated, repeated, or both. Items are
// trimmed; empty items are dropped.
func List(v url.Values, name string) []string {
	var out []string
	for _, raw := range v[name] {
		for _, it := range strings.Split(raw, ",") {
			if it = strings.TrimSpace(it); it != "" {
				out = append(out, it)
			}
		}
	}
	return out
}

// Fields reads ?fields=: names trimmed, lower-cased and de-duplicated in
// first-seen order. nil means "not given".
func Fields(v url.Values) []string {
	if !v.Has("fields") {
		return nil
	}
	seen := map[string]bool{}
	out := []string{}
	for _, f := range List(v, "fields") {
		f = strings.ToLower(f)
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// Page is a parsed limit/marker/sort request.
type Page struct {
	Limit   int
	Marker  string
	SortKey string
	SortDir string
}

// ParsePage reads limit, marker, sort_key and sort_dir. An absent limit is
// the server maximum and larger ones are clamped to it. The sort key is
// only defaulted here; each resource validates it against its columns.
func ParsePage(v url.Values, maxLimit int) (Page, error) {
	p := Page{Limit: maxLimit, SortKey: "id", SortDir: "asc"}
	if v.Has("limit") {
		raw := v.Get("limit")
		n, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil {
			return p, errs.InvalidParameterValue("Expected an integer for limit: %s", raw)
		}
		if n <= 0 {
			return p, errs.InvalidParameterValue("Limit must be positive")
		}
		p.Limit = min(n, maxLimit)
	}
	p.Marker = v.Get("marker")
	if k := v.Get("sort_key"); k != "" {
		p.SortKey = k
	}
	if d := v.Get("sort_dir"); v.Has("sort_dir") {
		if d != "asc" && d != "desc" {
			return p, errs.InvalidParameterValue("Invalid sort direction: %s. Acceptable values are 'asc' or 'desc'", d)
		}
		p.SortDir = d
	}
	return p, nil
}

// Param is one carried-over query parameter of a next link.
type Param struct{ Key, Value string }

// NextURL builds the "next" link of a full page: base + path, the carried
// parameters in order, then limit and marker.
func NextURL(base, path string, carry []Param, limit int, marker string) string {
	var b strings.Builder
	b.WriteString(base)
	b.WriteString(path)
	b.WriteByte('?')
	for _, p := range carry {
		b.WriteString(url.QueryEscape(p.Key))
		b.WriteByte('=')
		b.WriteString(escapeValue(p.Value))
		b.WriteByte('&')
	}
	b.WriteString("limit=")
	b.WriteString(strconv.Itoa(limit))
	b.WriteString("&marker=")
	b.WriteString(url.QueryEscape(marker))
	return b.String()
}

// escapeValue escapes a value but keeps commas readable in field lists.
func escapeValue(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "%2C", ",")
}

// PyBool renders a boolean as Python does, which is what clients have seen
// in next links.
func PyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
