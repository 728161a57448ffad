package cli_test

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/client/fakeironic"
)

// nodeIn is node-07 in state, moving to target ("" when at rest), with
// driver_internal_info info.
func nodeIn(state, target, info, lastError string) fakeironic.Response {
	t := "null"
	if target != "" {
		t = `"` + target + `"`
	}
	return fakeironic.Response{Status: http.StatusOK, Body: `{"uuid": "` + node1 + `", "name": "node-07", "provision_state": "` + state +
		`", "target_provision_state": ` + t + `, "last_error": ` + lastError + `, "driver_internal_info": {` + info + `}}`}
}

var _ = Describe("--wait on provisioning commands", func() {
	var fake *fakeironic.Server
	BeforeEach(func() {
		fake = startFake("1.52")
		fake.Handle("PUT", "/v1/nodes/node-07/states/provision", fakeironic.Response{Status: http.StatusAccepted})
	})

	It("follows a deploy to active, showing the bytes written", func(ctx SpecContext) {
		fake.Handle("GET", "/v1/nodes/node-07", nodeIn("deploying", "active",
			`"deploy_progress": {"bytes_done": 536870912, "bytes_total": 1073741824, "bytes_per_second": 1000}`, "null"))
		fake.Handle("GET", "/v1/nodes/node-07", nodeIn("active", "", "", "null"))
		r := ferricctl(ctx, fake, nil, "node", "deploy", "node-07", "--wait")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stderr).To(Equal("deploying [##########..........]  50% image written (512 of 1024 MiB)\nactive\n"))
		Expect(apiRequests(fake)[0].Body).To(MatchJSON(`{"target": "active"}`))
	})

	It("fails with the node's last error when the work ends elsewhere", func(ctx SpecContext) {
		fake.Handle("GET", "/v1/nodes/node-07", nodeIn("clean failed", "", "", `"Erase of /dev/sda failed"`))
		r := ferricctl(ctx, fake, nil, "node", "provide", "node-07", "--wait=60")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(Equal("clean failed\nError: node node-07 ended in clean failed, not available: Erase of /dev/sda failed\n"))
	})

	It("gives up after --wait=N seconds, and returns at once without --wait", func(ctx SpecContext) {
		fake.Handle("GET", "/v1/nodes/node-07", nodeIn("cleaning", "available", "", "null"))
		r := ferricctl(ctx, fake, nil, "node", "provide", "node-07", "--wait=1")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(Equal("cleaning\nError: node node-07 is still busy after 1s\n"))

		expectOK(ferricctl(ctx, fake, nil, "node", "manage", "node-07"))
		Expect(apiRequests(fake)[len(apiRequests(fake))-1].Method).To(Equal("PUT"))
	})
})
