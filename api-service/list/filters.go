package list

import (
	"net/url"
	"slices"
	"strings"

	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/resource/ident"
	"github.com/ferricbm/ferric/pkg/states"
)

// Resolve turns an identifier filter (a node or port group, by UUID or
// name) into the id its column holds; a nil id filters nothing.
type Resolve func(q catalogue.Query, ident string) (any, error)

// Except are the filters without those on the given parameters: a list
// nested below a parent does not take the filter the parent fixes.
func Except(filters []catalogue.Filter, params ...string) []catalogue.Filter {
	return slices.DeleteFunc(slices.Clone(filters), func(f catalogue.Filter) bool { return slices.Contains(params, f.Param) })
}

// conditions reads the filters q gives, in parameter order: what the
// store matches, and the parameters a next link repeats (all of them,
// unlike Ironic, so that following next keeps the same result set).
func conditions(filters []catalogue.Filter, q url.Values, resolve Resolve) ([]filter.Condition, []query.Param, error) {
	given := slices.DeleteFunc(slices.Clone(filters), func(f catalogue.Filter) bool { return !q.Has(f.Param) })
	slices.SortFunc(given, func(a, b catalogue.Filter) int { return strings.Compare(a.Param, b.Param) })
	var conds []filter.Condition
	carry := make([]query.Param, 0, len(given))
	for _, f := range given {
		raw := q.Get(f.Param)
		value, shown, err := parse(f, q, raw)
		if err == nil && (f.Query == catalogue.QueryNode || f.Query == catalogue.QueryPortgroup) {
			value, err = resolve(f.Query, raw)
		}
		if err != nil {
			return nil, nil, err
		}
		carry = append(carry, query.Param{Key: f.Param, Value: shown})
		if f.Column != "" && value != nil {
			conds = append(conds, filter.Condition{Column: f.Column, Op: f.Op, Value: value})
		}
	}
	return conds, carry, nil
}

// parse reads a filter's value as its row says, and the form a next link
// repeats.
func parse(f catalogue.Filter, q url.Values, raw string) (value any, shown string, err error) {
	switch f.Query {
	case catalogue.QueryLower:
		return strings.ToLower(raw), raw, nil
	case catalogue.QueryBool:
		b, err := query.ParseBool(f.Param, raw)
		return b, query.PyBool(b), err
	case catalogue.QueryUUID:
		u, ok := ident.CanonicalUUID(raw)
		if !ok {
			return nil, "", errs.InvalidParameterValue("Expected a UUID for %s but received %s.", f.Param, raw)
		}
		return u, u, nil
	case catalogue.QueryStates:
		list := query.List(q, f.Param)
		for _, st := range list {
			if !states.Valid(st) {
				return nil, "", errs.InvalidParameterValue("Provision state \"%s\" is not valid", st)
			}
		}
		return list, raw, nil
	case catalogue.QueryMAC:
		mac, ok := ident.NormalizeMAC(raw)
		if !ok {
			return nil, "", errs.InvalidParameterValue("Expected a MAC address but received %s.", raw)
		}
		return mac, mac, nil
	case catalogue.QueryOneOf:
		if !slices.Contains(f.OneOf, raw) {
			return nil, "", errs.InvalidParameterValue("Unknown %s: %s", f.Param, raw)
		}
	case catalogue.QueryText, catalogue.QueryNode, catalogue.QueryPortgroup:
		// Node and port group identifiers are resolved by the list's
		// handler, which knows the store.
	}
	return raw, raw, nil
}
