package db

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"reflect"
	"sync"
	"time"
	"unsafe"
)

// rowLayout scans a table's columns straight into a model struct. Handed
// a pointer field (a nullable column: 35 of a node's 54), database/sql
// converts through reflection and allocates the pointer; with the
// reflection that found each field's address for every row, that was
// about half of the CPU a node read spends scanning. Here a nullable
// string is read as sql.RawBytes, the other nullable values as the
// driver's own value, and the pointers of one row point into one array
// per type. Fields are addressed by offset, found once from the struct
// type.
type rowLayout struct {
	ptr  reflect.Type // pointer to the struct
	cols []scanColumn
	// strings and times count the nullable string and time columns.
	strings, times int
	scanners       sync.Pool
}

type scanKind uint8

const (
	// scanField hands database/sql the field itself: a Scanner, or a
	// type it converts. It is the zero value, what a type missing from
	// scanKinds gets, so nothing names it.
	scanField scanKind = iota //nolint:unused // named for the reader; see above
	// scanString, scanBool and scanTime hand it the field too, a type it
	// converts without reflection.
	scanString
	scanBool
	scanTime
	scanNullString
	scanNullTime
	scanNullBool
	// scanInt covers int64 and *int64: database/sql converts into either
	// by reflection, into *any by assignment.
	scanInt
	scanNullInt
)

type scanColumn struct {
	kind   scanKind
	offset uintptr
	// field is the field's type, for scanField.
	field reflect.Type
}

// scanKinds are the field types scanned other than as scanField.
var scanKinds = map[reflect.Type]scanKind{
	reflect.TypeFor[string]():     scanString,
	reflect.TypeFor[bool]():       scanBool,
	reflect.TypeFor[time.Time]():  scanTime,
	reflect.TypeFor[*string]():    scanNullString,
	reflect.TypeFor[*time.Time](): scanNullTime,
	reflect.TypeFor[*bool]():      scanNullBool,
	reflect.TypeFor[int64]():      scanInt,
	reflect.TypeFor[*int64]():     scanNullInt,
}

// layout is the scanning layout of columns (all of them names of t's
// model) into its struct.
func (t tableColumns) layout(columns []string) *rowLayout {
	l := &rowLayout{ptr: reflect.PointerTo(t.schema.ModelType), cols: make([]scanColumn, len(columns))}
	for i, c := range columns {
		f := t.schema.FieldsByDBName[c].StructField
		if len(f.Index) != 1 {
			panic(fmt.Sprintf("column %s: field %s is not a direct field of %s", c, f.Name, t.schema.ModelType))
		}
		l.cols[i] = scanColumn{kind: scanKinds[f.Type], offset: f.Offset, field: f.Type}
		switch l.cols[i].kind {
		case scanNullString:
			l.strings++
		case scanNullTime:
			l.times++
		}
	}
	return l
}

// rowScanner holds what scanning rows of one layout needs, reused row
// after row.
type rowScanner struct {
	l       *rowLayout
	targets []any
	raw     []sql.RawBytes
	vals    []any
}

// scanner returns a scanner of the layout; release gives it back.
func (l *rowLayout) scanner() *rowScanner {
	if s, ok := l.scanners.Get().(*rowScanner); ok {
		return s
	}
	return &rowScanner{l: l, targets: make([]any, 0, len(l.cols)+1), raw: make([]sql.RawBytes, len(l.cols)),
		vals: make([]any, len(l.cols))}
}

// release drops the scanner's references into the last row and pools it.
func (s *rowScanner) release() {
	clear(s.targets[:cap(s.targets)])
	clear(s.raw)
	s.l.scanners.Put(s)
}

// scan reads the current row of rows into *item, which must be of the
// layout's struct type; extra are further scan targets for columns after
// the layout's.
func (s *rowScanner) scan(rows *sql.Rows, item any, extra ...any) error {
	v := reflect.ValueOf(item)
	if v.Type() != s.l.ptr {
		panic(fmt.Sprintf("scan %s into %T", s.l.ptr, item))
	}
	base := v.UnsafePointer()
	targets := s.targets[:0]
	for i, c := range s.l.cols {
		p := unsafe.Add(base, c.offset)
		switch c.kind {
		case scanString:
			targets = append(targets, (*string)(p))
		case scanBool:
			targets = append(targets, (*bool)(p))
		case scanTime:
			targets = append(targets, (*time.Time)(p))
		case scanNullString:
			targets = append(targets, &s.raw[i])
		case scanNullTime, scanNullBool, scanInt, scanNullInt:
			targets = append(targets, &s.vals[i])
		default:
			targets = append(targets, reflect.NewAt(c.field, p).Interface())
		}
	}
	s.targets = append(targets, extra...)
	if err := rows.Scan(s.targets...); err != nil {
		return err
	}
	var (
		strs  []string
		times []time.Time
	)
	if s.l.strings > 0 {
		strs = make([]string, 0, s.l.strings)
	}
	if s.l.times > 0 {
		times = make([]time.Time, 0, s.l.times)
	}
	for i, c := range s.l.cols {
		p := unsafe.Add(base, c.offset)
		val := s.vals[i]
		s.vals[i] = nil
		switch c.kind {
		case scanNullString:
			field := (**string)(p)
			*field = nil
			if s.raw[i] != nil {
				strs = append(strs, string(s.raw[i]))
				*field = &strs[len(strs)-1]
			}
		case scanNullTime:
			field := (**time.Time)(p)
			*field = nil
			if val != nil {
				t, ok := val.(time.Time)
				if !ok {
					return fmt.Errorf("column %d: %T is not a time", i, val)
				}
				times = append(times, t)
				*field = &times[len(times)-1]
			}
		case scanNullBool:
			field := (**bool)(p)
			*field = nil
			if val != nil {
				b, err := driver.Bool.ConvertValue(val)
				if err != nil {
					return fmt.Errorf("column %d: %w", i, err)
				}
				bv := b.(bool)
				*field = &bv
			}
		case scanInt, scanNullInt:
			if val == nil && c.kind == scanNullInt {
				*(**int64)(p) = nil
				continue
			}
			n, ok := val.(int64)
			if !ok {
				return fmt.Errorf("column %d: %T is not an integer", i, val)
			}
			if c.kind == scanInt {
				*(*int64)(p) = n
			} else {
				*(**int64)(p) = &n
			}
		}
	}
	return nil
}
