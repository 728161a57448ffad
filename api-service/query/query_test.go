package query_test

import (
	"net/http"
	"net/url"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/pkg/errs"
)

func values(raw string) url.Values {
	v, err := url.ParseQuery(raw)
	Expect(err).NotTo(HaveOccurred())
	return v
}

var _ = Describe("query parsing", func() {
	DescribeTable("booleans are case-insensitive oslo words",
		func(raw string, want bool) {
			b, err := query.ParseBool("maintenance", raw)
			Expect(err).NotTo(HaveOccurred())
			Expect(b).To(Equal(want))
		},
		Entry(nil, "1", true), Entry(nil, "t", true), Entry(nil, "TRUE", true), Entry(nil, "On", true),
		Entry(nil, "y", true), Entry(nil, "yes", true), Entry(nil, "0", false), Entry(nil, "f", false),
		Entry(nil, "False", false), Entry(nil, "off", false), Entry(nil, "N", false), Entry(nil, "no", false),
	)

	It("rejects other boolean words with a 400 naming the parameter", func() {
		_, err := query.ParseBool("maintenance", "maybe")
		Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
		Expect(errs.Message(err)).To(HavePrefix("Invalid maintenance: Unrecognized value 'maybe', acceptable values are:"))
	})

	It("reads lists comma-separated, repeated or both", func() {
		Expect(query.List(values("s=a,b&s=c&s=%20d%20,,"), "s")).To(Equal([]string{"a", "b", "c", "d"}))
	})

	It("reads fields trimmed, lower-cased and de-duplicated", func() {
		Expect(query.Fields(values("fields=UUID,%20name&fields=uuid"))).To(Equal([]string{"uuid", "name"}))
		Expect(query.Fields(values(""))).To(BeNil())
	})

	Describe("ParsePage", func() {
		It("defaults to the maximum limit, id and asc", func() {
			p, err := query.ParsePage(values(""), 1000)
			Expect(err).NotTo(HaveOccurred())
			Expect(p).To(Equal(query.Page{Limit: 1000, SortKey: "id", SortDir: "asc"}))
		})

		It("clamps limits above the maximum", func() {
			p, err := query.ParsePage(values("limit=5000&marker=m&sort_key=name&sort_dir=desc"), 1000)
			Expect(err).NotTo(HaveOccurred())
			Expect(p).To(Equal(query.Page{Limit: 1000, Marker: "m", SortKey: "name", SortDir: "desc"}))
		})

		DescribeTable("rejects bad values with a 400",
			func(raw, msg string) {
				_, err := query.ParsePage(values(raw), 1000)
				Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
				Expect(errs.Message(err)).To(Equal(msg))
			},
			Entry("zero limit", "limit=0", "Limit must be positive"),
			Entry("negative limit", "limit=-3", "Limit must be positive"),
			Entry("non-integer limit", "limit=ten", "Expected an integer for limit: ten"),
			Entry("bad direction", "sort_dir=up", "Invalid sort direction: up. Acceptable values are 'asc' or 'desc'"),
		)
	})

	It("builds next links with carried parameters, limit and marker last", func() {
		next := query.NextURL("http://h:6385", "/v1/nodes", []query.Param{{Key: "sort_key", Value: "id"}, {Key: "fields", Value: "uuid,name"}, {Key: "driver", Value: "a b"}}, 2, "m-1")
		Expect(next).To(Equal("http://h:6385/v1/nodes?sort_key=id&fields=uuid,name&driver=a+b&limit=2&marker=m-1"))
	})
})
