package apiservice_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/model"
)

var _ = Describe("nodes", func() {
	var e *env

	BeforeEach(func() { e = sqliteEnv(nil) })

	stored := func(uuid string) *model.Node {
		n, err := e.store.GetNode(context.Background(), uuid)
		Expect(err).NotTo(HaveOccurred())
		return n
	}
	count := func() int {
		ns, err := e.store.ListNodes(context.Background(), dbNoFilter, dbAll, nil)
		Expect(err).NotTo(HaveOccurred())
		return len(ns)
	}

	Describe("create", func() {
		It("creates a node with 201, Location, defaults and masked secrets", func() {
			r := e.at("latest", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "name": "node-1", "driver_info": {"ipmi_password": "pw", "ipmi_address": "192.0.2.1"}}`)
			Expect(r.status).To(Equal(http.StatusCreated))
			n := r.json()
			uuid := n["uuid"].(string)
			Expect(r.header.Get("Location")).To(Equal(e.url + "/v1/nodes/" + uuid))
			Expect(n).To(HaveKeyWithValue("provision_state", "enroll"))
			Expect(n).To(HaveKeyWithValue("power_state", BeNil()))
			Expect(n).To(HaveKeyWithValue("updated_at", BeNil()))
			Expect(n["created_at"]).To(MatchRegexp(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$`))
			Expect(n["driver_info"]).To(Equal(map[string]any{"ipmi_password": "******", "ipmi_address": "192.0.2.1"}))
			Expect(n["extra"]).To(Equal(map[string]any{}))
			Expect(n["ports"]).To(HaveLen(2))
			db := stored(uuid)
			Expect(db.DriverInfo).To(HaveKeyWithValue("ipmi_password", "pw"), "the stored value is not masked")
			Expect(db.PowerInterface).NotTo(BeNil(), "interfaces get the hardware type's defaults")
		})

		It("creates available nodes before 1.11 and shows them as null at 1.1", func() {
			r := e.call(http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware"}`)
			Expect(r.status).To(Equal(http.StatusCreated))
			Expect(r.json()).To(HaveKeyWithValue("provision_state", BeNil()))
			Expect(r.json()).NotTo(HaveKey("name"))
			Expect(*stored(r.json()["uuid"].(string)).ProvisionState).To(Equal("available"))
		})

		DescribeTable("rejects bad requests in Ironic's format and stores nothing",
			func(body string, version string, code int, msg string) {
				r := e.at(version, http.MethodPost, "/v1/nodes", body)
				Expect(r.status).To(Equal(code))
				Expect(r.header.Get("Content-Type")).To(HavePrefix("application/json"))
				if code != http.StatusNotAcceptable {
					f := r.fault()
					Expect(f).To(HaveKeyWithValue("faultcode", "Client"))
					Expect(f).To(HaveKeyWithValue("debuginfo", BeNil()))
					Expect(f["faultstring"]).To(ContainSubstring(msg))
				}
				Expect(count()).To(BeZero())
			},
			Entry("invalid JSON", `{"driver": `, "latest", 400, "Invalid JSON"),
			Entry("not an object", `["driver"]`, "latest", 400, "must be a JSON object"),
			Entry("empty body", ``, "latest", 400, "empty"),
			Entry("unknown field", `{"driver": "fake-hardware", "colour": "red"}`, "latest", 400, "('colour' was unexpected)"),
			Entry("wrong type", `{"driver": "fake-hardware", "properties": "big"}`, "latest", 400, "is not of type 'object'"),
			Entry("malformed UUID", `{"driver": "fake-hardware", "uuid": "1234"}`, "latest", 400, "Expected a UUID but received 1234."),
			Entry("missing driver", `{"name": "a"}`, "latest", 400, "'driver' is a required property"),
			Entry("driver no conductor serves", `{"driver": "ipmi"}`, "latest", 400, `No valid host was found. Reason: No conductor service registered which supports driver ipmi for conductor group "". Ensure the driver is valid and enabled.`),
			Entry("a chassis", `{"driver": "fake-hardware", "chassis_uuid": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"}`, "latest", 400, "Chassis 1be26c0b-03f2-4d2e-ae87-c02d7f33c123 could not be found."),
			Entry("an invalid interface", `{"driver": "fake-hardware", "network_interface": "nope"}`, "1.19", 406, ""),
			Entry("a name before 1.5", `{"driver": "fake-hardware", "name": "x"}`, "1.4", 406, ""),
			Entry("an invalid name", `{"driver": "fake-hardware", "name": "bad name"}`, "latest", 400, "invalid name"),
		)

		It("refuses duplicate names with 409", func() {
			e.createNode(`, "name": "dup"`)
			r := e.at("latest", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "name": "dup"}`)
			Expect(r.status).To(Equal(http.StatusConflict))
			Expect(count()).To(Equal(1))
		})
	})

	Describe("show and list", func() {
		It("finds nodes by UUID and, from 1.5, by name", func() {
			uuid := e.createNode(`, "name": "web-1"`)
			Expect(e.at("1.5", http.MethodGet, "/v1/nodes/web-1", "").json()["uuid"]).To(Equal(uuid))
			Expect(e.call(http.MethodGet, "/v1/nodes/"+strings.ToUpper(strings.ReplaceAll(uuid, "-", "")), "").status).To(Equal(http.StatusOK))
			r := e.call(http.MethodGet, "/v1/nodes/web-1", "")
			Expect(r.status).To(Equal(http.StatusNotFound))
			Expect(r.fault()["faultstring"]).To(Equal("Node web-1 could not be found."))
			Expect(e.at("latest", http.MethodGet, "/v1/nodes/bad%20name", "").status).To(Equal(http.StatusBadRequest))
			Expect(e.at("latest", http.MethodGet, "/v1/nodes/"+uuid+"/detail", "").status).To(Equal(http.StatusNotFound))
		})

		It("selects fields from 1.8 and rejects unknown or newer ones", func() {
			uuid := e.createNode(`, "name": "n"`)
			r := e.at("1.8", http.MethodGet, "/v1/nodes/"+uuid+"?fields=uuid,driver", "")
			Expect(r.status).To(Equal(http.StatusOK))
			Expect(r.json()).To(HaveLen(3))
			Expect(e.at("1.7", http.MethodGet, "/v1/nodes/"+uuid+"?fields=uuid", "").status).To(Equal(http.StatusNotAcceptable))
			Expect(e.at("latest", http.MethodGet, "/v1/nodes/"+uuid+"?fields=uuid,bogus", "").status).To(Equal(http.StatusBadRequest))
			Expect(e.at("latest", http.MethodGet, "/v1/nodes/"+uuid+"?fields=lessee", "").status).To(Equal(http.StatusNotAcceptable))
			Expect(e.at("latest", http.MethodGet, "/v1/nodes/"+uuid+"?colour=red", "").status).To(Equal(http.StatusBadRequest))
		})

		It("lists short and detailed objects", func() {
			uuid := e.createNode(`, "name": "n1"`)
			list := e.at("latest", http.MethodGet, "/v1/nodes", "").json()["nodes"].([]any)
			Expect(list).To(HaveLen(1))
			Expect(list[0]).To(HaveKeyWithValue("uuid", uuid))
			Expect(list[0]).To(HaveLen(7), "instance_uuid, maintenance, power_state, provision_state, uuid, name, links")
			detail := e.at("latest", http.MethodGet, "/v1/nodes/detail", "").json()["nodes"].([]any)
			Expect(detail[0]).To(HaveKey("driver_info"))
			Expect(detail[0]).To(HaveKey("ports"))
			r := e.at("1.42", http.MethodGet, "/v1/nodes?detail=true", "")
			Expect(r.status).To(Equal(http.StatusBadRequest), "?detail needs 1.43")
			Expect(r.fault()["faultstring"]).To(Equal("Invalid query parameter ?detail=true received."))
			Expect(e.at("latest", http.MethodGet, "/v1/nodes/detail?fields=uuid", "").status).To(Equal(http.StatusBadRequest))
		})

		It("pages with next links that keep the filters", func() {
			var uuids []string
			for i := range 5 {
				uuids = append(uuids, e.createNode(fmt.Sprintf(`, "name": "n%d"`, i)))
			}
			r := e.at("latest", http.MethodGet, "/v1/nodes?limit=2&provision_state=enroll&maintenance=false", "")
			Expect(r.status).To(Equal(http.StatusOK))
			page := r.json()
			Expect(page["nodes"]).To(HaveLen(2))
			next := page["next"].(string)
			Expect(next).To(HavePrefix(e.url + "/v1/nodes?sort_key=id&sort_dir=asc&maintenance=False&provision_state=enroll&fields="))
			Expect(next).To(HaveSuffix("&limit=2&marker=" + uuids[1]))
			seen := []string{}
			for next != "" {
				r = e.at("latest", http.MethodGet, strings.TrimPrefix(next, e.url), "")
				Expect(r.status).To(Equal(http.StatusOK))
				for _, n := range r.json()["nodes"].([]any) {
					seen = append(seen, n.(map[string]any)["uuid"].(string))
				}
				next, _ = r.json()["next"].(string)
			}
			Expect(seen).To(Equal(uuids[2:]))

			desc := e.at("latest", http.MethodGet, "/v1/nodes?sort_key=name&sort_dir=desc", "").json()["nodes"].([]any)
			Expect(desc[0]).To(HaveKeyWithValue("name", "n4"))
		})

		DescribeTable("rejects bad list parameters",
			func(q, version string, code int) {
				Expect(e.at(version, http.MethodGet, "/v1/nodes?"+q, "").status).To(Equal(code))
			},
			Entry("zero limit", "limit=0", "latest", 400),
			Entry("text limit", "limit=x", "latest", 400),
			Entry("bad direction", "sort_dir=sideways", "latest", 400),
			Entry("unknown sort key", "sort_key=colour", "latest", 400),
			Entry("forbidden sort key", "sort_key=driver_info", "latest", 400),
			Entry("newer sort key", "sort_key=lessee", "latest", 406),
			Entry("malformed marker", "marker=abc", "latest", 400),
			Entry("unknown marker", "marker=1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "latest", 404),
			Entry("bad boolean", "maintenance=perhaps", "latest", 400),
			Entry("unknown provision state", "provision_state=sleeping", "latest", 400),
			Entry("provision_state before 1.9", "provision_state=active", "1.8", 406),
			Entry("driver before 1.16", "driver=x", "1.15", 406),
			Entry("unknown parameter", "colour=red", "latest", 400),
			Entry("fields before 1.8", "fields=uuid", "1.7", 406),
		)

		It("filters", func() {
			a := e.createNode(`, "maintenance": true`)
			e.createNode("")
			list := e.at("latest", http.MethodGet, "/v1/nodes?maintenance=TRUE", "").json()["nodes"].([]any)
			Expect(list).To(HaveLen(1))
			Expect(list[0]).To(HaveKeyWithValue("uuid", a))
			Expect(e.at("latest", http.MethodGet, "/v1/nodes?provision_state=enroll,active", "").json()["nodes"]).To(HaveLen(2))
		})
	})

	Describe("update", func() {
		It("patches through the conductor and renders the stored node", func() {
			uuid := e.createNode(`, "name": "n1", "driver_info": {"ipmi_password": "pw"}`)
			r := e.at("latest", http.MethodPatch, "/v1/nodes/n1", `[{"op": "add", "path": "/extra/rack", "value": "r12"}, {"op": "replace", "path": "/name", "value": "n2"}, {"op": "replace", "path": "/driver_info/ipmi_password", "value": "new"}]`)
			Expect(r.status).To(Equal(http.StatusOK))
			Expect(r.json()).To(HaveKeyWithValue("name", "n2"))
			Expect(r.json()["extra"]).To(Equal(map[string]any{"rack": "r12"}))
			Expect(r.json()["driver_info"]).To(HaveKeyWithValue("ipmi_password", "******"))
			Expect(r.json()["updated_at"]).NotTo(BeNil())
			n := stored(uuid)
			Expect(*n.Name).To(Equal("n2"))
			Expect(n.DriverInfo).To(HaveKeyWithValue("ipmi_password", "new"))
		})

		DescribeTable("rejects bad patches and changes nothing",
			func(patch, version string, code int, msg string) {
				uuid := e.createNode(`, "name": "keep", "extra": {"a": 1}`)
				before := stored(uuid)
				r := e.at(version, http.MethodPatch, "/v1/nodes/"+uuid, patch)
				Expect(r.status).To(Equal(code))
				if msg != "" {
					Expect(r.fault()["faultstring"]).To(ContainSubstring(msg))
				}
				after := stored(uuid)
				Expect(after.Extra).To(Equal(before.Extra))
				Expect(after.Name).To(Equal(before.Name))
				Expect(after.UpdatedAt).To(BeNil())
			},
			Entry("invalid JSON", `[{"op": "add"`, "latest", 400, "Invalid JSON"),
			Entry("not a list", `{"op": "add", "path": "/extra/b", "value": 1}`, "latest", 400, "JSON array"),
			Entry("a move op", `[{"op": "move", "from": "/extra/a", "path": "/extra/b"}]`, "latest", 400, ""),
			Entry("a bad path", `[{"op": "add", "path": "/extra/a.b", "value": 1}]`, "latest", 400, ""),
			Entry("a read-only path", `[{"op": "replace", "path": "/provision_state", "value": "active"}]`, "latest", 400, "Cannot patch /provision_state"),
			Entry("a newer path", `[{"op": "replace", "path": "/lessee", "value": "me"}]`, "latest", 406, ""),
			Entry("a name before 1.5", `[{"op": "replace", "path": "/name", "value": "x"}]`, "1.4", 406, ""),
			Entry("a missing key", `[{"op": "remove", "path": "/extra/zz"}]`, "latest", 400, "Couldn't apply patch"),
			Entry("a wrong type", `[{"op": "replace", "path": "/extra", "value": "x"}]`, "latest", 400, "is not of type 'object'"),
			Entry("the driver removed", `[{"op": "remove", "path": "/driver"}]`, "latest", 400, "'driver' is a required property"),
			Entry("an unserved driver", `[{"op": "replace", "path": "/driver", "value": "ipmi"}]`, "latest", 400, "No valid host was found"),
		)

		It("rejects reset_interfaces before 1.45", func() {
			uuid := e.createNode("")
			Expect(e.at("1.44", http.MethodPatch, "/v1/nodes/"+uuid+"?reset_interfaces=true", `[]`).status).To(Equal(http.StatusNotAcceptable))
		})

		It("answers 404 for an unknown node", func() {
			Expect(e.at("latest", http.MethodPatch, "/v1/nodes/1be26c0b-03f2-4d2e-ae87-c02d7f33c123", `[]`).status).To(Equal(http.StatusNotFound))
		})
	})

	Describe("delete", func() {
		It("deletes with 204 and the node is gone", func() {
			uuid := e.createNode("")
			r := e.at("latest", http.MethodDelete, "/v1/nodes/"+uuid, "")
			Expect(r.status).To(Equal(http.StatusNoContent))
			Expect(r.raw).To(BeEmpty())
			Expect(r.header.Get("Content-Type")).To(BeEmpty())
			Expect(e.at("latest", http.MethodGet, "/v1/nodes/"+uuid, "").status).To(Equal(http.StatusNotFound))
		})

		It("refuses associated nodes with 409", func() {
			uuid := e.createNode(`, "instance_uuid": "9e3f0c11-5d3a-4a8e-b1c2-7d6e5f4a3b21"`)
			Expect(e.at("latest", http.MethodDelete, "/v1/nodes/"+uuid, "").status).To(Equal(http.StatusConflict))
			Expect(count()).To(Equal(1))
		})
	})

	Describe("actions", func() {
		It("shows states", func() {
			uuid := e.createNode("")
			r := e.at("1.11", http.MethodGet, "/v1/nodes/"+uuid+"/states", "")
			Expect(r.status).To(Equal(http.StatusOK))
			Expect(r.json()).To(HaveKeyWithValue("provision_state", "enroll"))
			Expect(r.json()).To(HaveKeyWithValue("console_enabled", false))
			Expect(r.json()).NotTo(HaveKey("raid_config"))
		})

		It("changes power with 202 and a Location", func() {
			uuid := e.createNode("")
			r := e.at("latest", http.MethodPut, "/v1/nodes/"+uuid+"/states/power", `{"target": "power on"}`)
			Expect(r.status).To(Equal(http.StatusAccepted))
			Expect(r.raw).To(BeEmpty())
			Expect(r.header.Get("Location")).To(Equal(e.url + "/v1/nodes/" + uuid + "/states"))
			Eventually(func() *string { return stored(uuid).PowerState }).WithTimeout(10 * time.Second).Should(HaveValue(Equal("power on")))
			Expect(e.at("latest", http.MethodPut, "/v1/nodes/"+uuid+"/states/power", `{"target": "power nap"}`).status).To(Equal(http.StatusBadRequest))
			Expect(e.at("1.26", http.MethodPut, "/v1/nodes/"+uuid+"/states/power", `{"target": "soft power off"}`).status).To(Equal(http.StatusNotAcceptable))
		})

		It("moves a node through manage and provide", func() {
			uuid := e.createNode(`, "name": "p1"`)
			r := e.at("latest", http.MethodPut, "/v1/nodes/p1/states/provision", `{"target": "manage"}`)
			Expect(r.status).To(Equal(http.StatusAccepted))
			Expect(r.header.Get("Location")).To(Equal(e.url + "/v1/nodes/p1/states"))
			Eventually(func() *string { return stored(uuid).ProvisionState }).WithTimeout(10 * time.Second).Should(HaveValue(Equal("manageable")))
			Eventually(func() *string { return stored(uuid).Reservation }).WithTimeout(10 * time.Second).Should(BeNil())
			Expect(e.at("1.3", http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", `{"target": "provide"}`).status).To(Equal(http.StatusNotAcceptable))
			Expect(e.at("latest", http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", `{"target": "provide"}`).status).To(Equal(http.StatusAccepted))
			Eventually(func() *string { return stored(uuid).ProvisionState }).WithTimeout(20 * time.Second).Should(HaveValue(Equal("available")))
		})

		It("validates provision requests before dispatching", func() {
			uuid := e.createNode("")
			r := e.at("latest", http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", `{"target": "active"}`)
			Expect(r.status).To(Equal(http.StatusBadRequest))
			Expect(r.fault()["faultstring"]).To(Equal(`The requested action "active" can not be performed on node "` + uuid + `" while it is in state "enroll".`))
			Expect(e.at("latest", http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", `{"target": "manage", "x": 1}`).status).To(Equal(http.StatusBadRequest))
			Expect(e.at("1.14", http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", `{"target": "clean"}`).status).To(Equal(http.StatusNotAcceptable))
			Expect(e.at("latest", http.MethodPut, "/v1/nodes/1be26c0b-03f2-4d2e-ae87-c02d7f33c123/states/provision", `{"target": "manage"}`).status).To(Equal(http.StatusNotFound))
			Expect(*stored(uuid).ProvisionState).To(Equal("enroll"))
		})

		It("sets and clears maintenance", func() {
			uuid := e.createNode("")
			Expect(e.at("latest", http.MethodPut, "/v1/nodes/"+uuid+"/maintenance", `{"reason": "disk swap"}`).status).To(Equal(http.StatusAccepted))
			n := stored(uuid)
			Expect(n.Maintenance).To(BeTrue())
			Expect(n.MaintenanceReason).To(HaveValue(Equal("disk swap")))
			Expect(e.at("latest", http.MethodPut, "/v1/nodes/"+uuid+"/maintenance", `{"why": 1}`).status).To(Equal(http.StatusBadRequest))
			Expect(e.at("latest", http.MethodDelete, "/v1/nodes/"+uuid+"/maintenance", "").status).To(Equal(http.StatusAccepted))
			n = stored(uuid)
			Expect(n.Maintenance).To(BeFalse())
			Expect(n.MaintenanceReason).To(BeNil())
		})

		It("validates interfaces", func() {
			uuid := e.createNode("")
			r := e.at("latest", http.MethodGet, "/v1/nodes/"+uuid+"/validate", "")
			Expect(r.status).To(Equal(http.StatusOK))
			Expect(r.json()).To(HaveKey("power"))
			Expect(r.json()).To(HaveKey("deploy"))
			Expect(r.json()).NotTo(HaveKey("vendor"))
			Expect(e.at("latest", http.MethodGet, "/v1/nodes/validate?node="+uuid, "").json()).To(HaveKey("power"))
		})

		It("sets and reads the boot device", func() {
			uuid := e.createNode("")
			supported := e.at("latest", http.MethodGet, "/v1/nodes/"+uuid+"/management/boot_device/supported", "")
			Expect(supported.status).To(Equal(http.StatusOK))
			Expect(supported.json()["supported_boot_devices"]).To(ContainElement("pxe"))
			Expect(e.at("latest", http.MethodPut, "/v1/nodes/"+uuid+"/management/boot_device", `{"boot_device": "pxe", "persistent": true}`).status).To(Equal(http.StatusNoContent))
			got := e.at("latest", http.MethodGet, "/v1/nodes/"+uuid+"/management/boot_device", "")
			Expect(got.status).To(Equal(http.StatusOK))
			Expect(got.json()).To(HaveKeyWithValue("boot_device", "pxe"))
			Expect(e.at("latest", http.MethodPut, "/v1/nodes/"+uuid+"/management/boot_device", `{"persistent": true}`).status).To(Equal(http.StatusBadRequest))
		})
	})
})

var _ = Describe("every served version", func() {
	It("shows each node field from its version on and gates names and fields", func() {
		e := sqliteEnv(nil)
		r := e.at("1.10", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "name": "walker"}`)
		Expect(r.status).To(Equal(http.StatusCreated))
		uuid := r.json()["uuid"].(string)
		since := map[string]int{"driver_internal_info": 3, "name": 5, "inspection_started_at": 6, "inspection_finished_at": 6, "clean_step": 7}
		for minor := 1; minor <= 11; minor++ {
			v := fmt.Sprintf("1.%d", minor)
			got := e.at(v, http.MethodGet, "/v1/nodes/"+uuid, "")
			Expect(got.status).To(Equal(http.StatusOK), v)
			Expect(got.header.Get("X-OpenStack-Ironic-API-Version")).To(Equal(v))
			n := got.json()
			for field, from := range since {
				if minor >= from {
					Expect(n).To(HaveKey(field), v)
				} else {
					Expect(n).NotTo(HaveKey(field), v)
				}
			}
			if minor == 1 {
				Expect(n).To(HaveKeyWithValue("provision_state", BeNil()), v)
			} else {
				Expect(n).To(HaveKeyWithValue("provision_state", "available"), v)
			}
			Expect(n).NotTo(HaveKey("states"), "the states link is 1.14")
			byName := e.at(v, http.MethodGet, "/v1/nodes/walker", "").status
			fields := e.at(v, http.MethodGet, "/v1/nodes/"+uuid+"?fields=uuid", "").status
			if minor >= 5 {
				Expect(byName).To(Equal(http.StatusOK), v)
			} else {
				Expect(byName).To(Equal(http.StatusNotFound), v)
			}
			if minor >= 8 {
				Expect(fields).To(Equal(http.StatusOK), v)
			} else {
				Expect(fields).To(Equal(http.StatusNotAcceptable), v)
			}
		}
	})
})
