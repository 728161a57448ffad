package apiservice_test

import (
	"context"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/states"
)

var _ = Describe("allocations (1.52)", func() {
	var e *env
	BeforeEach(func() { e = sqliteEnv(nil) })

	// allocatable is an available, powered node of resource class gold.
	allocatable := func(extra string) string {
		uuid := e.createNode(`, "resource_class": "gold"` + extra)
		n := e.node(uuid)
		n.SetState(states.Available, "")
		n.PowerState = ptrTo("power off")
		Expect(e.store.SaveNode(context.Background(), n)).To(Succeed())
		return uuid
	}
	create := func(body string) map[string]any {
		r := e.at("1.52", http.MethodPost, "/v1/allocations", body)
		Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
		Expect(r.header.Get("Location")).To(Equal(e.url + "/v1/allocations/" + r.json()["uuid"].(string)))
		return r.json()
	}
	settled := func(ident string) map[string]any {
		var a map[string]any
		Eventually(func() any {
			a = e.at("1.52", http.MethodGet, "/v1/allocations/"+ident, "").json()
			return a["state"]
		}).ShouldNot(Equal("allocating"))
		return a
	}
	allocationCount := func() int {
		return len(e.at("1.52", http.MethodGet, "/v1/allocations", "").json()["allocations"].([]any))
	}

	It("reserves a node, which shows the allocation, and releases it on delete", func() {
		node := allocatable(`, "name": "host-1"`)
		a := create(`{"resource_class": "gold", "name": "web-1", "candidate_nodes": ["host-1"], "extra": {"k": "v"}}`)
		Expect(a).To(HaveKeyWithValue("state", "allocating"))
		Expect(a).To(HaveKeyWithValue("candidate_nodes", []any{node}), "names become UUIDs")
		Expect(a).To(HaveKeyWithValue("traits", []any{}))
		Expect(a).To(HaveKeyWithValue("links", ContainElement(HaveKeyWithValue("href", e.url+"/v1/allocations/"+a["uuid"].(string)))))

		got := settled("web-1")
		Expect(got).To(HaveKeyWithValue("state", "active"))
		Expect(got).To(HaveKeyWithValue("node_uuid", node))
		Expect(got).To(HaveKeyWithValue("last_error", BeNil()))
		Expect(got).To(HaveKeyWithValue("extra", map[string]any{"k": "v"}))
		Expect(e.at("1.52", http.MethodGet, "/v1/nodes/host-1/allocation", "").json()).To(HaveKeyWithValue("uuid", a["uuid"]))
		Expect(e.at("1.52", http.MethodGet, "/v1/allocations?node=host-1&fields=uuid,node_uuid", "").json()).To(Equal(map[string]any{
			"allocations": []any{map[string]any{"uuid": a["uuid"], "node_uuid": node,
				"links": []any{map[string]any{"href": e.url + "/v1/allocations/" + a["uuid"].(string), "rel": "self"},
					map[string]any{"href": e.url + "/allocations/" + a["uuid"].(string), "rel": "bookmark"}}}}}))

		n := e.at("1.52", http.MethodGet, "/v1/nodes/"+node, "").json()
		Expect(n).To(HaveKeyWithValue("allocation_uuid", a["uuid"]))
		Expect(n).To(HaveKeyWithValue("instance_uuid", a["uuid"]))
		Expect(e.at("1.51", http.MethodGet, "/v1/nodes/"+node, "").json()).NotTo(HaveKey("allocation_uuid"))

		Expect(e.at("1.52", http.MethodDelete, "/v1/nodes/host-1/allocation", "").status).To(Equal(http.StatusNoContent))
		n = e.at("1.52", http.MethodGet, "/v1/nodes/"+node, "").json()
		Expect(n).To(HaveKeyWithValue("allocation_uuid", BeNil()))
		Expect(n).To(HaveKeyWithValue("instance_uuid", BeNil()))
		Expect(e.at("1.52", http.MethodGet, "/v1/allocations/web-1", "").status).To(Equal(http.StatusNotFound))
		Expect(e.at("1.52", http.MethodGet, "/v1/nodes/host-1/allocation", "").status).To(Equal(http.StatusNotFound))
	})

	It("records why an allocation failed, and deletes a failed one", func() {
		allocatable("")
		a := create(`{"resource_class": "silver"}`)
		got := settled(a["uuid"].(string))
		Expect(got).To(HaveKeyWithValue("state", "error"))
		Expect(got).To(HaveKeyWithValue("node_uuid", BeNil()))
		Expect(got["last_error"]).To(ContainSubstring("no available nodes match the resource class silver"))
		Expect(e.at("1.52", http.MethodGet, "/v1/allocations?state=error", "").uuids("allocations")).To(ConsistOf(a["uuid"]))
		Expect(e.at("1.52", http.MethodGet, "/v1/allocations?resource_class=gold", "").uuids("allocations")).To(BeEmpty())
		Expect(e.at("1.52", http.MethodDelete, "/v1/allocations/"+a["uuid"].(string), "").status).To(Equal(http.StatusNoContent))
		Expect(allocationCount()).To(BeZero())
	})

	DescribeTable("refuses a bad request and stores nothing",
		func(method, path, body string, status int, message string) {
			allocatable(`, "name": "host-1"`)
			create(`{"resource_class": "gold", "name": "taken"}`)
			before := allocationCount()
			r := e.at("1.52", method, path, body)
			Expect(r.status).To(Equal(status), string(r.raw))
			Expect(r.fault()["faultstring"]).To(ContainSubstring(message))
			Expect(allocationCount()).To(Equal(before))
		},
		Entry("no resource class", http.MethodPost, "/v1/allocations", `{"name": "x"}`,
			http.StatusBadRequest, "The resource_class field is mandatory"),
		Entry("an invalid name", http.MethodPost, "/v1/allocations", `{"resource_class": "gold", "name": "no spaces"}`,
			http.StatusBadRequest, "Cannot create allocation with invalid name 'no spaces'"),
		Entry("an invalid trait", http.MethodPost, "/v1/allocations", `{"resource_class": "gold", "traits": ["lower"]}`,
			http.StatusBadRequest, "Invalid trait"),
		Entry("an unknown candidate", http.MethodPost, "/v1/allocations", `{"resource_class": "gold", "candidate_nodes": ["nope"]}`,
			http.StatusBadRequest, "Node nope could not be found"),
		Entry("a field it cannot set", http.MethodPost, "/v1/allocations", `{"resource_class": "gold", "state": "active"}`,
			http.StatusBadRequest, "state"),
		Entry("a name in use", http.MethodPost, "/v1/allocations", `{"resource_class": "gold", "name": "taken"}`,
			http.StatusConflict, "An allocation with name taken already exists."),
		Entry("an unknown node filter", http.MethodGet, "/v1/allocations?node=nope", "",
			http.StatusBadRequest, "Node nope could not be found"),
		Entry("?detail, which allocations do not have", http.MethodGet, "/v1/allocations?detail=true", "",
			http.StatusBadRequest, "detail"),
		Entry("a list sort key", http.MethodGet, "/v1/allocations?sort_key=traits", "",
			http.StatusBadRequest, "The sort_key value traits is an invalid field for sorting"),
		Entry("an unknown field", http.MethodGet, "/v1/allocations/taken?fields=owner", "",
			http.StatusBadRequest, "owner"),
	)
})
