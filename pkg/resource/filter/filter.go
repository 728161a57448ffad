// Package filter is the vocabulary of list filters: the resource
// catalogues declare them on their rows, the API parses a query into
// conditions, and the repository turns each condition into SQL. It holds
// no logic of its own so that all three can share it.
package filter

// Op is how a condition compares its column with its value.
type Op int

const (
	// Equal: the column equals Value, a string or a bool.
	Equal Op = iota
	// In: the column is one of Value, a []string.
	In
	// Set: the column is not NULL when Value (a bool) is true, NULL when
	// it is false.
	Set
	// ContainsFold: the column holds Value, a string, ignoring case.
	ContainsFold
)

// Cond is one condition on a stored column.
type Cond struct {
	Column string
	Op     Op
	Value  any
}
