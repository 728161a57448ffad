package catalogue

import (
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
)

// Value says how a filter parameter's text reads.
type Value int

const (
	// TextValue is the text itself.
	TextValue Value = iota
	// UUIDValue is a UUID, in its canonical form.
	UUIDValue
	// BoolValue is a Python-style boolean ("true", "0", "yes"...).
	BoolValue
	// ListValue is a comma-separated or repeated list of texts.
	ListValue
)

// Filter is a list filter on a field's column.
type Filter struct {
	// Param is the query parameter; "" is the field's name.
	Param string
	// Since is the version the filter arrives at; zero is the field's.
	Since microversion.Version
	Op    filter.Op
	Value Value
	// Check, if set, refuses or normalises each text value (a state
	// name, a fault, a group folded to lower case).
	Check func(s string) (string, error)
}

// FilterRow is a Filter with its defaults filled from its field.
type FilterRow struct {
	Filter
	Column string
}

// FilterRows lists the resource's list filters, one per parameter.
func (c *Catalogue[M]) FilterRows() []FilterRow {
	var rows []FilterRow
	for _, f := range c.Fields {
		for _, flt := range f.Filters {
			if flt.Param == "" {
				flt.Param = f.Name
			}
			if flt.Since == (microversion.Version{}) {
				flt.Since = f.Since
			}
			rows = append(rows, FilterRow{Filter: flt, Column: f.Name})
		}
	}
	return rows
}

// FilterParams maps each filter parameter to the version it arrives at.
func (c *Catalogue[M]) FilterParams() map[string]microversion.Version {
	params := map[string]microversion.Version{}
	for _, r := range c.FilterRows() {
		params[r.Param] = r.Since
	}
	return params
}
