package apiservice_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/states"
)

// Updates that race each other through the whole stack, on MySQL: each
// must change only what it names, on the row the conductor read under the
// node lock, whatever the API read before.
var _ = Describe("concurrent updates", func() {
	var e *env
	BeforeEach(func() { e = mysqlEnv() })

	// retried sends a request again while it is refused with 409 (the node
	// is locked), as the message asks a client to.
	retried := func(method, path, body string) response {
		for {
			r := e.at("latest", method, path, body)
			if r.status != http.StatusConflict {
				return r
			}
		}
	}

	It("keeps every PATCHed extra key while maintenance is set and cleared, and the maintenance last set", func() {
		uuid := e.createNode("")
		const writers, rounds = 10, 5
		var wg sync.WaitGroup
		codes := make([][rounds]int, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for r := range rounds {
					codes[w][r] = retried(http.MethodPatch, "/v1/nodes/"+uuid,
						fmt.Sprintf(`[{"op": "add", "path": "/extra/w%d-%d", "value": %d}]`, w, r, r)).status
				}
			}()
		}
		for i := range 2 * writers {
			if i%2 == 0 {
				Expect(retried(http.MethodPut, "/v1/nodes/"+uuid+"/maintenance", fmt.Sprintf(`{"reason": "swap %d"}`, i)).status).
					To(Equal(http.StatusAccepted))
			} else {
				Expect(retried(http.MethodDelete, "/v1/nodes/"+uuid+"/maintenance", "").status).To(Equal(http.StatusAccepted))
			}
		}
		Expect(retried(http.MethodPut, "/v1/nodes/"+uuid+"/maintenance", `{"reason": "last"}`).status).To(Equal(http.StatusAccepted))
		wg.Wait()

		n := e.node(uuid)
		Expect(n.Extra).To(HaveLen(writers * rounds))
		for w := range writers {
			for r := range rounds {
				Expect(codes[w][r]).To(Equal(http.StatusOK))
				Expect(n.Extra).To(HaveKeyWithValue(fmt.Sprintf("w%d-%d", w, r), BeNumerically("==", r)))
			}
		}
		Expect(n.Maintenance).To(BeTrue())
		Expect(n.MaintenanceReason).To(HaveValue(Equal("last")))
		Expect(n.Reservation).To(BeNil())
	})

	It("keeps the VIF attached to a port while the port's extra is PATCHed", func() {
		uuid := e.createNode(`, "network_interface": "flat"`)
		const count, rounds = 8, 5
		ports := make([]string, count)
		for i := range ports {
			r := e.at("latest", http.MethodPost, "/v1/ports",
				fmt.Sprintf(`{"address": "52:54:00:aa:00:%02x", "node_uuid": "%s"}`, i, uuid))
			Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
			ports[i] = r.json()["uuid"].(string)
		}
		var wg sync.WaitGroup
		for i, port := range ports {
			wg.Add(2)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				Expect(retried(http.MethodPost, "/v1/nodes/"+uuid+"/vifs", fmt.Sprintf(`{"id": "vif-%d"}`, i)).status).
					To(Equal(http.StatusNoContent))
			}()
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for r := range rounds {
					Expect(retried(http.MethodPatch, "/v1/ports/"+port,
						fmt.Sprintf(`[{"op": "add", "path": "/extra/r%d", "value": %d}]`, r, r)).status).To(Equal(http.StatusOK))
				}
			}()
		}
		wg.Wait()

		vifs := e.at("latest", http.MethodGet, "/v1/nodes/"+uuid+"/vifs", "").json()["vifs"]
		Expect(vifs).To(HaveLen(count))
		for _, port := range ports {
			p := e.at("latest", http.MethodGet, "/v1/ports/"+port, "").json()
			Expect(p["extra"]).To(HaveLen(rounds))
			Expect(p["internal_info"]).To(HaveKeyWithValue("tenant_vif_port_id", HavePrefix("vif-")))
		}
	})

	// A volume record changes only while its node is powered off.
	DescribeTable("keeps every key of 20 concurrent PATCHes of one object's extra",
		func(path, body string) {
			node := e.createNode("")
			e.setPower(node, states.PowerOff)
			r := e.at("latest", http.MethodPost, path, strings.ReplaceAll(body, "NODE", node))
			Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
			path += "/" + r.json()["uuid"].(string)
			const writers = 20
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					r := retried(http.MethodPatch, path, fmt.Sprintf(`[{"op": "add", "path": "/extra/w%d", "value": %d}]`, w, w))
					Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
				}()
			}
			wg.Wait()
			extra := e.at("latest", http.MethodGet, path, "").json()["extra"]
			Expect(extra).To(HaveLen(writers))
			for w := range writers {
				Expect(extra).To(HaveKeyWithValue(fmt.Sprintf("w%d", w), BeNumerically("==", w)))
			}
		},
		Entry("port group", "/v1/portgroups", `{"node_uuid": "NODE", "name": "bond0"}`),
		Entry("volume connector", "/v1/volume/connectors", `{"node_uuid": "NODE", "type": "iqn", "connector_id": "iqn.2026-12.org.example:n1"}`),
		Entry("volume target", "/v1/volume/targets", `{"node_uuid": "NODE", "volume_type": "iscsi", "boot_index": 0, "volume_id": "vol-0"}`),
	)
})
