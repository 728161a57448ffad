package db

import (
	"slices"
	"strings"

	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/ferricbm/ferric/pkg/resource/filter"
)

// where turns a list's conditions into clauses on table's columns;
// joined names the columns a condition reaches through a join (a port's
// node_uuid is the node's uuid).
func where(table string, conds []filter.Condition, joined map[string]clause.Column) []clause.Expression {
	out := make([]clause.Expression, 0, len(conds))
	for _, c := range conds {
		col, ok := joined[c.Column]
		if !ok {
			col = clause.Column{Table: table, Name: c.Column}
		}
		if e := condition(col, c); e != nil {
			out = append(out, e)
		}
	}
	return out
}

// parentID is a list's parent by id, if set: its column and the id.
type parentID struct {
	column string
	id     *int64
}

// idConditions are match and the equality of each set parent's column.
func idConditions(match []filter.Condition, parents ...parentID) []filter.Condition {
	out := slices.Clone(match)
	for _, p := range parents {
		if p.id != nil {
			out = append(out, filter.Condition{Column: p.column, Value: *p.id})
		}
	}
	return out
}

func condition(col clause.Column, c filter.Condition) clause.Expression {
	switch c.Op {
	case filter.In:
		vals, _ := c.Value.([]string)
		if vals == nil {
			return nil
		}
		in := make([]any, len(vals))
		for i, v := range vals {
			in[i] = v
		}
		return clause.IN{Column: col, Values: in}
	case filter.Set:
		if set, _ := c.Value.(bool); set {
			return clause.Neq{Column: col, Value: nil}
		}
		return clause.Eq{Column: col, Value: nil}
	case filter.Contains:
		s, _ := c.Value.(string)
		return clause.Expr{SQL: "LOWER(?) LIKE ? ESCAPE '!'", Vars: []any{col, "%" + escapeLike(strings.ToLower(s)) + "%"}}
	case filter.Eq:
	}
	return clause.Eq{Column: col, Value: c.Value}
}

// escapeLike makes s match literally in a LIKE pattern with ESCAPE '!'.
func escapeLike(s string) string {
	return strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(s)
}

// servingIndex names the index of the model's tags that serves a page
// ordered by id under conds, or "": exactly one condition is on a column
// an index starts with, it selects one value, and the column has an index
// of its own (which carries id after it); the others are on columns no
// index starts with, so they only filter that range.
func (t tableColumns) servingIndex(conds []filter.Condition) string {
	index := ""
	for _, c := range conds {
		if !t.leading[c.Column] {
			continue
		}
		own, ok := t.own[c.Column]
		if index != "" || !ok || !c.Equality() {
			return ""
		}
		index = own
	}
	return index
}

// indexes reads which columns lead an index of the model's tags, and
// each column's own (single-column, non-unique) index.
func (t *tableColumns) indexes() {
	t.leading, t.own = map[string]bool{}, map[string]string{}
	for _, ix := range t.schema.ParseIndexes() {
		first := slices.MinFunc(ix.Fields, func(a, b schema.IndexOption) int { return a.Priority - b.Priority })
		t.leading[first.DBName] = true
		if len(ix.Fields) == 1 && ix.Class == "" {
			t.own[first.DBName] = ix.Name
		}
	}
}
