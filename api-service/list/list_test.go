package list_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/api-service/list"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
)

type item struct{ UUID, Color string }

var items = catalogue.New(&catalogue.Catalogue[item]{Resource: "item",
	Fields: []catalogue.Field[item]{
		{Name: "uuid", Since: microversion.Min, Sortable: true, Get: func(i *item) any { return i.UUID }},
		{Name: "color", Since: microversion.V1(20), Sortable: true, Get: func(i *item) any { return i.Color }},
	},
	Defaults: []string{"uuid"},
	Path:     func(i *item) string { return "items/" + i.UUID },
	UUID:     func(i *item) string { return i.UUID },
})

const (
	uuidA = "0c9a3a52-7d3c-4f8e-9e61-0e0b6b3f5a01"
	uuidB = "0c9a3a52-7d3c-4f8e-9e61-0e0b6b3f5a02"
)

// lastRaw is the document run decoded last, lastMatch the conditions its
// store was asked for.
var (
	lastRaw   string
	lastMatch []filter.Condition
)

// run lists two stored items with a page of at most limit; it returns the
// document (or the error) and the page the store was asked for.
func run(collection string, d list.Dialect, v microversion.Version, rawQuery string, detailPath bool, page *list.Page[item]) (map[string]any, db.Page, error) {
	q, err := url.ParseQuery(rawQuery)
	Expect(err).NotTo(HaveOccurred())
	var asked db.Page
	doc, err := list.Run(list.Spec[item]{Catalogue: items, Dialect: d, Collection: collection, Path: "/v1/items",
		DetailPath: detailPath, Filters: []catalogue.Filter{{Param: "color", Since: microversion.V1(20), Column: "color"}},
		View:     catalogue.View[item]{Version: v, Base: "http://h"},
		MaxLimit: 2, Buffer: func(n int) []byte { return make([]byte, 0, n) },
		Prepare: func(q url.Values) (list.Fetch[item], error) {
			if q.Get("color") == "plaid" {
				return nil, errs.InvalidParameterValue("no plaid")
			}
			return func(p db.Page, _, _ []string, match []filter.Condition) (list.Page[item], error) {
				asked = p
				lastMatch = match
				out := list.Page[item]{Items: []item{{uuidA, "red"}, {uuidB, "blue"}}[:min(p.Limit, 2)]}
				if page != nil {
					out.Shown, out.NoNext = page.Shown, page.NoNext
					if page.Items != nil {
						out.Items = page.Items
					}
				}
				return out, nil
			}, nil
		}}, q)
	if err != nil {
		return nil, asked, err
	}
	lastRaw = string(doc)
	var m map[string]any
	Expect(json.Unmarshal(doc, &m)).To(Succeed())
	return m, asked, nil
}

var v20 = microversion.V1(20)

