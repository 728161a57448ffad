package keystone_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/image/keystonetest"
	"github.com/ferricbm/ferric/tests/harness"
)

// client authenticates to Keystone as u with a system-scoped token, the
// way the openstack CLI does with --os-system-scope all, and talks to
// Ferric with that token.
func client(ctx context.Context, u keystonetest.User) *gophercloud.ServiceClient {
	return clientOf(ctx, apiURL, u)
}

// clientOf is client for the API at url.
func clientOf(ctx context.Context, url string, u keystonetest.User) *gophercloud.ServiceClient {
	GinkgoHelper()
	pc, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: keystone.URL + "/v3", Username: u.Name, Password: u.Password, DomainName: u.Domain,
		Scope: &gophercloud.AuthScope{System: true},
	})
	Expect(err).NotTo(HaveOccurred())
	v, err := harness.MaxVersion(ctx, url)
	Expect(err).NotTo(HaveOccurred())
	return &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: url + "/v1/", Type: "baremetal", Microversion: v}
}

// raw sends a request with a token at the latest microversion.
func raw(ctx context.Context, tok, method, path string, body any) *harness.Response {
	h := map[string]string{"X-OpenStack-Ironic-API-Version": "latest"}
	if tok != "" {
		h["X-Auth-Token"] = tok
	}
	r, err := harness.Do(ctx, method, apiURL+path, body, h)
	Expect(err).NotTo(HaveOccurred())
	return r
}

func token(ctx context.Context, u keystonetest.User) string {
	t, err := keystone.Issue(ctx, u, true)
	Expect(err).NotTo(HaveOccurred())
	return t
}

