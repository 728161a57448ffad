package distributed_test

import (
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
)

// gophercloud has no events package: these go through its raw client.
var _ = Describe("External events", func() {
	It("are taken from Neutron with 204, and refused with 400 when malformed", func(ctx SpecContext) {
		if !steps.AtLeast(client, 54) {
			Skip("the server predates events (1.54)")
		}
		event := func(port string) map[string]any {
			return map[string]any{"events": []any{map[string]any{"event": "network.bind_port", "port_id": port,
				"mac_address": "52:54:00:aa:bb:cc", "status": "ACTIVE", "binding:vnic_type": "baremetal"}}}
		}
		url := client.ServiceURL("events")
		_, err := client.Post(ctx, url, event("a1b2c3d4-e5f6-4711-8899-aabbccddeeff"), nil, &gophercloud.RequestOpts{OkCodes: []int{http.StatusNoContent}})
		Expect(err).NotTo(HaveOccurred())
		_, err = client.Post(ctx, url, event("not-a-uuid"), nil, &gophercloud.RequestOpts{OkCodes: []int{http.StatusNoContent}})
		Expect(gophercloud.ResponseCodeIs(err, http.StatusBadRequest)).To(BeTrue(), "a malformed event: %v", err)
	})
})
