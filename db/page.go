package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ferricbm/ferric/pkg/errs"
)

// Page selects one page of a list.
//
// Marker is the uuid (hostname for conductors) of the last item already
// seen: the page starts strictly after it in the current order. Limit 0 (or
// less) means no limit. SortKey is a column name, default "id"; SortDir is
// "asc" (default) or "desc". "id" is always the final tie-breaker, in the
// same direction, so every order is total and pages never overlap.
type Page struct {
	Limit   int
	Marker  string
	SortKey string
	SortDir string
}

// listTable describes how one table is listed.
type listTable struct {
	table     string
	markerCol string   // the column Marker holds (uuid, hostname)
	sortable  []string // columns allowed as sort keys
	forbidden []string // existing columns that may not be sort keys
	notFound  func(marker string) error
}

// order validates p's sort and returns the column and direction.
func (t listTable) order(p Page) (key string, desc bool, err error) {
	key = p.SortKey
	if key == "" {
		key = "id"
	}
	if slices.Contains(t.forbidden, key) {
		return "", false, errs.InvalidParameterValue("The sort_key value %s is an invalid field for sorting", key)
	}
	if !slices.Contains(t.sortable, key) {
		return "", false, errs.InvalidParameterValue("The sort_key value \"%s\" is an invalid field for sorting", key)
	}
	switch strings.ToLower(p.SortDir) {
	case "", "asc":
		return key, false, nil
	case "desc":
		return key, true, nil
	default:
		return "", false, errs.InvalidParameterValue("Invalid sort direction: %s. Acceptable values are 'asc' or 'desc'", p.SortDir)
	}
}

// paginate adds ORDER BY, LIMIT and the "strictly after the marker"
// condition to q, whose columns are qualified with t.table. conn reads the
// marker row; an unknown marker fails with t.notFound.
//
// The marker row is read first and its id passed as a literal: a filtered
// list whose marker id is a subquery cannot seek in the filter's index
// (MariaDB evaluates it late and walks the index from the filter's first
// row), which at 100,000 nodes cost seconds per page.
func (t listTable) paginate(ctx context.Context, conn, q *gorm.DB, p Page) (*gorm.DB, error) {
	key, desc, err := t.order(p)
	if err != nil {
		return nil, err
	}
	col := clause.Column{Table: t.table, Name: key}
	id := clause.Column{Table: t.table, Name: "id"}
	if p.Marker != "" {
		markerID, markerVal, err := t.readMarker(ctx, conn, key, p.Marker)
		if err != nil {
			return nil, err
		}
		q = q.Where(afterMarker(col, id, markerVal, markerID, desc))
	}
	order := []clause.OrderByColumn{{Column: col, Desc: desc}}
	if key != "id" {
		order = append(order, clause.OrderByColumn{Column: id, Desc: desc})
	}
	q = q.Order(clause.OrderBy{Columns: order})
	if p.Limit > 0 {
		q = q.Limit(p.Limit)
	}
	return q, nil
}

// readMarker reads the id and the key column of the marker row.
func (t listTable) readMarker(ctx context.Context, conn *gorm.DB, key, marker string) (int64, any, error) {
	var markerID int64
	var markerVal any
	row := conn.WithContext(ctx).Table(t.table).
		Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: key}}}).
		Where(clause.Eq{Column: clause.Column{Name: t.markerCol}, Value: marker}).Row()
	if err := row.Scan(&markerID, &markerVal); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return 0, nil, t.notFound(marker)
		}
		return 0, nil, fmt.Errorf("read marker %s: %w", marker, err)
	}
	if b, ok := markerVal.([]byte); ok {
		markerVal = string(b)
	}
	return markerID, markerVal, nil
}

// afterMarker is the keyset condition "(col, id) comes after (val, id0)".
// Both dialects sort NULL before every value, so NULLs lead an ascending
// list and trail a descending one.
func afterMarker(col, id clause.Column, val any, id0 int64, desc bool) clause.Expression {
	idAfter := clause.Expression(clause.Gt{Column: id, Value: id0})
	if desc {
		idAfter = clause.Lt{Column: id, Value: id0}
	}
	if col == id {
		return idAfter
	}
	isNull := clause.Eq{Column: col, Value: nil}
	if val == nil {
		if desc {
			// Only the NULLs with a smaller id remain.
			return clause.And(isNull, idAfter)
		}
		// The remaining NULLs, then every value.
		return clause.Or(clause.And(isNull, idAfter), clause.Neq{Column: col, Value: nil})
	}
	same := clause.And(clause.Eq{Column: col, Value: val}, idAfter)
	if desc {
		return clause.Or(clause.Lt{Column: col, Value: val}, same, isNull)
	}
	return clause.Or(clause.Gt{Column: col, Value: val}, same)
}
