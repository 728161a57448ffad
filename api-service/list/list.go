// Package list is the one pipeline behind every collection GET
// (docs/api.md §3.4-3.6): the strict parameter set, filter versions,
// ?fields, ?detail and the /detail path, paging, sort keys, the stored
// columns a selection needs, the encoding of the page with the
// catalogue's encoder and the "next" link.
package list

import (
	"net/url"
	"strings"

	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/resource/ident"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/present"
)

// Dialect is where Ironic's lists differ from one another.
type Dialect struct {
	// DetailSince is the version ?detail= is taken from.
	DetailSince microversion.Version
	// DetailWithFields is the error for ?detail=true beside ?fields.
	DetailWithFields func() error
	// BadMarker is the error for a marker that is not a UUID.
	BadMarker func(marker string) error
	// SortKeys: sort_key is checked against the catalogue here (the volume
	// lists leave it to the store).
	SortKeys bool
	// NoDetail: the list has no short form, so no ?detail either.
	NoDetail bool
}

// Classic is the dialect of the node, port, port group, chassis and
// conductor lists.
var Classic = Dialect{
	DetailSince: microversion.DetailParam,
	DetailWithFields: func() error {
		return errs.New(errs.KindInvalid, "Can not specify ?detail=True and fields in the same request.")
	},
	BadMarker: func(m string) error { return errs.InvalidParameterValue("Expected a UUID but received %s.", m) },
	SortKeys:  true,
}

// Allocations is the dialect of the allocation list: Classic, but every
// field is shown by default.
var Allocations = Dialect{
	DetailWithFields: Classic.DetailWithFields,
	BadMarker:        Classic.BadMarker,
	SortKeys:         true,
	NoDetail:         true,
}

// Volume is the dialect of the volume connector and target lists.
var Volume = Dialect{
	DetailSince: microversion.VolumeAPI,
	DetailWithFields: func() error {
		return errs.InvalidParameterValue("Can't fetch a subset of fields with 'detail' set")
	},
	BadMarker: func(m string) error { return errs.InvalidParameterValue("Expected UUID for marker: %s", m) },
}

// Request is a parsed collection GET.
type Request struct {
	Page query.Page
	// Fields in effect: the requested ones, the defaults, or nil (detail).
	Fields []string
	detail bool
	// detailGiven: ?detail was in the query, so the next link repeats it.
	detailGiven bool
}

// Parse reads the common parameters of a list at version v: paging,
// ?detail (not on the /detail path) and ?fields, checked with
// checkFields; without either, the fields are defaults.
func Parse(q url.Values, v microversion.Version, detailPath bool, d Dialect, defaults []string,
	checkFields func([]string, microversion.Version) error, maxLimit int) (Request, error) {
	var r Request
	page, err := query.ParsePage(q, maxLimit)
	if err != nil {
		return r, err
	}
	r.Page = page
	if !detailPath && q.Has("detail") {
		if !v.AtLeast(d.DetailSince) {
			return r, errs.New(errs.KindInvalid, "Invalid query parameter ?detail=%s received.", q.Get("detail"))
		}
		if r.detail, err = query.ParseBool("detail", q.Get("detail")); err != nil {
			return r, err
		}
		r.detailGiven = true
	}
	r.Fields = query.Fields(q)
	if r.Fields != nil {
		if !v.AtLeast(microversion.Fields) {
			return r, errs.NotAcceptable("")
		}
		if r.detail {
			return r, d.DetailWithFields()
		}
		if err := checkFields(r.Fields, v); err != nil {
			return r, err
		}
	}
	if detailPath {
		r.detail = true
	}
	if !r.detail && r.Fields == nil {
		r.Fields = defaults
	}
	return r, nil
}

// Next is the "next" link of a full page: the sort, the filters, ?detail
// as the client gave it and the fields in effect are repeated.
func (r Request) Next(base, path string, filters []query.Param, marker string) string {
	carry := []query.Param{{Key: "sort_key", Value: r.Page.SortKey}, {Key: "sort_dir", Value: r.Page.SortDir}}
	carry = append(carry, filters...)
	if r.detailGiven {
		carry = append(carry, query.Param{Key: "detail", Value: query.PyBool(r.detail)})
	}
	if r.Fields != nil {
		carry = append(carry, query.Param{Key: "fields", Value: strings.Join(r.Fields, ",")})
	}
	return query.NextURL(base, path, carry, r.Page.Limit, marker)
}

// Page is what a list endpoint read for one request.
type Page[M any] struct {
	// Items is the page as read; a full one has a next link after its
	// last item.
	Items []M
	// Shown, if not nil, are the items the response shows (the node list
	// filters by conductor after reading).
	Shown []M
	// NoNext: the filter names at most one object (a node's instance).
	NoNext bool
}

