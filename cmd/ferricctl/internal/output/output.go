// Package output renders command results the way the OpenStack CLI does:
// a list is a table of rows, a single resource a field/value table, and
// both can be printed as table, json, yaml or bare values, restricted to
// chosen columns.
package output

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Formats are the accepted values of -f/--format.
var Formats = []string{"table", "json", "yaml", "value"}

// Options are the user's output choices.
type Options struct {
	Format string
	// Columns restricts and orders the columns (a list's headings, a
	// show's field names); empty means all.
	Columns []string
}

// Validate reports an unknown format.
func (o Options) Validate() error {
	if !slices.Contains(Formats, o.Format) {
		return fmt.Errorf("unknown output format %q (want one of %s)", o.Format, strings.Join(Formats, ", "))
	}
	return nil
}

// List is a list result: one row per resource, one value per heading.
type List struct {
	Headings []string
	Rows     [][]any
}

// Record is a single resource: field names and their values.
type Record struct {
	Fields []string
	Values []any
}

// WriteList prints a list. An empty list prints nothing in table format
// and an empty array in json and yaml.
func WriteList(w io.Writer, o Options, l List) error {
	idx, err := pick(l.Headings, o.Columns)
	if err != nil {
		return err
	}
	headings := project(l.Headings, idx)
	rows := make([][]any, len(l.Rows))
	for i, r := range l.Rows {
		rows[i] = project(r, idx)
	}
	switch o.Format {
	case "json":
		objs := make([]orderedMap, len(rows))
		for i, r := range rows {
			objs[i] = orderedMap{keys: headings, values: r}
		}
		return writeJSON(w, objs)
	case "yaml":
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, r := range rows {
			n, err := mappingNode(headings, r)
			if err != nil {
				return err
			}
			seq.Content = append(seq.Content, n)
		}
		return writeYAML(w, seq)
	case "value":
		for _, r := range rows {
			cells := make([]string, len(r))
			for i, v := range r {
				cells[i] = text(v)
			}
			if _, err := fmt.Fprintln(w, strings.Join(cells, " ")); err != nil {
				return err
			}
		}
		return nil
	default:
		if len(rows) == 0 {
			return nil
		}
		return writeTable(w, headings, rows)
	}
}

// WriteRecord prints one resource.
func WriteRecord(w io.Writer, o Options, r Record) error {
	idx, err := pick(r.Fields, o.Columns)
	if err != nil {
		return err
	}
	fields, values := project(r.Fields, idx), project(r.Values, idx)
	switch o.Format {
	case "json":
		return writeJSON(w, orderedMap{keys: fields, values: values})
	case "yaml":
		n, err := mappingNode(fields, values)
		if err != nil {
			return err
		}
		return writeYAML(w, n)
	case "value":
		for _, v := range values {
			if _, err := fmt.Fprintln(w, text(v)); err != nil {
				return err
			}
		}
		return nil
	default:
		rows := make([][]any, len(fields))
		for i := range fields {
			rows[i] = []any{fields[i], values[i]}
		}
		return writeTable(w, []string{"Field", "Value"}, rows)
	}
}

// pick maps the requested columns to indexes of names. A column matches a
// name case-insensitively, with spaces and underscores alike, so both
// "Node UUID" and "node_uuid" select the heading "Node UUID".
func pick(names, columns []string) ([]int, error) {
	if len(columns) == 0 {
		idx := make([]int, len(names))
		for i := range names {
			idx[i] = i
		}
		return idx, nil
	}
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), " ", "_") }
	var idx []int
	var unknown []string
	for _, c := range columns {
		i := slices.IndexFunc(names, func(n string) bool { return norm(n) == norm(c) })
		if i < 0 {
			unknown = append(unknown, c)
			continue
		}
		if !slices.Contains(idx, i) {
			idx = append(idx, i)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown column(s) %s; available: %s", strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	return idx, nil
}

func project[T any](s []T, idx []int) []T {
	out := make([]T, len(idx))
	for i, j := range idx {
		out[i] = s[j]
	}
	return out
}

// text renders a value for table and value output: strings bare, null as
// None and booleans as True/False (as the OpenStack CLI shows them),
// objects and lists as compact JSON.
func text(v any) string {
	switch t := v.(type) {
	case nil:
		return "None"
	case string:
		return t
	case bool:
		if t {
			return "True"
		}
		return "False"
	case json.Number:
		return t.String()
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case int, int64:
		return fmt.Sprint(t)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
}

func writeTable(w io.Writer, headings []string, rows [][]any) error {
	cells := make([][][]string, len(rows))
	widths := make([]int, len(headings))
	for i, h := range headings {
		widths[i] = utf8.RuneCountInString(h)
	}
	for r, row := range rows {
		cells[r] = make([][]string, len(row))
		for c, v := range row {
			lines := strings.Split(text(v), "\n")
			cells[r][c] = lines
			for _, l := range lines {
				widths[c] = max(widths[c], utf8.RuneCountInString(l))
			}
		}
	}
	var b strings.Builder
	rule := func() {
		b.WriteByte('+')
		for _, wd := range widths {
			b.WriteString(strings.Repeat("-", wd+2))
			b.WriteByte('+')
		}
		b.WriteByte('\n')
	}
	line := func(parts []string) {
		b.WriteByte('|')
		for i, p := range parts {
			b.WriteString(" " + p + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(p)) + " |")
		}
		b.WriteByte('\n')
	}
	rule()
	line(headings)
	rule()
	for _, row := range cells {
		height := 1
		for _, c := range row {
			height = max(height, len(c))
		}
		for l := range height {
			parts := make([]string, len(row))
			for i, c := range row {
				if l < len(c) {
					parts[i] = c[l]
				}
			}
			line(parts)
		}
	}
	rule()
	_, err := io.WriteString(w, b.String())
	return err
}

// orderedMap is a JSON object that keeps its keys in the given order.
type orderedMap struct {
	keys   []string
	values []any
}

func (m orderedMap) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range m.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(m.values[i])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// mappingNode is a YAML mapping in the given key order. Values go through
// JSON first so that json.Number and nested objects encode as plain YAML
// scalars and mappings.
func mappingNode(keys []string, values []any) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i, k := range keys {
		var v yaml.Node
		b, err := json.Marshal(values[i])
		if err != nil {
			return nil, err
		}
		var plain any
		if err := json.Unmarshal(b, &plain); err != nil {
			return nil, err
		}
		if err := v.Encode(plain); err != nil {
			return nil, err
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &v)
	}
	return n, nil
}

func writeYAML(w io.Writer, n *yaml.Node) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return err
	}
	return enc.Close()
}
