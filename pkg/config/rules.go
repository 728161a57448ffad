package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// rule is what an option's tags allow besides its type: `range`,
// `choices`, `format` and `required`. Validate checks it; the example file
// and the documentation's option table print it.
type rule struct {
	bounds   *bounds
	choices  []string
	format   string
	required *requirement
}

var stringListType = reflect.TypeFor[[]string]()

func parseRule(tag reflect.StructTag, t reflect.Type) (rule, error) {
	var r rule
	if text, ok := tag.Lookup("range"); ok {
		b, err := parseBounds(text, t)
		if err != nil {
			return rule{}, err
		}
		r.bounds = b
	}
	if text, ok := tag.Lookup("choices"); ok {
		if t.Kind() != reflect.String {
			return rule{}, fmt.Errorf("choices on a %s option", t)
		}
		r.choices = strings.Split(text, ",")
	}
	textual := t.Kind() == reflect.String || t == stringListType
	if name, ok := tag.Lookup("format"); ok {
		if _, known := formats[name]; !known || !textual {
			return rule{}, fmt.Errorf("format %q on a %s option", name, t)
		}
		r.format = name
	}
	if text, ok := tag.Lookup("required"); ok {
		if !textual {
			return rule{}, fmt.Errorf("required on a %s option", t)
		}
		r.required = parseRequirement(text)
	}
	return r, nil
}

// problems lists what is wrong with the option's value in c, each as the
// text that follows "[section] option: ".
func (o option) problems(c *Config) []string {
	f := o.field(c)
	r := o.rule
	var out []string
	if msg := r.required.problem(c, f); msg != "" {
		out = append(out, msg)
	}
	if v, set := intValue(f); set && r.bounds != nil {
		if msg := r.bounds.problem(v, format(f)); msg != "" {
			out = append(out, msg)
		}
	}
	if r.choices != nil && !slices.Contains(r.choices, f.String()) {
		out = append(out, fmt.Sprintf("%q is not one of %s", f.String(), choicesText(r.choices)))
	}
	if r.format != "" {
		out = append(out, formats[r.format].problems(f)...)
	}
	return out
}

// constraint describes the rule for readers of the example file and the
// documentation: "1..65535", "one of text, json", "required", ...
func (r rule) constraint() string {
	var parts []string
	if r.required != nil {
		parts = append(parts, r.required.String())
	}
	if r.bounds != nil {
		parts = append(parts, r.bounds.String())
	}
	if r.choices != nil {
		parts = append(parts, "one of "+choicesText(r.choices))
	}
	if r.format != "" {
		parts = append(parts, formats[r.format].doc)
	}
	return strings.Join(parts, "; ")
}

func choicesText(choices []string) string {
	named := slices.DeleteFunc(slices.Clone(choices), func(s string) bool { return s == "" })
	text := strings.Join(named, ", ")
	if len(named) < len(choices) {
		text += " (or empty)"
	}
	return text
}

// intValue is the number a numeric option holds; set is false for a
// non-numeric option and for an optional integer left empty.
func intValue(f reflect.Value) (n int64, set bool) {
	switch {
	case f.Type() == optionalIntType:
		if f.IsNil() {
			return 0, false
		}
		return f.Elem().Int(), true
	case f.Kind() == reflect.Int, f.Kind() == reflect.Int64:
		return f.Int(), true
	}
	return 0, false
}

// bounds is a `range` tag: ">0", ">=0" or "lo..hi" (inclusive), the
// bounds written as the option's values are.
type bounds struct {
	text     string
	lo, hi   int64
	positive bool
	interval bool
}

func parseBounds(text string, t reflect.Type) (*bounds, error) {
	if t != optionalIntType && t.Kind() != reflect.Int && t.Kind() != reflect.Int64 {
		return nil, fmt.Errorf("range on a %s option", t)
	}
	b := &bounds{text: text, positive: text == ">0"}
	if text == ">0" || text == ">=0" {
		return b, nil
	}
	lo, hi, ok := strings.Cut(text, "..")
	if !ok {
		return nil, fmt.Errorf("range %q is not >0, >=0 or lo..hi", text)
	}
	b.interval = true
	for _, end := range []struct {
		text string
		to   *int64
	}{{lo, &b.lo}, {hi, &b.hi}} {
		v := reflect.New(t).Elem()
		if err := set(v, end.text); err != nil {
			return nil, fmt.Errorf("range %q: %w", text, err)
		}
		*end.to, _ = intValue(v)
	}
	return b, nil
}

func (b *bounds) problem(v int64, shown string) string {
	switch {
	case b.interval && (v < b.lo || v > b.hi):
		return fmt.Sprintf("%s is outside %s", shown, b.text)
	case b.positive && v <= 0:
		return "must be positive"
	case !b.interval && v < 0:
		return "must not be negative"
	}
	return ""
}

func (b *bounds) String() string {
	switch {
	case b.interval:
		return b.text
	case b.positive:
		return "> 0"
	}
	return ">= 0"
}

// valueFormat is a `format` tag: what a string, or each item of a list,
// must look like. An empty string is unset and passes.
type valueFormat struct {
	valid   func(string) bool
	problem string
	doc     string
}

var formats = map[string]valueFormat{
	"url":     {isHTTPURL, "is not an http(s) URL", "http(s) URL"},
	"cidr":    {isCIDR, "is not a network in CIDR notation (such as 10.20.0.0/16)", "networks in CIDR notation"},
	"abspath": {filepath.IsAbs, "is not an absolute path", "absolute paths"},
}

func (vf valueFormat) problems(f reflect.Value) []string {
	values := []string{f.String()}
	if f.Kind() == reflect.Slice {
		values = f.Interface().([]string)
	} else if values[0] == "" {
		return nil
	}
	var out []string
	for _, v := range values {
		if !vf.valid(v) {
			out = append(out, fmt.Sprintf("%q %s", v, vf.problem))
		}
	}
	return out
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func isCIDR(s string) bool {
	_, err := netip.ParsePrefix(s)
	return err == nil
}
