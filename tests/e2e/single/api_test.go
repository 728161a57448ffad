package single_test

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/apiversions"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
)

const (
	minVersionHeader = "X-OpenStack-Ironic-API-Minimum-Version"
	maxVersionHeader = "X-OpenStack-Ironic-API-Maximum-Version"
	versionHeader    = "X-OpenStack-Ironic-API-Version"
)

var requestIDPattern = `^req-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`

var _ = Describe("Version discovery", func() {
	It("serves the root document and version headers without a version header (1.1)", func(ctx SpecContext) {
		resp, err := harness.Do(ctx, http.MethodGet, apiURL+"/", nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Status).To(Equal(http.StatusOK))
		Expect(resp.Header.Get(minVersionHeader)).To(Equal("1.1"))
		Expect(resp.Header.Get(versionHeader)).To(Equal("1.1"), "no header negotiates the minimum")
		Expect(resp.Header.Get("Openstack-Request-Id")).To(MatchRegexp(requestIDPattern))
		Expect(resp.Header.Get("X-Openstack-Request-Id")).To(MatchRegexp(requestIDPattern))

		var doc struct {
			DefaultVersion struct {
				ID         string `json:"id"`
				MinVersion string `json:"min_version"`
				Version    string `json:"version"`
				Status     string `json:"status"`
				Links      []struct {
					Href string `json:"href"`
					Rel  string `json:"rel"`
				} `json:"links"`
			} `json:"default_version"`
			Versions []json.RawMessage `json:"versions"`
		}
		Expect(json.Unmarshal(resp.Body, &doc)).To(Succeed())
		Expect(doc.DefaultVersion.ID).To(Equal("v1"))
		Expect(doc.DefaultVersion.MinVersion).To(Equal("1.1"))
		Expect(doc.DefaultVersion.Version).To(Equal(resp.Header.Get(maxVersionHeader)))
		Expect(doc.DefaultVersion.Status).To(Equal("CURRENT"))
		Expect(doc.DefaultVersion.Links).To(ContainElement(HaveField("Href", apiURL+"/v1/")))
		Expect(doc.Versions).To(HaveLen(1))
	})

	It("is readable by gophercloud's apiversions package", func(ctx SpecContext) {
		c, err := harness.NewClient(apiURL, "")
		Expect(err).NotTo(HaveOccurred())
		c.Endpoint = apiURL + "/"
		vs, err := apiversions.List(ctx, c).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(vs.DefaultVersion.MinVersion).To(Equal("1.1"))
		Expect(vs.Versions).To(HaveLen(1))

		v, err := apiversions.Get(ctx, c, "v1").Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(v.ID).To(Equal("v1"))
		Expect(v.Version).To(Equal(vs.DefaultVersion.Version))
	})

	It("negotiates 'latest' to the maximum and echoes an explicit version", func(ctx SpecContext) {
		resp, err := harness.Do(ctx, http.MethodGet, apiURL+"/v1/", nil, map[string]string{versionHeader: "latest"})
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Status).To(Equal(http.StatusOK))
		Expect(resp.Header.Get(versionHeader)).To(Equal(resp.Header.Get(maxVersionHeader)))

		resp, err = harness.Do(ctx, http.MethodGet, apiURL+"/v1/nodes", nil,
			map[string]string{"OpenStack-API-Version": "baremetal 1.10"})
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Status).To(Equal(http.StatusOK))
		Expect(resp.Header.Get(versionHeader)).To(Equal("1.10"))
	})
})

