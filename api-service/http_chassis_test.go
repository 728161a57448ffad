package apiservice_test

import (
	"context"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("chassis", func() {
	var e *env

	BeforeEach(func() { e = sqliteEnv(nil) })

	chassisCount := func() int {
		cs, err := e.store.ListChassis(context.Background(), dbAll, nil)
		Expect(err).NotTo(HaveOccurred())
		return len(cs)
	}
	createChassis := func(body string) string {
		r := e.call(http.MethodPost, "/v1/chassis", body)
		Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
		return r.json()["uuid"].(string)
	}

	It("is listed in the /v1 index at every version", func() {
		for _, v := range []string{"1.1", "latest"} {
			doc := e.at(v, http.MethodGet, "/v1", "").json()
			Expect(doc["chassis"]).To(ConsistOf(
				map[string]any{"href": e.url + "/v1/chassis/", "rel": "self"},
				map[string]any{"href": e.url + "/chassis/", "rel": "bookmark"}))
		}
	})

	It("creates a chassis at 1.1 with 201, Location and the full object", func() {
		r := e.call(http.MethodPost, "/v1/chassis", `{"description": "rack 12", "extra": {"row": "b"}}`)
		Expect(r.status).To(Equal(http.StatusCreated))
		c := r.json()
		id := c["uuid"].(string)
		Expect(r.header.Get("Location")).To(Equal(e.url + "/v1/chassis/" + id))
		Expect(c).To(HaveKeyWithValue("description", "rack 12"))
		Expect(c).To(HaveKeyWithValue("extra", map[string]any{"row": "b"}))
		Expect(c).To(HaveKeyWithValue("updated_at", BeNil()))
		Expect(c["created_at"]).To(MatchRegexp(`\+00:00$`))
		Expect(c["links"]).To(ConsistOf(
			map[string]any{"href": e.url + "/v1/chassis/" + id, "rel": "self"},
			map[string]any{"href": e.url + "/chassis/" + id, "rel": "bookmark"}))
		Expect(c["nodes"]).To(ContainElement(map[string]any{"href": e.url + "/v1/chassis/" + id + "/nodes", "rel": "self"}))
		Expect(c).To(HaveLen(7))

		given := createChassis(`{"uuid": "1BE26C0B-03F2-4D2E-AE87-C02D7F33C123"}`)
		Expect(given).To(Equal("1be26c0b-03f2-4d2e-ae87-c02d7f33c123"))
		dup := e.call(http.MethodPost, "/v1/chassis", `{"uuid": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"}`)
		Expect(dup.status).To(Equal(http.StatusConflict))
		Expect(dup.fault()["faultstring"]).To(Equal("A chassis with UUID 1be26c0b-03f2-4d2e-ae87-c02d7f33c123 already exists."))
		Expect(chassisCount()).To(Equal(2))
	})

	DescribeTable("rejects bad creates and stores nothing",
		func(body string, msg string) {
			r := e.call(http.MethodPost, "/v1/chassis", body)
			Expect(r.status).To(Equal(http.StatusBadRequest))
			Expect(r.fault()["faultstring"]).To(ContainSubstring(msg))
			Expect(chassisCount()).To(BeZero())
		},
		Entry("an unknown field", `{"description": "x", "name": "y"}`, "('name' was unexpected)"),
		Entry("a long description", `{"description": "`+strings.Repeat("d", 256)+`"}`, "'description' is too long"),
		Entry("a bad uuid", `{"uuid": "nope"}`, "Expected a UUID but received nope."),
		Entry("extra not an object", `{"extra": "x"}`, "is not of type 'object'"),
		Entry("not an object", `[]`, "must be a JSON object"),
	)

	It("shows one chassis, with fields from 1.8", func() {
		id := createChassis(`{"description": "d"}`)
		Expect(e.call(http.MethodGet, "/v1/chassis/"+id, "").json()).To(HaveKeyWithValue("description", "d"))
		Expect(e.call(http.MethodGet, "/chassis/"+strings.ToUpper(id), "").status).To(Equal(http.StatusOK))

		Expect(e.at("1.7", http.MethodGet, "/v1/chassis/"+id+"?fields=uuid", "").status).To(Equal(http.StatusNotAcceptable))
		sub := e.at("1.8", http.MethodGet, "/v1/chassis/"+id+"?fields=description", "").json()
		Expect(sub).To(HaveLen(2))
		Expect(sub).To(HaveKey("links"))
		Expect(e.at("1.8", http.MethodGet, "/v1/chassis/"+id+"?fields=name", "").status).To(Equal(http.StatusBadRequest))

		bad := e.call(http.MethodGet, "/v1/chassis/not-a-uuid", "")
		Expect(bad.status).To(Equal(http.StatusBadRequest))
		Expect(bad.fault()["faultstring"]).To(Equal("Expected a UUID but received not-a-uuid."))
		nf := e.call(http.MethodGet, "/v1/chassis/1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "")
		Expect(nf.status).To(Equal(http.StatusNotFound))
		Expect(nf.fault()["faultstring"]).To(Equal("Chassis 1be26c0b-03f2-4d2e-ae87-c02d7f33c123 could not be found."))
	})

	It("lists, pages and sorts", func() {
		for _, d := range []string{"b", "c", "a"} {
			createChassis(`{"description": "` + d + `"}`)
		}
		list := e.call(http.MethodGet, "/v1/chassis", "").json()["chassis"].([]any)
		Expect(list).To(HaveLen(3))
		Expect(list[0]).To(HaveLen(3), "uuid, description, links")
		Expect(e.call(http.MethodGet, "/v1/chassis/detail", "").json()["chassis"].([]any)[0]).To(HaveKey("extra"))

		page := e.call(http.MethodGet, "/v1/chassis?limit=2&sort_key=description&sort_dir=desc", "").json()
		items := page["chassis"].([]any)
		Expect(items).To(HaveLen(2))
		Expect(items[0]).To(HaveKeyWithValue("description", "c"))
		last := items[1].(map[string]any)["uuid"].(string)
		Expect(page["next"]).To(Equal(e.url + "/v1/chassis?sort_key=description&sort_dir=desc&fields=uuid,description&limit=2&marker=" + last))
		rest := e.call(http.MethodGet, "/v1/chassis?limit=2&sort_key=description&sort_dir=desc&marker="+last, "").json()
		Expect(rest["chassis"]).To(HaveLen(1))
		Expect(rest).NotTo(HaveKey("next"))

		for q, code := range map[string]int{
			"sort_key=extra": http.StatusBadRequest,
			"sort_key=bogus": http.StatusBadRequest,
			"driver=x":       http.StatusBadRequest,
			"detail=maybe":   http.StatusBadRequest,
			"limit=0":        http.StatusBadRequest,
			"marker=nope":    http.StatusBadRequest,
			"fields=nodes":   http.StatusBadRequest,
			"marker=1be26c0b-03f2-4d2e-ae87-c02d7f33c123": http.StatusNotFound,
		} {
			Expect(e.at("latest", http.MethodGet, "/v1/chassis?"+q, "").status).To(Equal(code), q)
		}
	})

	It("patches description and extra, and changes nothing on a failed patch", func() {
		id := createChassis(`{"description": "old", "extra": {"a": "1"}}`)
		r := e.call(http.MethodPatch, "/v1/chassis/"+id, `[{"op": "replace", "path": "/description", "value": "new"}, {"op": "add", "path": "/extra/b", "value": "2"}]`)
		Expect(r.status).To(Equal(http.StatusOK))
		Expect(r.json()).To(HaveKeyWithValue("description", "new"))
		Expect(r.json()).To(HaveKeyWithValue("extra", map[string]any{"a": "1", "b": "2"}))
		Expect(r.json()["updated_at"]).NotTo(BeNil())

		for _, patch := range []string{
			`[{"op": "replace", "path": "/uuid", "value": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"}]`,
			`[{"op": "replace", "path": "/description", "value": "x"}, {"op": "remove", "path": "/extra/nope"}]`,
			`[{"op": "replace", "path": "/description", "value": "` + strings.Repeat("d", 256) + `"}]`,
			`[{"op": "replace", "path": "/extra", "value": "flat"}]`,
			`{"op": "replace"}`,
		} {
			Expect(e.call(http.MethodPatch, "/v1/chassis/"+id, patch).status).To(Equal(http.StatusBadRequest), patch)
		}
		stored, err := e.store.GetChassis(context.Background(), id)
		Expect(err).NotTo(HaveOccurred())
		Expect(*stored.Description).To(Equal("new"))
		Expect(stored.Extra).To(HaveLen(2))

		r = e.call(http.MethodPatch, "/v1/chassis/"+id, `[{"op": "remove", "path": "/description"}]`)
		Expect(r.json()).To(HaveKeyWithValue("description", BeNil()))
	})

	It("holds nodes: validates chassis_uuid, lists them, and refuses deletion while not empty", func() {
		id := createChassis(`{}`)
		node := e.createNode(`, "name": "in-rack", "chassis_uuid": "` + strings.ToUpper(id) + `"`)
		Expect(e.at("latest", http.MethodGet, "/v1/nodes/"+node, "").json()).To(HaveKeyWithValue("chassis_uuid", id))
		e.createNode(`, "name": "loose"`)

		nodes := e.at("latest", http.MethodGet, "/v1/chassis/"+id+"/nodes", "").json()["nodes"].([]any)
		Expect(nodes).To(HaveLen(1))
		Expect(nodes[0]).To(HaveKeyWithValue("uuid", node))
		detail := e.at("latest", http.MethodGet, "/v1/chassis/"+id+"/nodes/detail", "").json()["nodes"].([]any)
		Expect(detail[0]).To(HaveKeyWithValue("chassis_uuid", id))
		page := e.at("latest", http.MethodGet, "/v1/chassis/"+id+"/nodes?limit=1", "").json()
		Expect(page["next"]).To(HavePrefix(e.url + "/v1/chassis/" + id + "/nodes?"))
		Expect(e.at("latest", http.MethodGet, "/v1/nodes?chassis_uuid="+id, "").json()["nodes"]).To(HaveLen(1))
		Expect(e.at("latest", http.MethodGet, "/v1/chassis/"+id+"/nodes?chassis_uuid="+id, "").status).To(Equal(http.StatusBadRequest))
		Expect(e.at("latest", http.MethodGet, "/v1/chassis/1be26c0b-03f2-4d2e-ae87-c02d7f33c123/nodes", "").status).To(Equal(http.StatusNotFound))
		Expect(e.at("latest", http.MethodPost, "/v1/chassis/"+id+"/nodes", `{"driver": "fake-hardware"}`).status).To(Equal(http.StatusBadRequest))
		Expect(e.at("latest", http.MethodGet, "/v1/chassis/"+id+"/nodes/"+node, "").status).To(Equal(http.StatusBadRequest))

		r := e.call(http.MethodDelete, "/v1/chassis/"+id, "")
		Expect(r.status).To(Equal(http.StatusBadRequest))
		Expect(r.fault()["faultstring"]).To(Equal("Cannot complete the requested action because chassis " + id + " contains nodes."))
		Expect(chassisCount()).To(Equal(1))

		unknown := e.at("latest", http.MethodPatch, "/v1/nodes/"+node, `[{"op": "replace", "path": "/chassis_uuid", "value": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"}]`)
		Expect(unknown.status).To(Equal(http.StatusBadRequest))
		Expect(unknown.fault()["faultstring"]).To(Equal("Chassis 1be26c0b-03f2-4d2e-ae87-c02d7f33c123 could not be found."))
		Expect(e.at("latest", http.MethodGet, "/v1/nodes/"+node, "").json()).To(HaveKeyWithValue("chassis_uuid", id))

		Expect(e.at("1.24", http.MethodPatch, "/v1/nodes/"+node, `[{"op": "remove", "path": "/chassis_uuid"}]`).status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("latest", http.MethodGet, "/v1/nodes/"+node, "").json()).To(HaveKeyWithValue("chassis_uuid", id))
		removed := e.at("1.25", http.MethodPatch, "/v1/nodes/"+node, `[{"op": "remove", "path": "/chassis_uuid"}]`)
		Expect(removed.status).To(Equal(http.StatusOK), string(removed.raw))
		Expect(removed.json()).To(HaveKeyWithValue("chassis_uuid", BeNil()))

		other := createChassis(`{}`)
		moved := e.at("1.1", http.MethodPatch, "/v1/nodes/"+node, `[{"op": "add", "path": "/chassis_uuid", "value": "`+other+`"}]`)
		Expect(moved.status).To(Equal(http.StatusOK), string(moved.raw))
		Expect(moved.json()).To(HaveKeyWithValue("chassis_uuid", other))

		Expect(e.call(http.MethodDelete, "/v1/chassis/"+id, "").status).To(Equal(http.StatusNoContent))
		Expect(e.call(http.MethodGet, "/v1/chassis/"+id, "").status).To(Equal(http.StatusNotFound))
		Expect(e.call(http.MethodDelete, "/v1/chassis/"+id, "").status).To(Equal(http.StatusNotFound))
	})
})
