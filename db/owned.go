package db

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ferricbm/ferric/pkg/resource/filter"
)

// nodeUUIDQuery selects cols of a table that refers to nodes by node_id,
// plus the node's uuid as node_uuid. join is "JOIN" for rows that always
// have a node, "LEFT JOIN" for rows that may have none yet (allocations).
func (s *Store) nodeUUIDQuery(ctx context.Context, table, join string, cols []string) *gorm.DB {
	sel := make([]clause.Column, 0, len(cols)+1)
	for _, c := range cols {
		sel = append(sel, clause.Column{Table: table, Name: c})
	}
	sel = append(sel, clause.Column{Table: "nodes", Name: "uuid", Alias: "node_uuid"})
	return s.db.WithContext(ctx).Table(table).
		Clauses(clause.Select{Columns: sel}).
		Joins(join + " nodes ON nodes.id = " + table + ".node_id")
}

// ownedTable is the repository of one kind of row that belongs to a node:
// port groups, volume connectors and volume targets.
type ownedTable[T any] struct {
	// noun names a row in error context ("volume connector").
	noun     string
	columns  tableColumns
	list     listTable
	save     []string
	nodeUUID func(*T) *string
	notFound func(ident string) error
	// duplicate is the API's 409 for the unique key an INSERT or UPDATE
	// broke, nil for a key it does not know.
	duplicate func(key string, row *T) error
}

func newOwnedTable[T any](noun string, nodeUUID func(*T) *string, notFound func(string) error, duplicate func(string, *T) error) ownedTable[T] {
	cols := parseColumns(new(T))
	return ownedTable[T]{
		noun:    noun,
		columns: cols,
		// The JSON columns are the forbidden sort keys; every other column
		// may be one.
		list: listTable{
			table:     cols.schema.Table,
			markerCol: "uuid",
			sortable:  cols.sortable(),
			forbidden: cols.json,
			notFound:  notFound,
		},
		save:      saveColumnsOf(cols),
		nodeUUID:  nodeUUID,
		notFound:  notFound,
		duplicate: duplicate,
	}
}

func (o ownedTable[T]) uuid(ctx context.Context, row *T) string {
	return o.columns.field(ctx, row, "uuid").String()
}

// writeError turns an INSERT or UPDATE failure into the API's 409s, and a
// missing owner into NodeNotFound.
func (o ownedTable[T]) writeError(ctx context.Context, err error, row *T) error {
	if foreignKeyViolation(err) {
		return ownerNotFound(*o.nodeUUID(row), o.columns.field(ctx, row, "node_id").Int())
	}
	if key, ok := uniqueViolation(err); ok {
		if dup := o.duplicate(key, row); dup != nil {
			return dup
		}
	}
	return err
}

// create inserts row as Store.create does; a duplicate is a 409 and a
// missing owner NodeNotFound. Creation needs no node lock: the database's
// unique indexes arbitrate between concurrent creators.
func (o ownedTable[T]) create(ctx context.Context, s *Store, row *T) error {
	if err := s.create(ctx, o.columns, row); err != nil {
		return fmt.Errorf("create %s %s: %w", o.noun, o.uuid(ctx, row), o.writeError(ctx, err, row))
	}
	return nil
}

// get loads the row whose column (uuid, or name where the table has one)
// is value, with its owner's uuid.
func (o ownedTable[T]) get(ctx context.Context, s *Store, column, value string) (*T, error) {
	cols, _ := o.columns.selection(nil)
	q := s.nodeUUIDQuery(ctx, o.list.table, "JOIN", cols).
		Where(clause.Eq{Column: clause.Column{Table: o.list.table, Name: column}, Value: value}).
		Limit(1)
	rows, err := scanRows(q, o.columns, o.nodeUUID)
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", o.noun, value, err)
	}
	if len(rows) == 0 {
		return nil, o.notFound(value)
	}
	return &rows[0], nil
}

// page reads one page of the rows matching match (and, with nodeID,
// belonging to that node), each with its owner's uuid from the same query.
// columns as in ListPorts.
func (o ownedTable[T]) page(ctx context.Context, s *Store, match []filter.Condition, nodeID *int64, p Page, columns []string) ([]T, error) {
	cols, err := o.columns.selection(columns, "node_uuid")
	if err != nil {
		return nil, err
	}
	q := s.nodeUUIDQuery(ctx, o.list.table, "JOIN", cols)
	for _, e := range where(o.list.table, idConditions(match, parentID{"node_id", nodeID}), nil) {
		q = q.Where(e)
	}
	q, err = o.list.paginate(ctx, s.db, q, p)
	if err != nil {
		return nil, err
	}
	rows, err := scanRows(q, o.columns, o.nodeUUID)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", o.list.table, err)
	}
	return rows, nil
}

// update writes every column of row but id, uuid and the timestamps, by
// id, and sets updated_at; it refreshes the row's node uuid from the
// stored owner, which changes when node_id does.
func (o ownedTable[T]) update(ctx context.Context, s *Store, row *T) error {
	ts := now()
	sets := []string{"updated_at = ?"}
	args := []any{ts}
	for _, c := range o.save {
		sets = append(sets, s.quote(c)+" = ?")
	}
	args = append(args, o.columns.values(ctx, row, o.save)...)
	args = append(args, o.columns.field(ctx, row, "id").Int())
	stmt := "UPDATE " + o.list.table + " SET " + strings.Join(sets, ", ") + " WHERE id = ?"
	var nodeUUID string
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(stmt, args...)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return gorm.ErrRecordNotFound
		}
		return tx.Raw("SELECT uuid FROM nodes WHERE id = ?", o.columns.field(ctx, row, "node_id").Int()).Row().Scan(&nodeUUID)
	})
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return o.notFound(o.uuid(ctx, row))
	case err != nil:
		return fmt.Errorf("save %s %s: %w", o.noun, o.uuid(ctx, row), o.writeError(ctx, err, row))
	}
	o.columns.field(ctx, row, "updated_at").Set(reflect.ValueOf(&ts))
	*o.nodeUUID(row) = nodeUUID
	return nil
}

// destroy deletes the row with that uuid.
func (o ownedTable[T]) destroy(ctx context.Context, s *Store, uuid string) error {
	res := s.db.WithContext(ctx).Exec("DELETE FROM "+o.list.table+" WHERE uuid = ?", uuid)
	if res.Error != nil {
		return fmt.Errorf("destroy %s %s: %w", o.noun, uuid, res.Error)
	}
	if res.RowsAffected == 0 {
		return o.notFound(uuid)
	}
	return nil
}
