package cli

import (
	"slices"

	"github.com/ferricbm/ferric/cmd/ferricctl/internal/output"
)

// column is one field of a resource: its API name, its list heading and
// how to read it.
type column[T any] struct {
	name  string
	label string
	value func(T) any
}

type columns[T any] []column[T]

func (cs columns[T]) names() []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}

func (cs columns[T]) byName(names []string) columns[T] {
	out := make(columns[T], 0, len(names))
	for _, n := range names {
		if i := slices.IndexFunc(cs, func(c column[T]) bool { return c.name == n }); i >= 0 {
			out = append(out, cs[i])
		}
	}
	return out
}

// list renders items with the named columns, headed by their labels.
func (cs columns[T]) list(items []T, names []string) output.List {
	sel := cs.byName(names)
	l := output.List{Headings: make([]string, len(sel)), Rows: make([][]any, len(items))}
	for i, c := range sel {
		l.Headings[i] = c.label
	}
	for r, it := range items {
		row := make([]any, len(sel))
		for i, c := range sel {
			row[i] = c.value(it)
		}
		l.Rows[r] = row
	}
	return l
}

// record renders one item's named fields in alphabetical order, as the
// OpenStack CLI's show commands do.
func (cs columns[T]) record(item T, names []string) output.Record {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	sel := cs.byName(sorted)
	r := output.Record{Fields: make([]string, len(sel)), Values: make([]any, len(sel))}
	for i, c := range sel {
		r.Fields[i] = c.name
		r.Values[i] = c.value(item)
	}
	return r
}
