package query

import (
	"maps"
	"net/url"
	"slices"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/resource/ident"
)

// Filters turns the filter parameters of v that rows declare into
// conditions, in parameter order, and the parameters a next link carries
// (all of them, unlike Ironic, so that following next keeps the same
// result set). Which parameters a version may send is checked before.
func Filters(rows []catalogue.FilterRow, v url.Values) ([]filter.Cond, []Param, error) {
	byParam := make(map[string]catalogue.FilterRow, len(rows))
	for _, r := range rows {
		if v.Has(r.Param) {
			byParam[r.Param] = r
		}
	}
	var conds []filter.Cond
	var carry []Param
	for _, name := range slices.Sorted(maps.Keys(byParam)) {
		r := byParam[name]
		raw := v.Get(name)
		value, shown, err := filterValue(r, v, raw)
		if err != nil {
			return nil, nil, err
		}
		conds = append(conds, filter.Cond{Column: r.Column, Op: r.Op, Value: value})
		carry = append(carry, Param{Key: name, Value: shown})
	}
	return conds, carry, nil
}

// filterValue reads one parameter as its row says, and the text a next
// link carries for it.
func filterValue(r catalogue.FilterRow, v url.Values, raw string) (any, string, error) {
	check := func(s string) (string, error) {
		if r.Check == nil {
			return s, nil
		}
		return r.Check(s)
	}
	switch r.Value {
	case catalogue.UUIDValue:
		u, ok := ident.CanonicalUUID(raw)
		if !ok {
			return nil, "", errs.InvalidParameterValue("Expected a UUID for %s but received %s.", r.Param, raw)
		}
		return u, raw, nil
	case catalogue.BoolValue:
		b, err := ParseBool(r.Param, raw)
		return b, PyBool(b), err
	case catalogue.ListValue:
		list := List(v, r.Param)
		for i, s := range list {
			var err error
			if list[i], err = check(s); err != nil {
				return nil, "", err
			}
		}
		return list, raw, nil
	case catalogue.TextValue:
		s, err := check(raw)
		return s, raw, err
	}
	return nil, "", errs.New(errs.KindInternal, "filter %s: unknown value kind %d", r.Param, r.Value)
}
