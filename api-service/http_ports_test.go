package apiservice_test

import (
	"context"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/db"
)

var _ = Describe("ports", func() {
	var (
		e    *env
		node string
	)

	BeforeEach(func() {
		e, node = sqliteEnvWithNode(`, "name": "host-1"`)
	})

	portCount := func() int {
		ps, err := e.store.ListPorts(context.Background(), db.PortFilter{}, db.Page{}, nil)
		Expect(err).NotTo(HaveOccurred())
		return len(ps)
	}
	createPort := func(mac string) string {
		r := e.at("latest", http.MethodPost, "/v1/ports", `{"address": "`+mac+`", "node_uuid": "`+node+`"}`)
		Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
		return r.json()["uuid"].(string)
	}

	It("creates a port with a normalised MAC, 201 and Location", func() {
		r := e.at("latest", http.MethodPost, "/v1/ports", `{"address": "AA-BB-CC-00-11-22", "node_uuid": "`+node+`", "extra": {"slot": 1}}`)
		Expect(r.status).To(Equal(http.StatusCreated))
		p := r.json()
		Expect(p).To(HaveKeyWithValue("address", "aa:bb:cc:00:11:22"))
		Expect(p).To(HaveKeyWithValue("node_uuid", node))
		Expect(r.header.Get("Location")).To(Equal(e.url + "/v1/ports/" + p["uuid"].(string)))
		Expect(p["links"]).To(HaveLen(2))
	})

	DescribeTable("rejects bad creates and stores nothing",
		func(body string, code int, msg string) {
			r := e.at("latest", http.MethodPost, "/v1/ports", strings.ReplaceAll(body, "NODE", node))
			Expect(r.status).To(Equal(code))
			Expect(r.fault()["faultstring"]).To(ContainSubstring(msg))
			Expect(portCount()).To(BeZero())
		},
		Entry("invalid JSON", `{"address": `, 400, "Invalid JSON"),
		Entry("a bad MAC", `{"address": "nope", "node_uuid": "NODE"}`, 400, "Expected a MAC address but received nope."),
		Entry("an unknown node", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"}`, 400, "Node 1be26c0b-03f2-4d2e-ae87-c02d7f33c123 could not be found."),
		Entry("a malformed node UUID", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "host-1"}`, 400, "Expected a UUID"),
		Entry("an unknown field", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "NODE", "Extra": {}}`, 400, "('Extra' was unexpected)"),
		Entry("a wrong type", `{"address": 12, "node_uuid": "NODE"}`, 400, "is not of type 'string'"),
	)

	It("refuses a duplicate MAC with 409", func() {
		createPort("aa:bb:cc:dd:ee:01")
		r := e.at("latest", http.MethodPost, "/v1/ports", `{"address": "AA:BB:CC:DD:EE:01", "node_uuid": "`+node+`"}`)
		Expect(r.status).To(Equal(http.StatusConflict))
		Expect(r.fault()["faultstring"]).To(Equal("A port with MAC address aa:bb:cc:dd:ee:01 already exists."))
	})

	It("lists, filters and scopes by node", func() {
		createPort("aa:bb:cc:dd:ee:01")
		createPort("aa:bb:cc:dd:ee:02")
		other := e.createNode("")
		Expect(e.at("latest", http.MethodPost, "/v1/ports", `{"address": "aa:bb:cc:dd:ee:03", "node_uuid": "`+other+`"}`).status).To(Equal(http.StatusCreated))

		all := e.at("latest", http.MethodGet, "/v1/ports", "").json()["ports"].([]any)
		Expect(all).To(HaveLen(3))
		Expect(all[0]).To(HaveLen(3), "uuid, address, links")
		Expect(e.at("latest", http.MethodGet, "/v1/ports?node=host-1", "").json()["ports"]).To(HaveLen(2))
		Expect(e.at("latest", http.MethodGet, "/v1/ports?node_uuid="+other, "").json()["ports"]).To(HaveLen(1))
		byMAC := e.at("latest", http.MethodGet, "/v1/ports?address=AA:BB:CC:DD:EE:02", "").json()["ports"].([]any)
		Expect(byMAC).To(HaveLen(1))
		Expect(byMAC[0]).To(HaveKeyWithValue("address", "aa:bb:cc:dd:ee:02"))
		Expect(e.at("latest", http.MethodGet, "/v1/nodes/host-1/ports", "").json()["ports"]).To(HaveLen(2))
		detail := e.at("latest", http.MethodGet, "/v1/nodes/"+node+"/ports/detail", "").json()["ports"].([]any)
		Expect(detail[0]).To(HaveKeyWithValue("node_uuid", node))
		Expect(e.at("latest", http.MethodGet, "/v1/ports/detail", "").json()["ports"]).To(HaveLen(3))

		page := e.at("latest", http.MethodGet, "/v1/ports?limit=1&node=host-1", "").json()
		Expect(page["next"]).To(HavePrefix(e.url + "/v1/ports?sort_key=id&sort_dir=asc&node=host-1&fields=uuid,address&limit=1&marker="))

		Expect(e.at("latest", http.MethodGet, "/v1/ports?node=ghost", "").status).To(Equal(http.StatusNotFound))
		Expect(e.at("latest", http.MethodGet, "/v1/ports?address=zz", "").status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.23", http.MethodGet, "/v1/ports?portgroup=x", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("latest", http.MethodGet, "/v1/ports?portgroup=x", "").status).To(Equal(http.StatusNotFound))
		Expect(e.at("latest", http.MethodGet, "/v1/ports?sort_key=extra", "").status).To(Equal(http.StatusBadRequest))
	})

	It("moves a port to another node", func() {
		p := createPort("aa:bb:cc:dd:ee:01")
		other := e.createNode("")
		r := e.at("latest", http.MethodPatch, "/v1/ports/"+p, `[{"op": "replace", "path": "/node_uuid", "value": "`+other+`"}]`)
		Expect(r.status).To(Equal(http.StatusOK))
		Expect(r.json()).To(HaveKeyWithValue("node_uuid", other))
		Expect(e.at("latest", http.MethodGet, "/v1/nodes/"+other+"/ports", "").json()["ports"]).To(HaveLen(1))
		Expect(e.at("latest", http.MethodGet, "/v1/nodes/"+node+"/ports", "").json()["ports"]).To(BeEmpty())
	})

	It("answers 400 Malformed request URI for writes under a node", func() {
		p := createPort("aa:bb:cc:dd:ee:01")
		for _, c := range []struct{ method, path string }{
			{http.MethodPost, "/v1/nodes/" + node + "/ports"},
			{http.MethodPatch, "/v1/nodes/" + node + "/ports/" + p},
			{http.MethodDelete, "/v1/nodes/" + node + "/ports/" + p},
			{http.MethodGet, "/v1/nodes/" + node + "/ports/" + p},
		} {
			r := e.at("latest", c.method, c.path, `[]`)
			Expect(r.status).To(Equal(http.StatusBadRequest), c.method+" "+c.path)
			Expect(r.fault()["faultstring"]).To(Equal("Malformed request URI."))
		}
		Expect(portCount()).To(Equal(1))
	})

	It("shows, patches through the conductor and deletes", func() {
		p := createPort("aa:bb:cc:dd:ee:01")
		Expect(e.at("latest", http.MethodGet, "/v1/ports/"+p, "").json()).To(HaveKeyWithValue("address", "aa:bb:cc:dd:ee:01"))
		Expect(e.at("latest", http.MethodGet, "/v1/ports/"+p+"?fields=address", "").json()).To(HaveLen(2))
		Expect(e.at("latest", http.MethodGet, "/v1/ports/not-a-uuid", "").status).To(Equal(http.StatusBadRequest))

		r := e.at("latest", http.MethodPatch, "/v1/ports/"+p, `[{"op": "replace", "path": "/address", "value": "AA:BB:CC:DD:EE:09", "x": 1}]`)
		Expect(r.status).To(Equal(http.StatusBadRequest))
		r = e.at("latest", http.MethodPatch, "/v1/ports/"+p, `[{"op": "replace", "path": "/address", "value": "AA:BB:CC:DD:EE:09"}, {"op": "add", "path": "/extra/a", "value": "b"}]`)
		Expect(r.status).To(Equal(http.StatusOK))
		Expect(r.json()).To(HaveKeyWithValue("address", "aa:bb:cc:dd:ee:09"))
		stored, err := e.store.GetPort(context.Background(), p)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.Address).To(Equal("aa:bb:cc:dd:ee:09"))
		Expect(stored.Extra).To(HaveKeyWithValue("a", "b"))

		r = e.at("latest", http.MethodPatch, "/v1/ports/"+p, `[{"op": "replace", "path": "/node_uuid", "value": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"}]`)
		Expect(r.status).To(Equal(http.StatusBadRequest))
		r = e.at("latest", http.MethodPatch, "/v1/ports/"+p, `[{"op": "remove", "path": "/address"}]`)
		Expect(r.status).To(Equal(http.StatusBadRequest))
		stored, err = e.store.GetPort(context.Background(), p)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.Address).To(Equal("aa:bb:cc:dd:ee:09"))

		Expect(e.at("latest", http.MethodDelete, "/v1/ports/"+p, "").status).To(Equal(http.StatusNoContent))
		Expect(e.at("latest", http.MethodGet, "/v1/ports/"+p, "").status).To(Equal(http.StatusNotFound))
	})
})