var _ = Describe("Run", func() {
	It("lists the default fields and links the next page with what the request said", func() {
		doc, asked, err := run("items", list.Classic, microversion.Max, "color=red&sort_key=color&marker="+strings.ToUpper(uuidA), false, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(asked).To(Equal(db.Page{Limit: 2, Marker: uuidA, SortKey: "color", SortDir: "asc"}))
		Expect(lastMatch).To(Equal([]filter.Condition{{Column: "color", Value: "red"}}), "the filter reaches the store")
		Expect(doc["items"]).To(HaveLen(2))
		Expect(doc["items"].([]any)[0]).To(HaveLen(2)) // uuid and links
		Expect(doc["next"]).To(Equal("http://h/v1/items?sort_key=color&sort_dir=asc&color=red&fields=uuid&limit=2&marker=" + uuidB))
	})

	It("shows full objects for detail and repeats ?detail in the next link", func() {
		doc, _, err := run("items", list.Classic, microversion.Max, "detail=true", false, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(doc["items"].([]any)[0]).To(HaveKeyWithValue("color", "red"))
		Expect(doc["next"]).To(HaveSuffix("sort_dir=asc&detail=True&limit=2&marker=" + uuidB))
		doc, _, err = run("items", list.Classic, microversion.Max, "", true, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(doc["next"]).To(Equal("http://h/v1/items?sort_key=id&sort_dir=asc&limit=2&marker=" + uuidB))
	})

	It("has no next link for a short page or when the filter names one object", func() {
		doc, _, err := run("items", list.Classic, microversion.Max, "", false, &list.Page[item]{Items: []item{{uuidA, "red"}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(doc).NotTo(HaveKey("next"))
		doc, _, err = run("items", list.Classic, microversion.Max, "", false, &list.Page[item]{NoNext: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(doc).NotTo(HaveKey("next"))
	})

	It("shows what the endpoint keeps but links after the page as read", func() {
		doc, _, err := run("items", list.Classic, microversion.Max, "", false, &list.Page[item]{Shown: []item{}})
		Expect(err).NotTo(HaveOccurred())
		Expect(doc["items"]).To(BeEmpty())
		Expect(doc["next"]).To(HaveSuffix("marker=" + uuidB))
	})

	DescribeTable("refuses bad requests in the order Ironic checks them",
		func(d list.Dialect, v microversion.Version, rawQuery string, detailPath bool, status int, msg string) {
			_, _, err := run("items", d, v, rawQuery, detailPath, nil)
			Expect(errs.Status(err)).To(Equal(status))
			if msg != "" {
				Expect(errs.Message(err)).To(Equal(msg))
			}
		},
		Entry("unknown parameter", list.Classic, microversion.Max, "colour=red&limit=x", false, http.StatusBadRequest, "Unexpected arguments: colour"),
		Entry("fields on /detail", list.Classic, microversion.Max, "fields=uuid", true, http.StatusBadRequest, "Unexpected arguments: fields"),
		Entry("filter newer than the version", list.Classic, microversion.V1(19), "color=red", false, http.StatusNotAcceptable, ""),
		Entry("detail before its version", list.Classic, v20, "detail=true", false, http.StatusBadRequest, "Invalid query parameter ?detail=true received."),
		Entry("detail with fields", list.Classic, microversion.Max, "detail=true&fields=uuid", false, http.StatusBadRequest, "Can not specify ?detail=True and fields in the same request."),
		Entry("detail with fields, volume wording", list.Volume, microversion.Max, "detail=true&fields=uuid", false, http.StatusBadRequest, "Can't fetch a subset of fields with 'detail' set"),
		Entry("unknown field", list.Classic, microversion.Max, "fields=size", false, http.StatusBadRequest, `Field(s) "size" are not valid`),
		Entry("unsortable key", list.Classic, microversion.Max, "sort_key=size", false, http.StatusBadRequest, `The sort_key value "size" is an invalid field for sorting`),
		Entry("bad filter before a bad marker", list.Classic, microversion.Max, "color=plaid&marker=x", false, http.StatusBadRequest, "no plaid"),
		Entry("bad marker", list.Classic, microversion.Max, "marker=x", false, http.StatusBadRequest, "Expected a UUID but received x."),
		Entry("bad marker, volume wording", list.Volume, microversion.Max, "marker=x", false, http.StatusBadRequest, "Expected UUID for marker: x"),
	)

	It("leaves the sort key to the store in the volume dialect", func() {
		_, asked, err := run("items", list.Volume, microversion.Max, "sort_key=size", false, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(asked.SortKey).To(Equal("size"))
	})

	It("writes the document's keys in encoding/json's order", func() {
		for _, collection := range []string{"items", "nodes", "targets"} {
			doc, _, err := run(collection, list.Classic, microversion.Max, "", false, nil)
			Expect(err).NotTo(HaveOccurred())
			want, err := json.Marshal(doc)
			Expect(err).NotTo(HaveOccurred())
			Expect(lastRaw).To(MatchJSON(want))
			Expect(lastRaw).To(Equal(string(want)), collection)
		}
	})
})
