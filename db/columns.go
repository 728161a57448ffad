package db

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// tableColumns is what the repository knows about one model's columns,
// read from the gorm tags of pkg/model so the two cannot drift apart.
type tableColumns struct {
	schema *schema.Schema
	all    []string // every column, in declaration order
	json   []string // JSON document columns: never sort keys
	// leading are the columns an index starts with; own names each
	// column's single-column, non-unique index.
	leading map[string]bool
	own     map[string]string
}

func parseColumns(m any) tableColumns {
	s, err := schema.Parse(m, &sync.Map{}, schema.NamingStrategy{})
	if err != nil {
		panic(fmt.Sprintf("parse model %T: %v", m, err))
	}
	jsonObject := reflect.TypeFor[model.JSONObject]()
	stringList := reflect.TypeFor[model.StringList]()
	t := tableColumns{schema: s, all: slices.Clone(s.DBNames)}
	for _, f := range s.Fields {
		if f.DBName != "" && (f.FieldType == jsonObject || f.FieldType == stringList) {
			t.json = append(t.json, f.DBName)
		}
	}
	t.indexes()
	return t
}

var (
	nodeColumns      = parseColumns(&model.Node{})
	portColumns      = parseColumns(&model.Port{})
	conductorColumns = parseColumns(&model.Conductor{})
)

// NodeColumns lists the node columns ListNodes can select.
func NodeColumns() []string { return slices.Clone(nodeColumns.all) }

// PortColumns lists the port columns ListPorts can select ("node_uuid" and
// "portgroup_uuid" are also accepted there: they are always loaded by the
// joins).
func PortColumns() []string { return slices.Clone(portColumns.all) }

func (t tableColumns) sortable() []string {
	return slices.DeleteFunc(slices.Clone(t.all), func(c string) bool { return slices.Contains(t.json, c) })
}

// saveColumnsOf are the columns a Save writes from the struct: all but
// id, uuid and the timestamps.
func saveColumnsOf(t tableColumns) []string {
	return slices.DeleteFunc(slices.Clone(t.all), func(c string) bool {
		switch c {
		case "id", "uuid", "created_at", "updated_at":
			return true
		}
		return false
	})
}

// selection validates a caller's column list and returns it with id and
// uuid first; nil means every column. extra names are accepted and
// dropped (they are loaded another way).
func (t tableColumns) selection(columns []string, extra ...string) ([]string, error) {
	if columns == nil {
		return slices.Clone(t.all), nil
	}
	out := []string{"id", "uuid"}
	var unknown []string
	for _, c := range columns {
		switch {
		case slices.Contains(extra, c), slices.Contains(out, c):
		case slices.Contains(t.all, c):
			out = append(out, c)
		default:
			unknown = append(unknown, c)
		}
	}
	if len(unknown) > 0 {
		return nil, errs.InvalidParameterValue("Field(s) \"%s\" are not valid", strings.Join(unknown, ", "))
	}
	return out, nil
}

// scanRows runs q and scans each row into a new T by column name. With
// owner set, the last column is the owning node's uuid (a join's) and goes
// to owner(item), a string or, where the owner is optional, a *string. gorm's Find would reflect over the model for every row
// and convert every value twice.
func scanRows[T, O any](q *gorm.DB, t tableColumns, owner func(*T) *O) ([]T, error) {
	rows, err := q.Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if owner != nil {
		names = names[:len(names)-1]
	}
	sc := t.layout(names).scanner()
	defer sc.release()
	out := []T{}
	for rows.Next() {
		var zero T
		out = append(out, zero)
		item := &out[len(out)-1]
		var err error
		if owner != nil {
			err = sc.scan(rows, item, owner(item))
		} else {
			err = sc.scan(rows, item)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}

// quotedColumns is the columns as a quoted SELECT list. Both dialects
// quote identifiers with backticks, as their gorm dialectors do.
func quotedColumns(table string, columns []string) string {
	var b strings.Builder
	for i, c := range columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(table + ".`" + c + "`")
	}
	return b.String()
}

// values reads the given columns of a model value as SQL parameters,
// times normalised to the stored form.
func (t tableColumns) values(ctx context.Context, m any, columns []string) []any {
	rv := reflect.ValueOf(m)
	for rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	out := make([]any, len(columns))
	for i, c := range columns {
		v, _ := t.schema.FieldsByDBName[c].ValueOf(ctx, rv)
		switch tv := v.(type) {
		case *time.Time:
			v = normTime(tv)
		case time.Time:
			v = *normTime(&tv)
		}
		out[i] = v
	}
	return out
}

// create inserts m as a new row: it fills the uuid when empty, stamps
// created_at, clears updated_at and, once the row is written, sets the id.
// omit are columns left to their database default.
func (s *Store) create(ctx context.Context, t tableColumns, m any, omit ...string) error {
	if id := t.field(ctx, m, "uuid"); id.String() == "" {
		id.SetString(uuid.NewString())
	}
	t.field(ctx, m, "created_at").Set(reflect.ValueOf(now()))
	t.field(ctx, m, "updated_at").SetZero()
	id, err := s.insert(ctx, t, m, omit...)
	if err != nil {
		return err
	}
	t.field(ctx, m, "id").SetInt(id)
	return nil
}

// field is the settable struct field of a column of m, a pointer to a
// model.
func (t tableColumns) field(ctx context.Context, m any, column string) reflect.Value {
	return t.schema.FieldsByDBName[column].ReflectValueOf(ctx, reflect.ValueOf(m).Elem())
}

// insert writes every column of m but id and returns the new id. It is
// used instead of gorm's Create, which silently replaces a zero value
// (pxe_enabled=false) with the column's tagged default.
func (s *Store) insert(ctx context.Context, t tableColumns, m any, omit ...string) (int64, error) {
	cols := slices.DeleteFunc(slices.Clone(t.all), func(c string) bool { return c == "id" || slices.Contains(omit, c) })
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = s.quote(c)
	}
	stmt := "INSERT INTO " + t.schema.Table + " (" + strings.Join(quoted, ", ") + ") VALUES (" +
		strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	sqlDB, err := s.db.DB()
	if err != nil {
		return 0, err
	}
	res, err := sqlDB.ExecContext(ctx, stmt, t.values(ctx, m, cols)...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}
