package volume_test

import (
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/client/fakeironic"
	"github.com/ferricbm/ferric/client/volume"
)

var _ = Describe("volume root documents", func() {
	var fake *fakeironic.Server
	BeforeEach(func() {
		fake = fakeironic.New()
		DeferCleanup(fake.Close)
	})

	It("reads /v1/volume", func(ctx SpecContext) {
		fake.Handle("GET", "/v1/volume", fakeironic.Response{Status: http.StatusOK, Body: `{
			"links": [{"href": "{url}/v1/volume/", "rel": "self"}, {"href": "{url}/volume/", "rel": "bookmark"}],
			"connectors": [{"href": "{url}/v1/volume/connectors", "rel": "self"}, {"href": "{url}/volume/connectors", "rel": "bookmark"}],
			"targets": [{"href": "{url}/v1/volume/targets", "rel": "self"}, {"href": "{url}/volume/targets", "rel": "bookmark"}]}`})
		v, err := volume.Get(ctx, fake.Client(volume.MinMicroversion)).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(v.Links).To(Equal([]volume.Link{{Href: fake.URL + "/v1/volume/", Rel: "self"}, {Href: fake.URL + "/volume/", Rel: "bookmark"}}))
		Expect(v.Connectors[0]).To(Equal(volume.Link{Href: fake.URL + "/v1/volume/connectors", Rel: "self"}))
		Expect(v.Targets[1]).To(Equal(volume.Link{Href: fake.URL + "/volume/targets", Rel: "bookmark"}))

		r := fake.Requests()[0]
		Expect(r.Method).To(Equal("GET"))
		Expect(r.Header.Get("X-OpenStack-Ironic-API-Version")).To(Equal("1.32"))
		Expect(r.Header.Get("OpenStack-API-Version")).To(Equal("baremetal 1.32"))
	})

	It("reads a node's volume document by name", func(ctx SpecContext) {
		fake.Handle("GET", "/v1/nodes/node-07/volume", fakeironic.Response{Status: http.StatusOK, Body: `{
			"links": [{"href": "{url}/v1/nodes/node-07/volume/", "rel": "self"}, {"href": "{url}/nodes/node-07/volume/", "rel": "bookmark"}],
			"connectors": [{"href": "{url}/v1/nodes/node-07/volume/connectors", "rel": "self"}, {"href": "{url}/nodes/node-07/volume/connectors", "rel": "bookmark"}],
			"targets": [{"href": "{url}/v1/nodes/node-07/volume/targets", "rel": "self"}, {"href": "{url}/nodes/node-07/volume/targets", "rel": "bookmark"}]}`})
		v, err := volume.GetByNode(ctx, fake.Client("1.40"), "node-07").Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(v.Targets[0].Href).To(Equal(fake.URL + "/v1/nodes/node-07/volume/targets"))
		Expect(fake.Requests()[0].Header.Get("X-OpenStack-Ironic-API-Version")).To(Equal("1.40"))
	})

	It("reports the 404 of a server older than 1.32", func(ctx SpecContext) {
		fake.Handle("GET", "/v1/volume", fakeironic.Response{Status: http.StatusNotFound,
			Body: `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"The API is not supported for this version\", \"debuginfo\": null}"}`})
		_, err := volume.Get(ctx, fake.Client("1.31")).Extract()
		Expect(gophercloud.ResponseCodeIs(err, http.StatusNotFound)).To(BeTrue(), "%v", err)
	})
})