var _ = Describe("Bad input", func() {
	var node map[string]any

	BeforeEach(func(ctx SpecContext) {
		n := steps.CreateNode(ctx, client, steps.Name("bad", 0))
		node = getNode(ctx, n.UUID)
		DeferCleanup(func(ctx SpecContext) { steps.Delete(ctx, client, n.UUID) })
	})

	post := func(ctx SpecContext, path string, body any, header map[string]string) *harness.Response {
		resp, err := harness.Do(ctx, http.MethodPost, apiURL+path, body, withLatest(header))
		Expect(err).NotTo(HaveOccurred())
		return resp
	}

	It("rejects syntactically invalid JSON with 400", func(ctx SpecContext) {
		before := nodeCount(ctx)
		resp := post(ctx, "/v1/nodes", []byte(`{"driver": "fake-hardware",`), nil)
		expectIronicError(resp, http.StatusBadRequest)
		Expect(nodeCount(ctx)).To(Equal(before))
	})

	It("rejects an unknown field with 400 naming it", func(ctx SpecContext) {
		before := nodeCount(ctx)
		resp := post(ctx, "/v1/nodes", map[string]any{"driver": "fake-hardware", "flavour": "large"}, nil)
		e := expectIronicError(resp, http.StatusBadRequest)
		Expect(e.Message()).To(ContainSubstring("flavour"))
		Expect(nodeCount(ctx)).To(Equal(before))
	})

	It("rejects a malformed UUID with 400", func(ctx SpecContext) {
		before := nodeCount(ctx)
		resp := post(ctx, "/v1/nodes", map[string]any{"driver": "fake-hardware", "uuid": "not-a-uuid"}, nil)
		e := expectIronicError(resp, http.StatusBadRequest)
		Expect(e.Message()).To(ContainSubstring("not-a-uuid"))
		Expect(nodeCount(ctx)).To(Equal(before))

		resp = post(ctx, "/v1/ports", map[string]any{"node_uuid": "1234-not-a-uuid", "address": harness.RandomMAC()}, nil)
		expectIronicError(resp, http.StatusBadRequest)
		Expect(portCount(ctx)).To(BeZero())
	})

	DescribeTable("rejects a bad JSON patch with 400 and changes nothing",
		func(ctx SpecContext, patch string) {
			uuid := node["uuid"].(string)
			resp, err := harness.Do(ctx, http.MethodPatch, apiURL+"/v1/nodes/"+uuid, []byte(patch), withLatest(nil))
			Expect(err).NotTo(HaveOccurred())
			expectIronicError(resp, http.StatusBadRequest)
			fields := []string{"uuid", "name", "driver", "extra", "properties", "driver_info", "updated_at"}
			Expect(pick(getNode(ctx, uuid), fields)).To(Equal(pick(node, fields)))
		},
		Entry("unknown op", `[{"op": "move", "from": "/extra/a", "path": "/extra/b"}]`),
		Entry("op missing", `[{"path": "/extra/a", "value": 1}]`),
		Entry("read-only path", `[{"op": "replace", "path": "/uuid", "value": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"}]`),
		Entry("unknown top-level path", `[{"op": "add", "path": "/flavour", "value": "large"}]`),
		Entry("path with a dot", `[{"op": "add", "path": "/extra/a.b", "value": 1}]`),
		Entry("remove of a missing key", `[{"op": "remove", "path": "/extra/missing"}]`),
		Entry("extra set to a string", `[{"op": "replace", "path": "/extra", "value": "x"}]`),
		Entry("a later op failing aborts the earlier ones", `[{"op": "add", "path": "/extra/a", "value": 1}, {"op": "remove", "path": "/extra/missing"}]`),
		Entry("not an array", `{"op": "add", "path": "/extra/a", "value": 1}`),
	)

	It("answers an unsupported microversion with 406 and the supported range", func(ctx SpecContext) {
		before := nodeCount(ctx)
		for _, v := range []string{"1.999", "2.0", "1.0"} {
			resp := post(ctx, "/v1/nodes", map[string]any{"driver": "fake-hardware"}, map[string]string{versionHeader: v})
			expectIronicError(resp, http.StatusNotAcceptable)
			Expect(resp.Header.Get(minVersionHeader)).To(Equal("1.1"), "version %s", v)
			Expect(resp.Header.Get(maxVersionHeader)).NotTo(BeEmpty(), "version %s", v)
		}
		resp := post(ctx, "/v1/nodes", map[string]any{"driver": "fake-hardware"}, map[string]string{versionHeader: "1.x"})
		expectIronicError(resp, http.StatusNotAcceptable)
		Expect(nodeCount(ctx)).To(Equal(before))
	})

	It("answers a body over the size limit with 413", func(ctx SpecContext) {
		before := nodeCount(ctx)
		resp := post(ctx, "/v1/nodes", map[string]any{
			"driver": "fake-hardware",
			"extra":  map[string]any{"blob": strings.Repeat("x", 2<<20)},
		}, nil)
		expectIronicError(resp, http.StatusRequestEntityTooLarge)
		Expect(nodeCount(ctx)).To(Equal(before))
	})
})

func withLatest(h map[string]string) map[string]string {
	out := map[string]string{versionHeader: client.Microversion}
	for k, v := range h {
		out[k] = v
	}
	return out
}

// expectIronicError checks the status and that the body is one of Ironic's
// error shapes, and returns it decoded.
func expectIronicError(resp *harness.Response, status int) harness.IronicError {
	GinkgoHelper()
	Expect(resp.Status).To(Equal(status), "body: %s", resp.Body)
	Expect(resp.Header.Get("Content-Type")).To(HavePrefix("application/json"))
	e, err := harness.ParseIronicError(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	if e.FaultCode != "" {
		Expect(e.FaultCode).To(Equal("Client"))
	} else {
		Expect(e.Code).To(Equal(status))
	}
	Expect(e.Message()).NotTo(BeEmpty())
	return e
}

func getNode(ctx SpecContext, uuid string) map[string]any {
	GinkgoHelper()
	resp, err := harness.Do(ctx, http.MethodGet, apiURL+"/v1/nodes/"+uuid, nil, withLatest(nil))
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Status).To(Equal(http.StatusOK), "body: %s", resp.Body)
	var n map[string]any
	Expect(json.Unmarshal(resp.Body, &n)).To(Succeed())
	return n
}

func pick(m map[string]any, keys []string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}

func nodeCount(ctx SpecContext) int { return count(ctx, "/v1/nodes", "nodes") }
func portCount(ctx SpecContext) int { return count(ctx, "/v1/ports", "ports") }

func count(ctx SpecContext, path, key string) int {
	GinkgoHelper()
	resp, err := harness.Do(ctx, http.MethodGet, apiURL+path+"?limit=1000", nil, withLatest(nil))
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Status).To(Equal(http.StatusOK), "body: %s", resp.Body)
	var doc map[string][]json.RawMessage
	Expect(json.Unmarshal(resp.Body, &doc)).To(Succeed())
	return len(doc[key])
}