func expectForbidden(r *harness.Response, rule string) {
	GinkgoHelper()
	Expect(r.Status).To(Equal(http.StatusForbidden), string(r.Body))
	e, err := harness.ParseIronicError(r.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(e.FaultString).To(Equal("Access was denied to the following resource: " + rule))
}

func expectUnauthorized(r *harness.Response) {
	GinkgoHelper()
	Expect(r.Status).To(Equal(http.StatusUnauthorized), string(r.Body))
	Expect(r.Header.Get("WWW-Authenticate")).To(Equal(`Keystone uri="` + keystone.URL + `/v3"`))
}

var _ = Describe("Under Keystone auth", func() {
	var nodeUUID string

	BeforeEach(func(ctx SpecContext) {
		n, err := nodes.Create(ctx, client(ctx, admin), nodes.CreateOpts{Driver: "fake-hardware", Name: "ks-" + harness.RandomHex(3),
			DriverInfo: map[string]any{"ipmi_password": "bmc-secret"}}).Extract()
		Expect(err).NotTo(HaveOccurred())
		nodeUUID = n.UUID
		DeferCleanup(func(ctx SpecContext) {
			r := raw(ctx, token(ctx, admin), http.MethodDelete, "/v1/nodes/"+nodeUUID, nil)
			Expect(r.Status).To(BeElementOf(http.StatusNoContent, http.StatusNotFound))
		})
	})

	It("a reader gets 200 on reads and 403 on every write, and nothing changes", func(ctx SpecContext) {
		tok := token(ctx, reader)
		for _, path := range []string{"/v1/nodes", "/v1/nodes/detail", "/v1/nodes/" + nodeUUID, "/v1/nodes/" + nodeUUID + "/states",
			"/v1/nodes/" + nodeUUID + "/validate", "/v1/nodes/" + nodeUUID + "/traits", "/v1/nodes/" + nodeUUID + "/ports",
			"/v1/ports", "/v1/portgroups", "/v1/chassis", "/v1/drivers", "/v1/conductors", "/v1/volume/connectors",
			"/v1/volume/targets"} {
			Expect(raw(ctx, tok, http.MethodGet, path, nil).Status).To(Equal(http.StatusOK), path)
		}
		node := "/v1/nodes/" + nodeUUID
		for _, w := range []struct {
			method, path string
			body         any
			rule         string
		}{
			{http.MethodPost, "/v1/nodes", map[string]any{"driver": "fake-hardware"}, "baremetal:node:create"},
			{http.MethodPatch, node, []map[string]any{{"op": "add", "path": "/extra/k", "value": "v"}}, "baremetal:node:update_extra"},
			{http.MethodDelete, node, nil, "baremetal:node:delete"},
			{http.MethodPut, node + "/maintenance", map[string]any{"reason": "r"}, "baremetal:node:set_maintenance"},
			{http.MethodDelete, node + "/maintenance", nil, "baremetal:node:clear_maintenance"},
			{http.MethodPut, node + "/states/power", map[string]any{"target": "power on"}, "baremetal:node:set_power_state"},
			{http.MethodPut, node + "/states/provision", map[string]any{"target": "manage"}, "baremetal:node:set_provision_state"},
			{http.MethodPut, node + "/states/raid", map[string]any{"logical_disks": []any{}}, "baremetal:node:set_raid_state"},
			{http.MethodPut, node + "/states/console", map[string]any{"enabled": true}, "baremetal:node:set_console_state"},
			{http.MethodPut, node + "/management/boot_device", map[string]any{"boot_device": "pxe"}, "baremetal:node:set_boot_device"},
			{http.MethodPut, node + "/management/inject_nmi", map[string]any{}, "baremetal:node:inject_nmi"},
			{http.MethodPut, node + "/traits", map[string]any{"traits": []string{"CUSTOM_X"}}, "baremetal:node:traits:set"},
			{http.MethodPut, node + "/traits/CUSTOM_X", nil, "baremetal:node:traits:set"},
			{http.MethodDelete, node + "/traits", nil, "baremetal:node:traits:delete"},
			{http.MethodPost, node + "/vifs", map[string]any{"id": "vif-1"}, "baremetal:node:vif:attach"},
			{http.MethodDelete, node + "/vifs/vif-1", nil, "baremetal:node:vif:detach"},
			{http.MethodPost, node + "/vendor_passthru?method=m", map[string]any{}, "baremetal:node:vendor_passthru"},
			{http.MethodPost, "/v1/ports", map[string]any{"node_uuid": nodeUUID, "address": "52:54:00:12:34:56"}, "baremetal:port:create"},
			{http.MethodPost, "/v1/portgroups", map[string]any{"node_uuid": nodeUUID}, "baremetal:portgroup:create"},
			{http.MethodPost, "/v1/chassis", map[string]any{}, "baremetal:chassis:create"},
			{http.MethodPost, "/v1/volume/connectors", map[string]any{"node_uuid": nodeUUID, "type": "iqn", "connector_id": "iqn.x"}, "baremetal:volume:create"},
			{http.MethodPost, "/v1/drivers/fake-hardware/vendor_passthru?method=m", map[string]any{}, "baremetal:driver:vendor_passthru"},
		} {
			By(w.method + " " + w.path)
			expectForbidden(raw(ctx, tok, w.method, w.path, w.body), w.rule)
		}

		n, err := nodes.Get(ctx, client(ctx, admin), nodeUUID).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(n.Maintenance).To(BeFalse())
		Expect(n.ProvisionState).To(Equal("enroll"))
		Expect(n.Extra).To(BeEmpty())
		Expect(n.Traits).To(BeEmpty())
	})

	It("a member changes a node but cannot touch driver_info or delete it; an admin can", func(ctx SpecContext) {
		m := client(ctx, member)
		_, err := nodes.Update(ctx, m, nodeUUID, nodes.UpdateOpts{nodes.UpdateOperation{Op: nodes.AddOp, Path: "/extra/owner", Value: "team-a"}}).Extract()
		Expect(err).NotTo(HaveOccurred())
		_, err = nodes.Update(ctx, m, nodeUUID, nodes.UpdateOpts{nodes.UpdateOperation{Op: nodes.AddOp, Path: "/driver_info/ipmi_address", Value: "10.0.0.9"}}).Extract()
		Expect(gophercloud.ResponseCodeIs(err, http.StatusForbidden)).To(BeTrue(), "%v", err)
		Expect(gophercloud.ResponseCodeIs(nodes.Delete(ctx, m, nodeUUID).ExtractErr(), http.StatusForbidden)).To(BeTrue())
		_, err = nodes.Create(ctx, m, nodes.CreateOpts{Driver: "fake-hardware"}).Extract()
		Expect(gophercloud.ResponseCodeIs(err, http.StatusForbidden)).To(BeTrue(), "%v", err)

		a := client(ctx, admin)
		n, err := nodes.Update(ctx, a, nodeUUID, nodes.UpdateOpts{nodes.UpdateOperation{Op: nodes.AddOp, Path: "/driver_info/ipmi_address", Value: "10.0.0.9"}}).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(n.Extra).To(HaveKeyWithValue("owner", "team-a"))
		Expect(n.DriverInfo).To(HaveKeyWithValue("ipmi_address", "10.0.0.9"))
		Expect(n.DriverInfo).To(HaveKeyWithValue("ipmi_password", "******"))
		Expect(nodes.Delete(ctx, a, nodeUUID).ExtractErr()).To(Succeed())
	})

	It("refuses an expired token and, within the cache time, a revoked one", func(ctx SpecContext) {
		expired := token(ctx, reader)
		Expect(raw(ctx, expired, http.MethodGet, "/v1/nodes", nil).Status).To(Equal(http.StatusOK))
		keystone.Expire(expired)
		Eventually(func() int { return raw(ctx, expired, http.MethodGet, "/v1/nodes", nil).Status }).
			WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(http.StatusUnauthorized))
		expectUnauthorized(raw(ctx, expired, http.MethodGet, "/v1/nodes", nil))

		revoked := token(ctx, reader)
		Expect(raw(ctx, revoked, http.MethodGet, "/v1/nodes", nil).Status).To(Equal(http.StatusOK))
		idClient := client(ctx, admin)
		idClient.Endpoint = keystone.URL + "/v3/"
		Expect(tokens.Revoke(ctx, idClient, revoked).Err).To(Succeed())
		Eventually(func() int { return raw(ctx, revoked, http.MethodGet, "/v1/nodes", nil).Status }).
			WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(http.StatusUnauthorized))

		expectUnauthorized(raw(ctx, "", http.MethodGet, "/v1/nodes", nil))
		expectUnauthorized(raw(ctx, "not-a-token", http.MethodGet, "/v1/nodes", nil))
	})

	It("lets the ramdisk look its node up and heartbeat without a token", func(ctx SpecContext) {
		const mac = "52:54:00:ab:cd:ef"
		r := raw(ctx, token(ctx, admin), http.MethodPost, "/v1/ports", map[string]any{"node_uuid": nodeUUID, "address": mac})
		Expect(r.Status).To(Equal(http.StatusCreated), string(r.Body))

		r = raw(ctx, "", http.MethodGet, "/v1/lookup?addresses="+mac, nil)
		Expect(r.Status).To(Equal(http.StatusOK), string(r.Body))
		var found struct {
			Node struct {
				UUID string `json:"uuid"`
			} `json:"node"`
		}
		Expect(json.Unmarshal(r.Body, &found)).To(Succeed())
		Expect(found.Node.UUID).To(Equal(nodeUUID))

		r = raw(ctx, "", http.MethodPost, "/v1/heartbeat/"+nodeUUID, map[string]any{"callback_url": "http://127.0.0.1:9999"})
		Expect(r.Status).NotTo(BeElementOf(http.StatusUnauthorized, http.StatusForbidden), string(r.Body))
		_, err := harness.ParseIronicError(r.Body)
		if r.Status != http.StatusAccepted {
			Expect(err).NotTo(HaveOccurred(), "a refusal by the node's state, in Ironic's format")
		}
	})

	It("never writes a token or the service password to the log", func(ctx SpecContext) {
		tok := token(ctx, reader)
		raw(ctx, tok, http.MethodGet, "/v1/nodes", nil)
		raw(ctx, "a-bogus-token", http.MethodGet, "/v1/nodes", nil)
		for _, p := range deployment.Processes() {
			logs, err := os.ReadFile(filepath.Join(deployment.Dir, p.Name+".log"))
			Expect(err).NotTo(HaveOccurred())
			for _, secret := range []string{tok, "a-bogus-token", service.Password} {
				Expect(strings.Contains(string(logs), secret)).To(BeFalse(), "log of %s holds a secret", p.Name)
			}
		}
	})
})
