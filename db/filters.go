package db

import (
	"fmt"
	"strings"

	"gorm.io/gorm/clause"

	"github.com/ferricbm/ferric/pkg/resource/filter"
)

// conditions turns a list's filters into SQL on table's columns. A
// condition the API could not have built (a value of the wrong type) is
// a bug, reported as an error rather than a query that ignores it.
func conditions(table string, conds []filter.Cond) ([]clause.Expression, error) {
	out := make([]clause.Expression, 0, len(conds))
	for _, c := range conds {
		col := clause.Column{Table: table, Name: c.Column}
		switch v := c.Value.(type) {
		case string:
			switch c.Op {
			case filter.Equal:
				out = append(out, clause.Eq{Column: col, Value: v})
				continue
			case filter.ContainsFold:
				out = append(out, clause.Expr{SQL: "LOWER(?) LIKE ? ESCAPE '!'",
					Vars: []any{col, "%" + escapeLike(strings.ToLower(v)) + "%"}})
				continue
			case filter.In, filter.Set:
			}
		case bool:
			switch c.Op {
			case filter.Equal:
				out = append(out, clause.Eq{Column: col, Value: v})
				continue
			case filter.Set:
				if v {
					out = append(out, clause.Neq{Column: col, Value: nil})
				} else {
					out = append(out, clause.Eq{Column: col, Value: nil})
				}
				continue
			case filter.In, filter.ContainsFold:
			}
		case []string:
			if c.Op == filter.In {
				out = append(out, inList(col, v))
				continue
			}
		}
		return nil, fmt.Errorf("filter on %s.%s: operator %d does not take %T", table, c.Column, c.Op, c.Value)
	}
	return out, nil
}

func inList(col clause.Column, values []string) clause.IN {
	vals := make([]any, len(values))
	for i, v := range values {
		vals[i] = v
	}
	return clause.IN{Column: col, Values: vals}
}
