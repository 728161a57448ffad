package nextlink_test

import (
	"net/url"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/pagination"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/client/nextlink"
)

func pageAt(requested string, body any) pagination.PageResult {
	u, err := url.Parse(requested)
	Expect(err).NotTo(HaveOccurred())
	return pagination.PageResult{Result: gophercloud.Result{Body: body}, URL: *u}
}

var _ = Describe("NextURL", func() {
	const requested = "http://10.0.0.5:6385/v1/nodes/node-07/volume/targets?detail=true&limit=2&sort_key=boot_index"

	It("is the same request after the next link's marker", func() {
		got, err := nextlink.NextURL(pageAt(requested, map[string]any{
			"targets": []any{},
			"next":    "https://public.example.com/baremetal/v1/volume/targets?sort_key=boot_index&sort_dir=asc&detail=True&limit=2&marker=m2",
		}))
		Expect(err).NotTo(HaveOccurred())
		u, err := url.Parse(got)
		Expect(err).NotTo(HaveOccurred())
		Expect(u.Scheme + "://" + u.Host + u.Path).To(Equal("http://10.0.0.5:6385/v1/nodes/node-07/volume/targets"))
		Expect(u.Query()).To(Equal(url.Values{"detail": {"true"}, "limit": {"2"}, "sort_key": {"boot_index"}, "marker": {"m2"}}))
	})

	It("replaces the marker of a request that had one", func() {
		got, err := nextlink.NextURL(pageAt(requested+"&marker=m2", map[string]any{"next": "http://x/v1/volume/targets?marker=m4"}))
		Expect(err).NotTo(HaveOccurred())
		u, _ := url.Parse(got)
		Expect(u.Query()["marker"]).To(Equal([]string{"m4"}))
	})

	DescribeTable("ends the iteration",
		func(body map[string]any, req string) {
			got, err := nextlink.NextURL(pageAt(req, body))
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(BeEmpty())
		},
		Entry("without a next key", map[string]any{"targets": []any{}}, requested),
		Entry("with a null next", map[string]any{"next": nil}, requested),
		Entry("with an empty next", map[string]any{"next": ""}, requested),
		Entry("when the marker does not move", map[string]any{"next": "http://x/v1/volume/targets?marker=m2"}, requested+"&marker=m2"),
	)

	DescribeTable("rejects a next link it cannot follow",
		func(body any, message string) {
			_, err := nextlink.NextURL(pageAt(requested, body))
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("a body that is not an object", []any{}, "unexpected body type"),
		Entry("a next that is not a string", map[string]any{"next": map[string]any{"href": "x"}}, "not a string"),
		Entry("a next without marker", map[string]any{"next": "http://x/v1/volume/targets?limit=2"}, "carries no marker"),
		Entry("a malformed next", map[string]any{"next": "http://[::1"}, "malformed next link"),
	)
})
