// Package filter is a list condition as the resource catalogues derive it
// from a query and the repository applies it: a column, how it matches,
// and the value. It sits below both, so neither knows the other.
package filter

// Op is how a condition matches its column.
type Op int

const (
	// Eq: the column equals the value.
	Eq Op = iota
	// In: the column is one of the values (a []string). A nil list does
	// not filter; an empty one matches nothing.
	In
	// Set: the column is not NULL when the value is true, NULL when false.
	Set
	// Contains: the column contains the value (a string),
	// case-insensitively, wildcards taken literally.
	Contains
)

// Condition narrows a list to the rows whose Column matches Value by Op.
type Condition struct {
	Column string
	Op     Op
	Value  any
}

// Equality reports whether c selects a single value of its column, a
// range of any index that starts with the column.
func (c Condition) Equality() bool {
	switch c.Op {
	case Eq:
		return true
	case In:
		vals, _ := c.Value.([]string)
		return len(vals) == 1
	case Set, Contains:
	}
	return false
}