var _ = Describe("drivers", func() {
	var e *env

	BeforeEach(func() { e = sqliteEnv(nil) })

	It("lists the hardware types live conductors serve", func() {
		r := e.call(http.MethodGet, "/v1/drivers", "")
		Expect(r.status).To(Equal(http.StatusOK))
		Expect(r.json()["drivers"]).To(ConsistOf(map[string]any{
			"name":  "fake-hardware",
			"hosts": []any{e.cfg.Default.Host},
			"links": []any{
				map[string]any{"href": e.url + "/v1/drivers/fake-hardware", "rel": "self"},
				map[string]any{"href": e.url + "/drivers/fake-hardware", "rel": "bookmark"},
			},
		}))
		Expect(e.call(http.MethodGet, "/v1/drivers/fake-hardware", "").json()).To(HaveKeyWithValue("name", "fake-hardware"))
		nf := e.call(http.MethodGet, "/v1/drivers/ipmi", "")
		Expect(nf.status).To(Equal(http.StatusNotFound))
		Expect(nf.fault()["faultstring"]).To(Equal("Could not find the following driver(s) or hardware type(s): ipmi."))
		Expect(e.at("1.29", http.MethodGet, "/v1/drivers?detail=true", "").status).To(Equal(http.StatusNotAcceptable))
	})
})
