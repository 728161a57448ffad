package catalogue

import (
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
)

// Query is how a filter's query value reads.
type Query int

const (
	// QueryText: the value as given.
	QueryText Query = iota
	// QueryLower: lower-cased, as the column is stored (conductor groups).
	QueryLower
	// QueryBool: a boolean in oslo's words; a next link repeats it as
	// True or False.
	QueryBool
	// QueryUUID: a UUID, canonicalised; anything else is refused.
	QueryUUID
	// QueryStates: provision states, comma-separated or repeated; none
	// given does not filter.
	QueryStates
	// QueryMAC: a MAC address, normalised.
	QueryMAC
	// QueryOneOf: one of Filter.OneOf.
	QueryOneOf
	// QueryNode and QueryPortgroup: an identifier (UUID or name) the
	// endpoint resolves to the object's id.
	QueryNode
	QueryPortgroup
)

// Filter is a list query parameter on a field: ?Param=value narrows a
// collection to the objects whose Column matches the value by Op.
type Filter struct {
	// Param is the query parameter; "" is the field's name.
	Param string
	// Since is the microversion the parameter arrives in; zero is the
	// field's.
	Since microversion.Version
	Query Query
	Op    filter.Op
	// Column is the stored column matched; "" is the field's name. A
	// filter on a computed field has none: the endpoint applies it to the
	// page it read. A filter on a field this service does not store is
	// accepted from its version on and matches everything, as it did in
	// the version it arrived in for a client that does not send it.
	Column string
	// OneOf are the values a QueryOneOf parameter takes.
	OneOf []string
}

// resolvedFilters are the row's filters with their defaults filled in.
func (f Field[M]) resolvedFilters() []Filter {
	out := make([]Filter, 0, len(f.Filters))
	for _, flt := range f.Filters {
		if flt.Param == "" {
			flt.Param = f.Name
		}
		if flt.Since == (microversion.Version{}) {
			flt.Since = f.Since
		}
		switch {
		case f.Computed || !f.Implemented():
			flt.Column = ""
		case flt.Column == "":
			flt.Column = f.Name
		}
		out = append(out, flt)
	}
	return out
}

// Filters are the list filters of the resource, in row order, with their
// defaults filled in.
func (c *Catalogue[M]) Filters() []Filter { return c.filters }

// FilterParams are the filter parameters a list takes, each with the
// version it arrives in; a list scoped to a parent leaves out the
// parameters the scope already fixes.
func (c *Catalogue[M]) FilterParams(except ...string) map[string]microversion.Version {
	out := make(map[string]microversion.Version, len(c.filters))
	for _, f := range c.filters {
		out[f.Param] = f.Since
	}
	for _, p := range except {
		delete(out, p)
	}
	return out
}
