package apiservice_test

import (
	"context"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/db"
)

var _ = Describe("portgroups", func() {
	var (
		e    *env
		node string
	)

	BeforeEach(func() {
		e, node = sqliteEnvWithNode(`, "name": "host-1"`)
	})

	pgCount := func() int {
		pgs, err := e.store.ListPortgroups(context.Background(), db.PortgroupFilter{}, dbAll, nil)
		Expect(err).NotTo(HaveOccurred())
		return len(pgs)
	}
	createPG := func(body string) string {
		r := e.at("latest", http.MethodPost, "/v1/portgroups", strings.ReplaceAll(body, "NODE", node))
		Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
		return r.json()["uuid"].(string)
	}

	It("does not exist before 1.23", func() {
		for _, v := range []string{"1.1", "1.22"} {
			Expect(e.at(v, http.MethodGet, "/v1/portgroups", "").status).To(Equal(http.StatusNotFound), v)
			Expect(e.at(v, http.MethodPost, "/v1/portgroups", `{"node_uuid": "`+node+`"}`).status).To(Equal(http.StatusNotFound), v)
			Expect(e.at(v, http.MethodGet, "/v1", "").json()).NotTo(HaveKey("portgroups"))
		}
		Expect(e.call(http.MethodGet, "/v1/portgroups/detail", "").status).To(Equal(http.StatusNotFound))
		Expect(pgCount()).To(BeZero())
		Expect(e.at("1.23", http.MethodGet, "/v1", "").json()["portgroups"]).To(ContainElement(
			map[string]any{"href": e.url + "/v1/portgroups/", "rel": "self"}))
	})

	It("creates at 1.23 without mode and properties, which appear at 1.26", func() {
		r := e.at("1.23", http.MethodPost, "/v1/portgroups", `{"node_uuid": "`+node+`", "name": "bond0", "address": "AA:BB:CC:00:00:01", "standalone_ports_supported": "false"}`)
		Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
		pg := r.json()
		id := pg["uuid"].(string)
		Expect(r.header.Get("Location")).To(Equal(e.url + "/v1/portgroups/" + id))
		Expect(pg).To(HaveKeyWithValue("address", "aa:bb:cc:00:00:01"))
		Expect(pg).To(HaveKeyWithValue("name", "bond0"))
		Expect(pg).To(HaveKeyWithValue("node_uuid", node))
		Expect(pg).To(HaveKeyWithValue("standalone_ports_supported", false))
		Expect(pg).To(HaveKeyWithValue("internal_info", map[string]any{}))
		Expect(pg).NotTo(HaveKey("mode"))
		Expect(pg).NotTo(HaveKey("properties"))
		Expect(pg).NotTo(HaveKey("ports"), "the ports link is 1.24")

		Expect(e.at("1.25", http.MethodPost, "/v1/portgroups", `{"node_uuid": "`+node+`", "mode": "802.3ad"}`).status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.25", http.MethodGet, "/v1/portgroups/"+id+"?fields=mode", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.25", http.MethodGet, "/v1/portgroups?sort_key=mode", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(pgCount()).To(Equal(1))

		full := e.at("1.26", http.MethodGet, "/v1/portgroups/"+id, "").json()
		Expect(full).To(HaveKeyWithValue("mode", "active-backup"))
		Expect(full).To(HaveKeyWithValue("properties", map[string]any{}))
		Expect(full["ports"]).To(ContainElement(map[string]any{"href": e.url + "/v1/portgroups/" + id + "/ports", "rel": "self"}))

		withMode := e.at("1.26", http.MethodPost, "/v1/portgroups", `{"node_uuid": "`+node+`", "mode": "802.3ad", "properties": {"miimon": "100"}}`).json()
		Expect(withMode).To(HaveKeyWithValue("mode", "802.3ad"))
		Expect(withMode).To(HaveKeyWithValue("properties", map[string]any{"miimon": "100"}))
		Expect(withMode).To(HaveKeyWithValue("name", BeNil()))
		Expect(withMode).To(HaveKeyWithValue("address", BeNil()))
		Expect(withMode).To(HaveKeyWithValue("standalone_ports_supported", true))
	})

	DescribeTable("rejects bad creates and stores nothing",
		func(body string, code int, msg string) {
			r := e.at("latest", http.MethodPost, "/v1/portgroups", strings.ReplaceAll(body, "NODE", node))
			Expect(r.status).To(Equal(code))
			Expect(r.fault()["faultstring"]).To(ContainSubstring(msg))
			Expect(pgCount()).To(BeZero())
		},
		Entry("no node", `{"name": "bond0"}`, 400, "'node_uuid' is a required property"),
		Entry("an unknown node", `{"node_uuid": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"}`, 400, "Node 1be26c0b-03f2-4d2e-ae87-c02d7f33c123 could not be found."),
		Entry("a node name", `{"node_uuid": "host-1"}`, 400, "Expected a UUID for node_uuid"),
		Entry("a bad MAC", `{"node_uuid": "NODE", "address": "nope"}`, 400, "Expected a MAC address but received nope."),
		Entry("a reserved name", `{"node_uuid": "NODE", "name": "detail"}`, 400, "invalid portgroup name 'detail'"),
		Entry("a UUID-like name", `{"node_uuid": "NODE", "name": "1be26c0b03f24d2eae87c02d7f33c123"}`, 400, "invalid portgroup name"),
		Entry("a name with spaces", `{"node_uuid": "NODE", "name": "a b"}`, 400, "invalid portgroup name"),
		Entry("an unknown field", `{"node_uuid": "NODE", "ports": []}`, 400, "('ports' was unexpected)"),
		Entry("internal_info", `{"node_uuid": "NODE", "internal_info": {}}`, 400, "('internal_info' was unexpected)"),
		Entry("a wrong type", `{"node_uuid": "NODE", "standalone_ports_supported": 3}`, 400, "is not of type 'boolean'"),
	)

	It("refuses duplicate names and addresses with 409", func() {
		createPG(`{"node_uuid": "NODE", "name": "bond0", "address": "aa:bb:cc:00:00:01"}`)
		r := e.at("latest", http.MethodPost, "/v1/portgroups", `{"node_uuid": "`+node+`", "name": "bond0"}`)
		Expect(r.status).To(Equal(http.StatusConflict))
		Expect(r.fault()["faultstring"]).To(Equal("A portgroup with name bond0 already exists."))
		r = e.at("latest", http.MethodPost, "/v1/portgroups", `{"node_uuid": "`+node+`", "address": "AA-BB-CC-00-00-01"}`)
		Expect(r.status).To(Equal(http.StatusConflict))
		Expect(r.fault()["faultstring"]).To(Equal("A portgroup with MAC address aa:bb:cc:00:00:01 already exists."))
		Expect(pgCount()).To(Equal(1))
	})

	It("shows by uuid or name, lists, filters and pages", func() {
		a := createPG(`{"node_uuid": "NODE", "name": "bond-a", "address": "aa:bb:cc:00:00:01"}`)
		createPG(`{"node_uuid": "NODE", "name": "bond-b"}`)
		other := e.createNode("")
		createPG(`{"node_uuid": "` + other + `", "name": "bond-c"}`)

		Expect(e.at("latest", http.MethodGet, "/v1/portgroups/bond-a", "").json()).To(HaveKeyWithValue("uuid", a))
		Expect(e.at("latest", http.MethodGet, "/v1/portgroups/"+a+"?fields=name", "").json()).To(HaveLen(2))
		Expect(e.at("latest", http.MethodGet, "/v1/portgroups/ghost", "").status).To(Equal(http.StatusNotFound))
		bad := e.at("latest", http.MethodGet, "/v1/portgroups/a%20b", "")
		Expect(bad.status).To(Equal(http.StatusBadRequest))
		Expect(bad.fault()["faultstring"]).To(Equal("Expected a logical name or UUID but received a b."))

		all := e.at("latest", http.MethodGet, "/v1/portgroups", "").json()["portgroups"].([]any)
		Expect(all).To(HaveLen(3))
		Expect(all[0]).To(HaveLen(4), "uuid, address, name, links")
		Expect(e.at("latest", http.MethodGet, "/v1/portgroups/detail", "").json()["portgroups"].([]any)[0]).To(HaveKey("node_uuid"))
		Expect(e.at("latest", http.MethodGet, "/v1/portgroups?node=host-1", "").json()["portgroups"]).To(HaveLen(2))
		Expect(e.at("latest", http.MethodGet, "/v1/portgroups?node="+other, "").json()["portgroups"]).To(HaveLen(1))
		Expect(e.at("latest", http.MethodGet, "/v1/portgroups?address=AA:BB:CC:00:00:01", "").json()["portgroups"]).To(HaveLen(1))
		Expect(e.at("latest", http.MethodGet, "/v1/nodes/host-1/portgroups", "").json()["portgroups"]).To(HaveLen(2))
		Expect(e.at("latest", http.MethodGet, "/v1/nodes/"+other+"/portgroups/detail", "").json()["portgroups"].([]any)[0]).
			To(HaveKeyWithValue("name", "bond-c"))

		page := e.at("latest", http.MethodGet, "/v1/portgroups?limit=2&sort_key=name&node=host-1", "").json()
		Expect(page["portgroups"]).To(HaveLen(2))
		Expect(page["next"]).To(HavePrefix(e.url + "/v1/portgroups?sort_key=name&sort_dir=asc&node=host-1&fields=uuid,address,name&limit=2&marker="))

		for q, code := range map[string]int{
			"sort_key=properties": http.StatusBadRequest,
			"sort_key=extra":      http.StatusBadRequest,
			"node=ghost":          http.StatusNotFound,
			"address=zz":          http.StatusBadRequest,
			"driver=x":            http.StatusBadRequest,
			"fields=bogus":        http.StatusBadRequest,
		} {
			Expect(e.at("latest", http.MethodGet, "/v1/portgroups?"+q, "").status).To(Equal(code), q)
		}
		Expect(e.at("latest", http.MethodGet, "/v1/nodes/host-1/portgroups?node=host-1", "").status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.23", http.MethodGet, "/v1/nodes/host-1/portgroups", "").status).To(Equal(http.StatusNotFound))
		Expect(e.at("latest", http.MethodPost, "/v1/nodes/host-1/portgroups", `{}`).status).To(Equal(http.StatusBadRequest))
		Expect(e.at("latest", http.MethodGet, "/v1/nodes/host-1/portgroups/"+a, "").status).To(Equal(http.StatusBadRequest))
	})

	It("links a node to its port groups from 1.24", func() {
		Expect(e.at("1.23", http.MethodGet, "/v1/nodes/"+node, "").json()).NotTo(HaveKey("portgroups"))
		Expect(e.at("1.24", http.MethodGet, "/v1/nodes/"+node, "").json()["portgroups"]).To(ContainElement(
			map[string]any{"href": e.url + "/v1/nodes/" + node + "/portgroups", "rel": "self"}))
		Expect(e.at("1.24", http.MethodGet, "/v1/nodes/"+node+"?fields=name", "").json()).NotTo(HaveKey("portgroups"))
	})

	It("patches through the conductor and changes nothing on failure", func() {
		id := createPG(`{"node_uuid": "NODE", "name": "bond0", "extra": {"a": "1"}}`)
		createPG(`{"node_uuid": "NODE", "name": "taken"}`)
		r := e.at("latest", http.MethodPatch, "/v1/portgroups/bond0", `[{"op": "replace", "path": "/name", "value": "bond1"}, {"op": "add", "path": "/extra/b", "value": "2"}, {"op": "replace", "path": "/mode", "value": "balance-rr"}, {"op": "add", "path": "/properties/miimon", "value": "100"}]`)
		Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
		Expect(r.json()).To(HaveKeyWithValue("name", "bond1"))
		Expect(r.json()).To(HaveKeyWithValue("mode", "balance-rr"))
		Expect(r.json()).To(HaveKeyWithValue("properties", map[string]any{"miimon": "100"}))
		Expect(r.json()).To(HaveKeyWithValue("extra", map[string]any{"a": "1", "b": "2"}))
		Expect(r.json()["updated_at"]).NotTo(BeNil())

		for patch, code := range map[string]int{
			`[{"op": "replace", "path": "/name", "value": "taken"}]`:                                    http.StatusConflict,
			`[{"op": "replace", "path": "/internal_info", "value": {}}]`:                                http.StatusBadRequest,
			`[{"op": "replace", "path": "/address", "value": "nope"}]`:                                  http.StatusBadRequest,
			`[{"op": "remove", "path": "/node_uuid"}]`:                                                  http.StatusBadRequest,
			`[{"op": "replace", "path": "/name", "value": "x"}, {"op": "remove", "path": "/extra/zz"}]`: http.StatusBadRequest,
		} {
			Expect(e.at("latest", http.MethodPatch, "/v1/portgroups/"+id, patch).status).To(Equal(code), patch)
		}
		Expect(e.at("1.25", http.MethodPatch, "/v1/portgroups/"+id, `[{"op": "replace", "path": "/mode", "value": "x"}]`).status).To(Equal(http.StatusNotAcceptable))
		stored, err := e.store.GetPortgroup(context.Background(), id)
		Expect(err).NotTo(HaveOccurred())
		Expect(*stored.Name).To(Equal("bond1"))
		Expect(*stored.Mode).To(Equal("balance-rr"))
		Expect(stored.Extra).To(HaveLen(2))
	})

	It("groups ports of its node and refuses deletion while it has any", func() {
		pg := createPG(`{"node_uuid": "NODE", "name": "bond0"}`)
		other := e.createNode(`, "name": "host-2"`)
		foreign := createPG(`{"node_uuid": "` + other + `", "name": "bond9"}`)

		portBody := func(mac, group string) string {
			return `{"address": "` + mac + `", "node_uuid": "` + node + `", "portgroup_uuid": "` + group + `"}`
		}
		Expect(e.at("1.23", http.MethodPost, "/v1/ports", portBody("aa:bb:cc:dd:ee:01", pg)).status).To(Equal(http.StatusNotAcceptable))
		r := e.at("latest", http.MethodPost, "/v1/ports", portBody("aa:bb:cc:dd:ee:02", foreign))
		Expect(r.status).To(Equal(http.StatusBadRequest))
		Expect(r.fault()["faultstring"]).To(ContainSubstring("different node"))
		r = e.at("latest", http.MethodPost, "/v1/ports", portBody("aa:bb:cc:dd:ee:03", "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"))
		Expect(r.status).To(Equal(http.StatusBadRequest))
		Expect(r.fault()["faultstring"]).To(Equal("Portgroup 1be26c0b-03f2-4d2e-ae87-c02d7f33c123 could not be found."))
		ports, err := e.store.ListPorts(context.Background(), db.PortFilter{}, dbAll, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(ports).To(BeEmpty())

		r = e.at("1.24", http.MethodPost, "/v1/ports", portBody("aa:bb:cc:dd:ee:04", pg))
		Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
		port := r.json()["uuid"].(string)
		Expect(r.json()).To(HaveKeyWithValue("portgroup_uuid", pg))
		Expect(e.at("1.23", http.MethodGet, "/v1/ports/"+port, "").json()).NotTo(HaveKey("portgroup_uuid"))
		Expect(e.at("1.23", http.MethodGet, "/v1/ports/"+port+"?fields=portgroup_uuid", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.24", http.MethodGet, "/v1/ports?fields=portgroup_uuid", "").json()["ports"]).To(ConsistOf(HaveKeyWithValue("portgroup_uuid", pg)))
		createPortBody := `{"address": "aa:bb:cc:dd:ee:05", "node_uuid": "` + node + `"}`
		Expect(e.at("latest", http.MethodPost, "/v1/ports", createPortBody).status).To(Equal(http.StatusCreated))

		members := e.at("latest", http.MethodGet, "/v1/portgroups/bond0/ports", "").json()["ports"].([]any)
		Expect(members).To(ConsistOf(HaveKeyWithValue("uuid", port)))
		Expect(e.at("latest", http.MethodGet, "/v1/portgroups/"+pg+"/ports/detail", "").json()["ports"].([]any)[0]).
			To(HaveKeyWithValue("portgroup_uuid", pg))
		Expect(e.at("1.23", http.MethodGet, "/v1/portgroups/"+pg+"/ports", "").status).To(Equal(http.StatusNotFound))
		Expect(e.at("latest", http.MethodGet, "/v1/ports?portgroup=bond0", "").json()["ports"]).To(HaveLen(1))
		Expect(e.at("latest", http.MethodGet, "/v1/ports?portgroup=bond0&node=host-1", "").status).To(Equal(http.StatusForbidden))
		Expect(e.at("latest", http.MethodPost, "/v1/portgroups/"+pg+"/ports", `{}`).status).To(Equal(http.StatusBadRequest))

		del := e.at("latest", http.MethodDelete, "/v1/portgroups/"+pg, "")
		Expect(del.status).To(Equal(http.StatusConflict))
		Expect(del.fault()["faultstring"]).To(Equal("Cannot complete the requested action because portgroup " + pg + " contains ports."))
		move := e.at("latest", http.MethodPatch, "/v1/portgroups/"+pg, `[{"op": "replace", "path": "/node_uuid", "value": "`+other+`"}]`)
		Expect(move.status).To(Equal(http.StatusConflict))
		Expect(e.at("latest", http.MethodGet, "/v1/portgroups/"+pg, "").json()).To(HaveKeyWithValue("node_uuid", node))

		join := e.at("latest", http.MethodPatch, "/v1/ports/"+port, `[{"op": "replace", "path": "/portgroup_uuid", "value": "`+foreign+`"}]`)
		Expect(join.status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.23", http.MethodPatch, "/v1/ports/"+port, `[{"op": "remove", "path": "/portgroup_uuid"}]`).status).To(Equal(http.StatusNotAcceptable))
		leave := e.at("latest", http.MethodPatch, "/v1/ports/"+port, `[{"op": "remove", "path": "/portgroup_uuid"}]`)
		Expect(leave.status).To(Equal(http.StatusOK), string(leave.raw))
		Expect(leave.json()).To(HaveKeyWithValue("portgroup_uuid", BeNil()))

		moved := e.at("latest", http.MethodPatch, "/v1/portgroups/"+pg, `[{"op": "replace", "path": "/node_uuid", "value": "`+other+`"}]`)
		Expect(moved.status).To(Equal(http.StatusOK), string(moved.raw))
		Expect(moved.json()).To(HaveKeyWithValue("node_uuid", other))
		Expect(e.at("latest", http.MethodDelete, "/v1/portgroups/"+pg, "").status).To(Equal(http.StatusNoContent))
		Expect(e.at("latest", http.MethodGet, "/v1/portgroups/"+pg, "").status).To(Equal(http.StatusNotFound))
	})

	It("takes no PXE-enabled port when it does not support standalone ports", func() {
		pg := createPG(`{"node_uuid": "NODE", "standalone_ports_supported": false}`)
		body := func(mac, pxe string) string {
			return `{"address": "` + mac + `", "node_uuid": "` + node + `", "portgroup_uuid": "` + pg + `"` + pxe + `}`
		}
		r := e.at("latest", http.MethodPost, "/v1/ports", body("aa:bb:cc:dd:ee:01", `, "pxe_enabled": true`))
		Expect(r.status).To(Equal(http.StatusConflict))
		Expect(r.fault()["faultstring"]).To(HavePrefix("Port group " + pg + " doesn't support standalone ports."))
		ports, err := e.store.ListPorts(context.Background(), db.PortFilter{}, dbAll, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(ports).To(BeEmpty())

		r = e.at("latest", http.MethodPost, "/v1/ports", body("aa:bb:cc:dd:ee:02", `, "pxe_enabled": false`))
		Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
		port := r.json()["uuid"].(string)
		enable := e.at("latest", http.MethodPatch, "/v1/ports/"+port, `[{"op": "replace", "path": "/pxe_enabled", "value": true}]`)
		Expect(enable.status).To(Equal(http.StatusConflict))
		Expect(e.at("latest", http.MethodGet, "/v1/ports/"+port, "").json()).To(HaveKeyWithValue("pxe_enabled", false))
	})

	It("keeps its ports on one physical network, on create and PATCH (409)", func() {
		pg := createPG(`{"node_uuid": "NODE", "name": "bond0"}`)
		port := func(mac, more string) response {
			return e.at("latest", http.MethodPost, "/v1/ports", `{"address": "`+mac+`", "node_uuid": "`+node+`"`+more+`}`)
		}
		member := port("aa:bb:cc:dd:ee:01", `, "portgroup_uuid": "`+pg+`", "physical_network": "physnet1"`)
		Expect(member.status).To(Equal(http.StatusCreated), string(member.raw))

		r := port("aa:bb:cc:dd:ee:02", `, "portgroup_uuid": "`+pg+`", "physical_network": "physnet2"`)
		Expect(r.status).To(Equal(http.StatusConflict))
		Expect(r.fault()["faultstring"]).To(Equal("Port with physical network physnet2 cannot become a member of port group " + pg +
			" which has ports in physical network physnet1."))
		r = port("aa:bb:cc:dd:ee:03", `, "portgroup_uuid": "`+pg+`"`)
		Expect(r.status).To(Equal(http.StatusConflict))
		Expect(r.fault()["faultstring"]).To(HavePrefix("Port with physical network None cannot"))
		second := port("aa:bb:cc:dd:ee:04", `, "portgroup_uuid": "`+pg+`", "physical_network": "physnet1"`)
		Expect(second.status).To(Equal(http.StatusCreated))

		moved := e.at("latest", http.MethodPatch, "/v1/ports/"+second.json()["uuid"].(string),
			`[{"op": "replace", "path": "/physical_network", "value": "physnet2"}]`)
		Expect(moved.status).To(Equal(http.StatusConflict))
		outsider := port("aa:bb:cc:dd:ee:05", `, "physical_network": "physnet2"`).json()["uuid"].(string)
		joined := e.at("latest", http.MethodPatch, "/v1/ports/"+outsider, `[{"op": "add", "path": "/portgroup_uuid", "value": "`+pg+`"}]`)
		Expect(joined.status).To(Equal(http.StatusConflict))

		members := e.at("latest", http.MethodGet, "/v1/portgroups/"+pg+"/ports?fields=uuid,physical_network", "").json()["ports"]
		Expect(members).To(HaveLen(2))
		Expect(members).To(HaveEach(HaveKeyWithValue("physical_network", "physnet1")))
		// The only member may move: the group then follows it.
		Expect(e.at("latest", http.MethodDelete, "/v1/ports/"+member.json()["uuid"].(string), "").status).To(Equal(http.StatusNoContent))
		Expect(e.at("latest", http.MethodPatch, "/v1/ports/"+second.json()["uuid"].(string),
			`[{"op": "replace", "path": "/physical_network", "value": "physnet2"}]`).status).To(Equal(http.StatusOK))
	})

	It("goes when its node is deleted", func() {
		createPG(`{"node_uuid": "NODE"}`)
		Expect(e.at("latest", http.MethodDelete, "/v1/nodes/"+node, "").status).To(Equal(http.StatusNoContent))
		Expect(pgCount()).To(BeZero())
	})
})

var _ = Describe("chassis and port groups on MySQL", func() {
	It("keeps the same conflicts and links", func() {
		e := mysqlEnv()
		ch := e.call(http.MethodPost, "/v1/chassis", `{"description": "rack"}`).json()["uuid"].(string)
		node := e.createNode(`, "chassis_uuid": "` + ch + `"`)
		r := e.at("latest", http.MethodPost, "/v1/portgroups", `{"node_uuid": "`+node+`", "name": "bond0", "address": "aa:bb:cc:00:00:01"}`)
		Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
		pg := r.json()["uuid"].(string)
		dup := e.at("latest", http.MethodPost, "/v1/portgroups", `{"node_uuid": "`+node+`", "name": "bond0"}`)
		Expect(dup.status).To(Equal(http.StatusConflict))
		Expect(dup.fault()["faultstring"]).To(Equal("A portgroup with name bond0 already exists."))

		port := e.at("latest", http.MethodPost, "/v1/ports", `{"address": "aa:bb:cc:dd:ee:01", "node_uuid": "`+node+`", "portgroup_uuid": "`+pg+`"}`)
		Expect(port.status).To(Equal(http.StatusCreated), string(port.raw))
		Expect(e.at("latest", http.MethodGet, "/v1/portgroups/bond0/ports?fields=portgroup_uuid", "").json()["ports"]).
			To(ConsistOf(HaveKeyWithValue("portgroup_uuid", pg)))
		Expect(e.at("latest", http.MethodDelete, "/v1/portgroups/"+pg, "").status).To(Equal(http.StatusConflict))
		Expect(e.call(http.MethodDelete, "/v1/chassis/"+ch, "").status).To(Equal(http.StatusBadRequest))

		Expect(e.at("latest", http.MethodDelete, "/v1/nodes/"+node, "").status).To(Equal(http.StatusNoContent))
		Expect(e.at("latest", http.MethodGet, "/v1/portgroups/"+pg, "").status).To(Equal(http.StatusNotFound))
		Expect(e.call(http.MethodDelete, "/v1/chassis/"+ch, "").status).To(Equal(http.StatusNoContent))
	})
})
