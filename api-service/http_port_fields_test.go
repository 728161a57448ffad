package apiservice_test

import (
	"context"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/db"
)

// The port fields of 1.18 (internal_info), 1.19 (local_link_connection,
// pxe_enabled) and 1.34 (physical_network) are gated in output, fields,
// sort keys, bodies and patches.
var _ = Describe("port fields by version", func() {
	var (
		e    *env
		node string
	)

	BeforeEach(func() {
		e, node = sqliteEnvWithNode("")
	})

	portBody := func(mac, more string) string {
		return `{"address": "` + mac + `", "node_uuid": "` + node + `"` + more + `}`
	}
	storedPorts := func() int {
		ps, err := e.store.ListPorts(context.Background(), db.PortFilter{}, dbAll, nil)
		Expect(err).NotTo(HaveOccurred())
		return len(ps)
	}

	It("shows internal_info from 1.18 and never accepts it", func() {
		r := e.at("1.18", http.MethodPost, "/v1/ports", portBody("aa:bb:cc:dd:ee:01", ""))
		Expect(r.status).To(Equal(http.StatusCreated))
		p := r.json()["uuid"].(string)
		Expect(r.json()).To(HaveKeyWithValue("internal_info", map[string]any{}))
		Expect(r.json()).NotTo(HaveKey("pxe_enabled"))
		Expect(e.at("1.17", http.MethodGet, "/v1/ports/"+p, "").json()).NotTo(HaveKey("internal_info"))
		Expect(e.at("1.17", http.MethodGet, "/v1/ports/"+p+"?fields=internal_info", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.18", http.MethodGet, "/v1/ports/"+p+"?fields=internal_info", "").json()).To(HaveKey("internal_info"))
		Expect(e.at("latest", http.MethodGet, "/v1/ports?sort_key=internal_info", "").status).To(Equal(http.StatusBadRequest))

		Expect(e.at("latest", http.MethodPost, "/v1/ports", portBody("aa:bb:cc:dd:ee:02", `, "internal_info": {}`)).status).To(Equal(http.StatusBadRequest))
		r = e.at("latest", http.MethodPatch, "/v1/ports/"+p, `[{"op": "add", "path": "/internal_info/x", "value": "y"}]`)
		Expect(r.status).To(Equal(http.StatusBadRequest))
		Expect(r.fault()["faultstring"]).To(HavePrefix("Cannot patch /internal_info/x. Only the following can be updated: address, "))
		Expect(r.fault()["faultstring"]).To(ContainSubstring("local_link_connection, name, node_ident, node_uuid, physical_network, portgroup_uuid, pxe_enabled"))
		Expect(storedPorts()).To(Equal(1))
	})

	It("takes local_link_connection and pxe_enabled from 1.19, validated", func() {
		llc := `, "local_link_connection": {"switch_id": "0A-1B-2C-3D-4E-5F", "port_id": "Eth1/1", "switch_info": "tor-1"}, "pxe_enabled": false`
		Expect(e.at("1.18", http.MethodPost, "/v1/ports", portBody("aa:bb:cc:dd:ee:01", llc)).status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.18", http.MethodPost, "/v1/ports", portBody("aa:bb:cc:dd:ee:01", `, "pxe_enabled": true`)).status).To(Equal(http.StatusNotAcceptable))
		Expect(storedPorts()).To(BeZero())

		r := e.at("1.19", http.MethodPost, "/v1/ports", portBody("aa:bb:cc:dd:ee:01", llc))
		Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
		p := r.json()["uuid"].(string)
		Expect(r.json()).To(HaveKeyWithValue("pxe_enabled", false))
		Expect(r.json()).To(HaveKeyWithValue("local_link_connection",
			map[string]any{"switch_id": "0a:1b:2c:3d:4e:5f", "port_id": "Eth1/1", "switch_info": "tor-1"}))
		stored, err := e.store.GetPort(context.Background(), p)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.PXEEnabled).To(BeFalse())

		old := e.at("1.18", http.MethodGet, "/v1/ports/"+p, "").json()
		Expect(old).NotTo(HaveKey("local_link_connection"))
		Expect(old).NotTo(HaveKey("pxe_enabled"))
		Expect(e.at("1.18", http.MethodGet, "/v1/ports?fields=pxe_enabled", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.18", http.MethodGet, "/v1/ports?sort_key=pxe_enabled", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.19", http.MethodGet, "/v1/ports?sort_key=pxe_enabled", "").status).To(Equal(http.StatusOK))
		Expect(e.at("1.19", http.MethodGet, "/v1/ports?sort_key=local_link_connection", "").status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.18", http.MethodPatch, "/v1/ports/"+p, `[{"op": "replace", "path": "/pxe_enabled", "value": true}]`).status).To(Equal(http.StatusNotAcceptable))

		dpid := e.at("1.19", http.MethodPatch, "/v1/ports/"+p, `[{"op": "replace", "path": "/local_link_connection/switch_id", "value": "0x0000000000000001"}, {"op": "replace", "path": "/pxe_enabled", "value": "yes"}]`)
		Expect(dpid.status).To(Equal(http.StatusOK), string(dpid.raw))
		Expect(dpid.json()["local_link_connection"]).To(HaveKeyWithValue("switch_id", "0x0000000000000001"))
		Expect(dpid.json()).To(HaveKeyWithValue("pxe_enabled", true))

		for _, bad := range []string{
			`[{"op": "replace", "path": "/local_link_connection/switch_id", "value": "switch-7"}]`,
			`[{"op": "remove", "path": "/local_link_connection/port_id"}]`,
			`[{"op": "add", "path": "/local_link_connection/vlan", "value": "7"}]`,
			`[{"op": "replace", "path": "/local_link_connection", "value": "x"}]`,
			`[{"op": "replace", "path": "/pxe_enabled", "value": "maybe"}]`,
		} {
			Expect(e.at("1.19", http.MethodPatch, "/v1/ports/"+p, bad).status).To(Equal(http.StatusBadRequest), bad)
		}
		stored, err = e.store.GetPort(context.Background(), p)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.LocalLinkConnection).To(HaveKeyWithValue("switch_id", "0x0000000000000001"))
		Expect(stored.LocalLinkConnection).To(HaveLen(3))
		Expect(stored.PXEEnabled).To(BeTrue())
	})

	It("serves physical_network from 1.34 and refuses it below", func() {
		r := e.at("1.33", http.MethodPost, "/v1/ports", portBody("aa:bb:cc:dd:ee:01", ""))
		Expect(r.status).To(Equal(http.StatusCreated))
		p := r.json()["uuid"].(string)
		Expect(r.json()).NotTo(HaveKey("physical_network"))

		Expect(e.at("1.33", http.MethodPost, "/v1/ports", portBody("aa:bb:cc:dd:ee:02", `, "physical_network": "physnet1"`)).status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.33", http.MethodGet, "/v1/ports/"+p+"?fields=physical_network", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.33", http.MethodGet, "/v1/ports?sort_key=physical_network", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.33", http.MethodPatch, "/v1/ports/"+p, `[{"op": "add", "path": "/physical_network", "value": "physnet1"}]`).status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.34", http.MethodGet, "/v1/ports/"+p, "").json()).To(HaveKeyWithValue("physical_network", BeNil()))

		for _, bad := range []string{`""`, `"` + strings.Repeat("p", 65) + `"`, `5`} {
			r := e.at("1.34", http.MethodPatch, "/v1/ports/"+p, `[{"op": "add", "path": "/physical_network", "value": `+bad+`}]`)
			Expect(r.status).To(Equal(http.StatusBadRequest), bad)
		}
		r = e.at("1.34", http.MethodPatch, "/v1/ports/"+p, `[{"op": "add", "path": "/physical_network", "value": "physnet1"}]`)
		Expect(r.status).To(Equal(http.StatusOK))
		Expect(r.json()).To(HaveKeyWithValue("physical_network", "physnet1"))
		r = e.at("1.34", http.MethodPost, "/v1/ports", portBody("aa:bb:cc:dd:ee:03", `, "physical_network": "physnet2"`))
		Expect(r.status).To(Equal(http.StatusCreated))
		Expect(r.json()).To(HaveKeyWithValue("physical_network", "physnet2"))
		Expect(e.at("1.34", http.MethodGet, "/v1/ports?sort_key=physical_network&fields=uuid,physical_network", "").status).To(Equal(http.StatusOK))
		Expect(e.at("1.33", http.MethodGet, "/v1/ports/"+p, "").json()).NotTo(HaveKey("physical_network"))
		stored, err := e.store.GetPort(context.Background(), p)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.PhysicalNetwork).To(HaveValue(Equal("physnet1")))
	})

	It("serves is_smartnic from 1.53, stored, and refuses it below", func() {
		smart := `, "is_smartnic": true, "local_link_connection": {"hostname": "card-7", "port_id": "rep0-0"}`
		Expect(e.at("1.52", http.MethodPost, "/v1/ports", portBody("aa:bb:cc:dd:ee:11", smart)).status).To(Equal(http.StatusNotAcceptable))
		r := e.at("1.53", http.MethodPost, "/v1/ports", portBody("aa:bb:cc:dd:ee:11", smart))
		Expect(r.status).To(Equal(http.StatusCreated))
		p := r.json()["uuid"].(string)
		Expect(r.json()).To(HaveKeyWithValue("is_smartnic", true))
		Expect(r.json()).To(HaveKeyWithValue("local_link_connection", map[string]any{"hostname": "card-7", "port_id": "rep0-0"}))
		Expect(e.at("1.52", http.MethodGet, "/v1/ports/"+p, "").json()).NotTo(HaveKey("is_smartnic"))
		Expect(e.at("1.52", http.MethodGet, "/v1/ports?sort_key=is_smartnic", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.52", http.MethodPatch, "/v1/ports/"+p, `[{"op": "replace", "path": "/is_smartnic", "value": false}]`).status).To(Equal(http.StatusNotAcceptable))

		r = e.at("1.53", http.MethodPatch, "/v1/ports/"+p, `[{"op": "replace", "path": "/local_link_connection", "value": {"switch_id": "0a:00:00:00:00:01", "port_id": "Eth1"}}]`)
		Expect(r.status).To(Equal(http.StatusBadRequest))
		Expect(r.fault()["faultstring"]).To(Equal("Smart NIC port must have port_id and hostname in local_link_connection"))
		Expect(e.at("1.53", http.MethodPost, "/v1/ports", portBody("aa:bb:cc:dd:ee:12", `, "is_smartnic": true`)).status).To(Equal(http.StatusBadRequest))

		stored, err := e.store.GetPort(context.Background(), p)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.IsSmartNIC).To(BeTrue())
		Expect(stored.LocalLinkConnection).To(HaveKeyWithValue("hostname", "card-7"))
		r = e.at("1.53", http.MethodPatch, "/v1/ports/"+p, `[{"op": "replace", "path": "/is_smartnic", "value": false},
			{"op": "replace", "path": "/local_link_connection", "value": {"switch_id": "0a:00:00:00:00:01", "port_id": "Eth1"}}]`)
		Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
		stored, err = e.store.GetPort(context.Background(), p)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.IsSmartNIC).To(BeFalse(), "a PATCH keeps is_smartnic")
		r = e.at("1.53", http.MethodGet, "/v1/ports?fields=uuid,is_smartnic&sort_key=is_smartnic", "")
		Expect(r.status).To(Equal(http.StatusOK))
		Expect(r.json()["ports"]).To(ContainElement(HaveKeyWithValue("is_smartnic", false)))
	})
})
