package cli_test

import (
	"net/http"
	"net/url"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/client/fakeironic"
)

const (
	allocA = "5e1d2c3b-4a59-4687-9c0d-e1f203a4b5c6"
	allocB = "6f2e3d4c-5b6a-4798-8d1e-f20314b5c6d7"
)

// allocationJSON is an allocation in state, with a non-string extra value
// (gophercloud's own type cannot decode those).
func allocationJSON(uuid, state, node, lastError string) string {
	return `{"uuid": "` + uuid + `", "name": "web-1", "resource_class": "gold", "state": "` + state + `",
		"node_uuid": ` + node + `, "last_error": ` + lastError + `, "traits": ["CUSTOM_GPU"], "candidate_nodes": [],
		"extra": {"rack": 4}, "created_at": "2026-05-01T10:20:00+00:00", "updated_at": null,
		"links": [{"href": "{url}/v1/allocations/` + uuid + `", "rel": "self"}]}`
}

var _ = Describe("allocation commands", func() {
	var fake *fakeironic.Server
	BeforeEach(func() {
		fake = startFake("1.52")
	})

	It("create sends the request and shows the allocation, still allocating", func(ctx SpecContext) {
		fake.Handle("POST", "/v1/allocations", fakeironic.Response{Status: http.StatusCreated, Body: allocationJSON(allocA, "allocating", "null", "null")})
		r := ferricctl(ctx, fake, nil, "-f", "json", "allocation", "create", "--resource-class", "gold", "--trait", "CUSTOM_GPU",
			"--candidate-node", "host-1", "--candidate-node", "host-2", "--name", "web-1", "--extra", "rack=4", "--uuid", allocA)
		expectOK(r)
		req := apiRequests(fake)[0]
		Expect(req.Header.Get("X-OpenStack-Ironic-API-Version")).To(Equal("1.52"))
		Expect(req.Body).To(MatchJSON(`{"resource_class": "gold", "traits": ["CUSTOM_GPU"], "candidate_nodes": ["host-1", "host-2"],
			"name": "web-1", "extra": {"rack": 4}, "uuid": "` + allocA + `"}`))
		Expect(r.stdout).To(MatchJSON(`{"candidate_nodes": [], "created_at": "2026-05-01T10:20:00+00:00", "extra": {"rack": 4},
			"last_error": null, "name": "web-1", "node_uuid": null, "resource_class": "gold", "state": "allocating",
			"traits": ["CUSTOM_GPU"], "updated_at": null, "uuid": "` + allocA + `"}`))
	})

	It("create --wait shows the allocation once active, and fails with the reason when it failed", func(ctx SpecContext) {
		fake.Handle("POST", "/v1/allocations", fakeironic.Response{Status: http.StatusCreated, Body: allocationJSON(allocA, "allocating", "null", "null")})
		fake.Handle("GET", "/v1/allocations/"+allocA, fakeironic.Response{Status: http.StatusOK, Body: allocationJSON(allocA, "active", `"`+nodeUUID+`"`, "null")})
		r := ferricctl(ctx, fake, nil, "-f", "value", "-c", "state", "-c", "node_uuid", "allocation", "create", "--resource-class", "gold", "--wait")
		expectOK(r)
		Expect(r.stdout).To(Equal("active\n" + nodeUUID + "\n"))

		fake.Handle("GET", "/v1/allocations/"+allocA, fakeironic.Response{Status: http.StatusOK,
			Body: allocationJSON(allocA, "error", "null", `"Failed to process allocation `+allocA+`: no available nodes match the resource class gold."`)})
		r = ferricctl(ctx, fake, nil, "allocation", "create", "--resource-class", "gold", "--wait=30")
		Expect(r.code).To(Equal(1))
		Expect(r.stdout).To(BeEmpty())
		Expect(r.stderr).To(Equal("Error: allocation " + allocA + " failed: Failed to process allocation " + allocA +
			": no available nodes match the resource class gold.\n"))
	})

	It("create needs a resource class, sending nothing", func(ctx SpecContext) {
		r := ferricctl(ctx, fake, nil, "allocation", "create", "--name", "web-1")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring(`"resource-class" not set`))
		Expect(fake.Requests()).To(BeEmpty())
	})

	It("list passes its filters and follows the server's next link", func(ctx SpecContext) {
		// The fake answers every page alike; the second ask proves the
		// next link was followed, with the filters kept.
		fake.Handle("GET", "/v1/allocations", fakeironic.Response{Status: http.StatusOK, Body: `{"allocations": [` +
			allocationJSON(allocA, "active", `"`+nodeUUID+`"`, "null") + `, ` + allocationJSON(allocB, "active", "null", "null") + `],
			"next": "{url}/v1/allocations?limit=2&marker=` + allocB + `"}`})
		r := ferricctl(ctx, fake, nil, "-f", "value", "allocation", "list", "--resource-class", "gold", "--state", "active",
			"--node", "host-1", "--limit", "3")
		expectOK(r)
		Expect(r.stdout).To(Equal(allocA + " web-1 gold active " + nodeUUID + "\n" + allocB + " web-1 gold active None\n" +
			allocA + " web-1 gold active " + nodeUUID + "\n"))
		reqs := apiRequests(fake)
		Expect(reqs).To(HaveLen(2))
		filters := url.Values{"resource_class": {"gold"}, "state": {"active"}, "node": {"host-1"}, "limit": {"3"}}
		Expect(reqs[0].Query).To(Equal(filters))
		filters.Set("marker", allocB)
		Expect(reqs[1].Query).To(Equal(filters))
	})

	It("show and delete take names or UUIDs", func(ctx SpecContext) {
		fake.Handle("GET", "/v1/allocations/web-1", fakeironic.Response{Status: http.StatusOK, Body: allocationJSON(allocA, "active", `"`+nodeUUID+`"`, "null")})
		r := ferricctl(ctx, fake, nil, "-f", "value", "allocation", "show", "web-1", "--fields", "uuid,extra")
		expectOK(r)
		Expect(r.stdout).To(Equal(`{"rack":4}` + "\n" + allocA + "\n"))

		fake.Handle("DELETE", "/v1/allocations/web-1", fakeironic.Response{Status: http.StatusNoContent})
		fake.Handle("DELETE", "/v1/allocations/web-2", fault(http.StatusNotFound, "Allocation web-2 could not be found."))
		r = ferricctl(ctx, fake, nil, "allocation", "delete", "web-1", "web-2")
		Expect(r.code).To(Equal(1))
		Expect(r.stdout).To(Equal("Deleted allocation web-1\n"))
		Expect(r.stderr).To(Equal("Failed to delete allocation web-2: Allocation web-2 could not be found. (HTTP 404)\n" +
			"Error: failed to delete 1 of 2 allocations\n"))
	})

	It("refuses a version before allocations, sending nothing", func(ctx SpecContext) {
		r := ferricctl(ctx, fake, nil, "--os-baremetal-api-version", "1.51", "allocation", "list")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(Equal("Error: this command needs Bare Metal API version 1.52 or later; using 1.51\n"))
		Expect(fake.Requests()).To(BeEmpty())
	})
})
