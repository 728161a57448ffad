package apiservice_test

import (
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/resource/microversion"
)

var _ = Describe("discovery, negotiation and routing", func() {
	var e *env
	maxV := microversion.Max.String()

	BeforeEach(func() { e = sqliteEnv(nil) })

	It("serves the version document at /", func() {
		r := e.call(http.MethodGet, "/", "")
		Expect(r.status).To(Equal(http.StatusOK))
		doc := r.json()
		Expect(doc["name"]).To(Equal("OpenStack Ironic API"))
		def := doc["default_version"].(map[string]any)
		Expect(def).To(HaveKeyWithValue("id", "v1"))
		Expect(def).To(HaveKeyWithValue("min_version", "1.1"))
		Expect(def).To(HaveKeyWithValue("version", maxV))
		Expect(def).To(HaveKeyWithValue("status", "CURRENT"))
		Expect(def["links"]).To(ConsistOf(map[string]any{"href": e.url + "/v1/", "rel": "self"}))
		Expect(doc["versions"]).To(ConsistOf(def))
		Expect(r.header.Get("X-OpenStack-Ironic-API-Version")).To(Equal("1.1"))
		Expect(r.header.Get("X-OpenStack-Ironic-API-Minimum-Version")).To(Equal("1.1"))
		Expect(r.header.Get("X-OpenStack-Ironic-API-Maximum-Version")).To(Equal(maxV))
		id := r.header.Get("Openstack-Request-Id")
		Expect(id).To(MatchRegexp(`^req-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`))
		Expect(r.header.Get("X-Openstack-Request-Id")).To(Equal(id))
	})

	It("serves the v1 index with and without a trailing slash", func() {
		for _, p := range []string{"/v1", "/v1/"} {
			r := e.at("latest", http.MethodGet, p, "")
			Expect(r.status).To(Equal(http.StatusOK))
			doc := r.json()
			Expect(doc["id"]).To(Equal("v1"))
			Expect(doc["media_types"]).To(HaveKeyWithValue("base", "application/json"))
			Expect(doc["nodes"]).To(ConsistOf(
				map[string]any{"href": e.url + "/v1/nodes/", "rel": "self"},
				map[string]any{"href": e.url + "/nodes/", "rel": "bookmark"}))
			Expect(doc).To(HaveKey("ports"))
			Expect(doc).To(HaveKey("drivers"))
			Expect(doc["version"]).To(HaveKeyWithValue("version", maxV))
			Expect(doc["volume"]).To(ContainElement(map[string]any{"href": e.url + "/v1/volume/", "rel": "self"}))
			Expect(r.header.Get("X-OpenStack-Ironic-API-Version")).To(Equal(maxV))
		}
	})

	It("answers 406 with the handler shape at / and the routing shape elsewhere", func() {
		r := e.at("1.999", http.MethodGet, "/", "")
		Expect(r.status).To(Equal(http.StatusNotAcceptable))
		Expect(r.fault()).To(HaveKeyWithValue("faultcode", "Client"))
		Expect(r.fault()["faultstring"]).To(Equal("Version 1.999 was requested but the minor version is not supported by this service. The supported version range is: [1.1, " + maxV + "]."))
		Expect(r.header.Get("X-OpenStack-Ironic-API-Maximum-Version")).To(Equal(maxV))
		Expect(r.header.Get("X-OpenStack-Ironic-API-Version")).To(BeEmpty())

		r = e.call(http.MethodGet, "/v1/nodes", "", "OpenStack-API-Version", "baremetal 2.0")
		Expect(r.status).To(Equal(http.StatusNotAcceptable))
		Expect(r.fault()).To(HaveKeyWithValue("code", BeNumerically("==", 406)))
		Expect(r.fault()).To(HaveKeyWithValue("title", "Not Acceptable"))
		Expect(r.fault()["description"]).To(HavePrefix("Mutually exclusive versions requested."))
		Expect(r.header.Get("X-OpenStack-Ironic-API-Minimum-Version")).To(Equal("1.1"))
	})

	It("omits the range headers for a malformed version", func() {
		r := e.at("1.x", http.MethodGet, "/v1/nodes", "")
		Expect(r.status).To(Equal(http.StatusNotAcceptable))
		Expect(r.fault()["description"]).To(Equal("Invalid value for X-OpenStack-Ironic-API-Version header"))
		Expect(r.header.Get("X-OpenStack-Ironic-API-Minimum-Version")).To(BeEmpty())
		Expect(r.header.Get("X-OpenStack-Ironic-API-Maximum-Version")).To(BeEmpty())
	})

	It("routes paths without /v1 and with a trailing slash", func() {
		for _, p := range []string{"/nodes", "/nodes/", "/v1/nodes/"} {
			r := e.call(http.MethodGet, p, "")
			Expect(r.status).To(Equal(http.StatusOK), p)
			Expect(r.json()).To(HaveKeyWithValue("nodes", BeEmpty()))
		}
	})

	It("answers unknown paths with 404 and wrong methods with 405 in the routing shape", func() {
		r := e.call(http.MethodGet, "/v1/bogus", "")
		Expect(r.status).To(Equal(http.StatusNotFound))
		Expect(r.fault()).To(Equal(map[string]any{"code": 404.0, "title": "Not Found", "description": nil}))
		r = e.call(http.MethodPost, "/", "{}")
		Expect(r.status).To(Equal(http.StatusMethodNotAllowed))
		Expect(r.fault()).To(HaveKeyWithValue("code", 405.0))
		r = e.call(http.MethodPut, "/v1/nodes", "{}")
		Expect(r.status).To(Equal(http.StatusMethodNotAllowed))
	})

	It("hides endpoints below their version: 404 to a read, 405 to a write", func() {
		for _, p := range []string{"/v1/allocations", "/v1/nodes/x/allocation"} {
			Expect(e.at("1.51", http.MethodGet, p, "").status).To(Equal(http.StatusNotFound), p)
		}
		Expect(e.at("1.51", http.MethodPost, "/v1/allocations", `{"resource_class": "x"}`).status).To(Equal(http.StatusMethodNotAllowed))
		Expect(e.at("1.51", http.MethodDelete, "/v1/allocations/x", "").status).To(Equal(http.StatusMethodNotAllowed))
		Expect(e.at("1.52", http.MethodPatch, "/v1/allocations/x", "[]").status).To(Equal(http.StatusMethodNotAllowed))
	})

	It("refuses an Accept header that excludes JSON", func() {
		r := e.call(http.MethodGet, "/v1/nodes", "", "Accept", "application/xml")
		Expect(r.status).To(Equal(http.StatusNotAcceptable))
		Expect(e.call(http.MethodGet, "/v1/nodes", "", "Accept", "text/html, application/json;q=0.5").status).To(Equal(http.StatusOK))
		Expect(e.call(http.MethodGet, "/v1/nodes", "", "Accept", "*/*").status).To(Equal(http.StatusOK))
	})

	It("refuses oversized bodies with a flat 413 and creates nothing", func() {
		big := `{"driver": "fake-hardware", "extra": {"blob": "` + strings.Repeat("x", 1<<20) + `"}}`
		r := e.call(http.MethodPost, "/v1/nodes", big)
		Expect(r.status).To(Equal(http.StatusRequestEntityTooLarge))
		Expect(r.json()).To(HaveKeyWithValue("faultcode", "Client"))
		Expect(r.json()["faultstring"]).To(ContainSubstring("Request is too large"))
		Expect(e.call(http.MethodGet, "/v1/nodes", "").json()["nodes"]).To(BeEmpty())
	})

	It("allows up to 64 MiB on states/provision", func() {
		uuid := e.createNode("")
		cd := strings.Repeat("x", 2<<20)
		r := e.at("latest", http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", `{"target": "active", "configdrive": "`+cd+`"}`)
		Expect(r.status).To(Equal(http.StatusBadRequest), "not 413: the body limit is the larger one")
		Expect(r.fault()["faultstring"]).To(ContainSubstring(`can not be performed on node "` + uuid + `" while it is in state "enroll"`))
	})
})