// Fetch reads one page with the request's paging and the conditions of
// its filters; columns are those the fields in effect need (nil: all).
type Fetch[M any] func(page db.Page, fields, columns []string, match []filter.Condition) (Page[M], error)

// Spec describes one list endpoint.
type Spec[M any] struct {
	Catalogue *catalogue.Catalogue[M]
	Dialect   Dialect
	// Collection is the list's key; Path the endpoint's path below the
	// base URL, /detail included.
	Collection, Path string
	// DetailPath: the /detail path, which takes neither ?fields nor
	// ?detail.
	DetailPath bool
	// Filters are the catalogue's filters the endpoint takes.
	Filters []catalogue.Filter
	// Resolve finds the objects identifier filters name.
	Resolve Resolve
	// Prepare checks what the endpoint adds to the filters once the
	// common parameters are valid and returns what reads the page.
	Prepare func(q url.Values) (Fetch[M], error)
	// View is the version, base URL and computed fields of the response.
	View catalogue.View[M]
	// MaxLimit is the largest page.
	MaxLimit int
	// Buffer returns an empty buffer with room for size bytes, to encode
	// the page into.
	Buffer func(size int) []byte
}

// Run validates q, reads the page and returns the JSON document.
func Run[M any](s Spec[M], q url.Values) ([]byte, error) {
	v := s.View.Version
	allowed := []string{"limit", "marker", "sort_key", "sort_dir"}
	if !s.DetailPath {
		allowed = append(allowed, "fields")
		if !s.Dialect.NoDetail {
			allowed = append(allowed, "detail")
		}
	}
	for _, f := range s.Filters {
		allowed = append(allowed, f.Param)
	}
	if err := errs.OnlyKeys(q, allowed...); err != nil {
		return nil, err
	}
	for _, f := range s.Filters {
		if q.Has(f.Param) {
			if err := microversion.RequireAtLeast(v, f.Since); err != nil {
				return nil, err
			}
		}
	}
	c := s.Catalogue
	r, err := Parse(q, v, s.DetailPath, s.Dialect, c.Defaults, c.CheckOutputFields, s.MaxLimit)
	if err != nil {
		return nil, err
	}
	if s.Dialect.SortKeys {
		if err := c.CheckSortKey(r.Page.SortKey, v); err != nil {
			return nil, err
		}
	}
	fetch, err := s.Prepare(q)
	if err != nil {
		return nil, err
	}
	match, carry, err := conditions(s.Filters, q, s.Resolve)
	if err != nil {
		return nil, err
	}
	if m := r.Page.Marker; m != "" {
		u, ok := ident.CanonicalUUID(m)
		if !ok {
			return nil, s.Dialect.BadMarker(m)
		}
		r.Page.Marker = u
	}
	page, err := fetch(db.Page{Limit: r.Page.Limit, Marker: r.Page.Marker, SortKey: r.Page.SortKey, SortDir: r.Page.SortDir},
		r.Fields, c.Columns(r.Fields), match)
	if err != nil {
		return nil, err
	}
	next := ""
	if n := len(page.Items); n == r.Page.Limit && n > 0 && !page.NoNext {
		next = r.Next(s.View.Base, s.Path, carry, c.UUID(&page.Items[n-1]))
	}
	shown := page.Items
	if page.Shown != nil {
		shown = page.Shown
	}
	return s.encode(s.Buffer(s.sizeHint(len(shown), r.Fields)), r.Fields, shown, next)
}

// encode writes {"<collection>": [...], "next": ...} with the keys in
// encoding/json's (sorted) order.
func (s Spec[M]) encode(buf []byte, fields []string, items []M, next string) ([]byte, error) {
	nextFirst := next != "" && "next" < s.Collection
	buf = append(buf, '{')
	if nextFirst {
		buf = appendNext(buf, next)
		buf = append(buf, ',')
	}
	buf = present.AppendString(buf, s.Collection)
	buf = append(buf, ":["...)
	vw := s.View
	vw.Fields = fields
	enc := s.Catalogue.Encoder(&vw)
	var err error
	for i := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		if buf, err = enc.Append(buf, &items[i]); err != nil {
			return nil, err
		}
	}
	buf = append(buf, ']')
	if next != "" && !nextFirst {
		buf = append(buf, ',')
		buf = appendNext(buf, next)
	}
	return append(buf, '}'), nil
}

func appendNext(buf []byte, next string) []byte {
	buf = append(buf, `"next":`...)
	return present.AppendString(buf, next)
}

// sizeHint is about how many bytes a page of n items takes.
func (s Spec[M]) sizeHint(n int, fields []string) int {
	if fields != nil {
		return 64 + n*(128+48*len(fields))
	}
	return 64 + n*s.Catalogue.SizeHint
}
