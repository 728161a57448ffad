package apiservice_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/model"
)

// Node features of 1.34-1.49: traits, rescue, BIOS, abort of inspect wait,
// fault, conductor groups, reset_interfaces, protection and conductors.
var _ = Describe("node features of 1.37 to 1.49", func() {
	var e *env
	BeforeEach(func() {
		e = sqliteEnv(nil)
	})

	Describe("traits", func() {
		var uuid, traits string
		BeforeEach(func() {
			uuid = e.createNode("")
			traits = "/v1/nodes/" + uuid + "/traits"
		})
		list := func() []any { return e.at("1.37", http.MethodGet, traits, "").json()["traits"].([]any) }

		It("sets, adds, lists and removes traits", func() {
			Expect(list()).To(BeEmpty())
			Expect(e.at("1.37", http.MethodPut, traits, `{"traits": ["CUSTOM_A", "HW_CPU_X86_VMX", "CUSTOM_A"]}`).status).To(Equal(http.StatusNoContent))
			Expect(list()).To(Equal([]any{"CUSTOM_A", "HW_CPU_X86_VMX"}))
			Expect(e.at("1.37", http.MethodPut, traits+"/CUSTOM_B", "").status).To(Equal(http.StatusNoContent))
			Expect(e.at("1.37", http.MethodPut, traits+"/CUSTOM_B", "").status).To(Equal(http.StatusNoContent), "adding twice is fine")
			Expect(e.at("1.37", http.MethodGet, "/v1/nodes/"+uuid, "").json()["traits"]).To(Equal([]any{"CUSTOM_A", "HW_CPU_X86_VMX", "CUSTOM_B"}))
			Expect(e.at("1.36", http.MethodGet, "/v1/nodes/"+uuid, "").json()).NotTo(HaveKey("traits"))

			Expect(e.at("1.37", http.MethodDelete, traits+"/CUSTOM_A", "").status).To(Equal(http.StatusNoContent))
			Expect(list()).To(Equal([]any{"HW_CPU_X86_VMX", "CUSTOM_B"}))
			r := e.at("1.37", http.MethodDelete, traits+"/CUSTOM_A", "")
			Expect(r.status).To(Equal(http.StatusNotFound))
			Expect(r.fault()["faultstring"]).To(ContainSubstring("CUSTOM_A"))
			Expect(e.at("1.37", http.MethodDelete, traits, "").status).To(Equal(http.StatusNoContent))
			Expect(list()).To(BeEmpty())
			Expect(e.node(uuid).Reservation).To(BeNil())
		})

		It("refuses invalid traits and bodies, too many traits, PATCH and old versions", func() {
			for _, bad := range []string{"custom_a", "CUSTOM_", "CUSTOM_a-b", "NOTSTANDARD", "CUSTOM_" + strings.Repeat("X", 249)} {
				Expect(e.at("1.37", http.MethodPut, traits+"/"+bad, "").status).To(Equal(http.StatusBadRequest), bad)
			}
			for _, body := range []string{`{"traits": "CUSTOM_A"}`, `{"traits": [1]}`, `{}`, `{"traits": [], "x": 1}`, `{"traits": ["bad"]}`} {
				Expect(e.at("1.37", http.MethodPut, traits, body).status).To(Equal(http.StatusBadRequest), body)
			}
			many := make([]string, 51)
			for i := range many {
				many[i] = `"CUSTOM_T` + strings.Repeat("X", i) + `"`
			}
			r := e.at("1.37", http.MethodPut, traits, `{"traits": [`+strings.Join(many, ",")+`]}`)
			Expect(r.status).To(Equal(http.StatusBadRequest))
			Expect(r.fault()["faultstring"]).To(ContainSubstring("maximum is 50"))
			Expect(e.at("1.37", http.MethodPut, traits, `{"traits": [`+strings.Join(many[:50], ",")+`]}`).status).To(Equal(http.StatusNoContent))
			Expect(list()).To(HaveLen(50))

			Expect(e.at("latest", http.MethodPatch, "/v1/nodes/"+uuid, `[{"op": "add", "path": "/traits", "value": ["CUSTOM_A"]}]`).status).To(Equal(http.StatusBadRequest))
			// As Ironic's routing before traits: 406 for a read, 405 for a write.
			Expect(e.at("1.36", http.MethodGet, traits, "").status).To(Equal(http.StatusNotAcceptable))
			Expect(e.at("1.36", http.MethodPut, traits+"/CUSTOM_A", "").status).To(Equal(http.StatusMethodNotAllowed))
			Expect(e.at("1.36", http.MethodPut, traits, `{"traits": []}`).status).To(Equal(http.StatusMethodNotAllowed))
			Expect(e.at("1.36", http.MethodDelete, traits, "").status).To(Equal(http.StatusMethodNotAllowed))
			Expect(e.at("1.37", http.MethodGet, "/v1/nodes/"+newTestUUID()+"/traits", "").status).To(Equal(http.StatusNotFound))
		})
	})

	Describe("rescue", func() {
		It("rescues with a password that is never shown and unrescues", func() {
			uuid := e.createNode(`, "rescue_interface": "fake"`)
			e.setState(uuid, "active")
			prov := "/v1/nodes/" + uuid + "/states/provision"
			Expect(e.at("1.37", http.MethodPut, prov, `{"target": "rescue", "rescue_password": "pw"}`).status).To(Equal(http.StatusNotAcceptable))
			for _, body := range []string{`{"target": "rescue"}`, `{"target": "rescue", "rescue_password": "  "}`, `{"target": "active", "rescue_password": "pw"}`} {
				Expect(e.at("1.38", http.MethodPut, prov, body).status).To(Equal(http.StatusBadRequest), body)
			}
			r := e.at("1.38", http.MethodPut, prov, `{"target": "rescue", "rescue_password": "Top-Secret-1"}`)
			Expect(r.status).To(Equal(http.StatusAccepted))
			Eventually(e.provisionState(uuid)).Should(Equal("rescue"))
			for _, path := range []string{"/v1/nodes/" + uuid, "/v1/nodes/detail"} {
				raw := string(e.at("latest", http.MethodGet, path, "").raw)
				Expect(raw).NotTo(ContainSubstring("Top-Secret-1"))
				Expect(raw).NotTo(ContainSubstring("sha512$"))
			}
			stored := e.node(uuid).InstanceInfo
			Expect(stored).NotTo(HaveKey("rescue_password"))
			Expect(stored["hashed_rescue_password"]).NotTo(ContainSubstring("Top-Secret-1"))
			Expect(e.at("1.38", http.MethodGet, "/v1/nodes/"+uuid, "").json()).To(HaveKeyWithValue("rescue_interface", "fake"))
			Expect(e.at("1.37", http.MethodGet, "/v1/nodes/"+uuid, "").json()).NotTo(HaveKey("rescue_interface"))

			Expect(e.at("1.38", http.MethodPut, prov, `{"target": "unrescue"}`).status).To(Equal(http.StatusAccepted))
			Eventually(e.provisionState(uuid)).Should(Equal("active"))
		})

		It("refuses rescue on a node whose rescue interface is no-rescue", func() {
			uuid := e.createNode(`, "rescue_interface": "no-rescue"`)
			Expect(e.at("1.38", http.MethodGet, "/v1/nodes/"+uuid, "").json()).To(HaveKeyWithValue("rescue_interface", "no-rescue"))
			e.setState(uuid, "active")
			r := e.at("1.38", http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", `{"target": "rescue", "rescue_password": "pw"}`)
			Expect(r.status).To(Equal(http.StatusBadRequest))
			Expect(e.node(uuid).ProvisionState).To(HaveValue(Equal("active")))
		})
	})

	It("shows inspect wait from 1.39 and aborts it from 1.41", func() {
		uuid := e.createNode("")
		e.setState(uuid, "inspect wait")
		Expect(e.at("1.38", http.MethodGet, "/v1/nodes/"+uuid, "").json()).To(HaveKeyWithValue("provision_state", "inspecting"))
		Expect(e.at("1.39", http.MethodGet, "/v1/nodes/"+uuid, "").json()).To(HaveKeyWithValue("provision_state", "inspect wait"))
		prov := "/v1/nodes/" + uuid + "/states/provision"
		Expect(e.at("1.40", http.MethodPut, prov, `{"target": "abort"}`).status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.41", http.MethodPut, prov, `{"target": "abort"}`).status).To(Equal(http.StatusAccepted))
		Eventually(e.provisionState(uuid)).Should(Equal("inspect failed"))
		Expect(e.at("1.41", http.MethodGet, "/v1/nodes/"+uuid, "").json()["last_error"]).To(ContainSubstring("aborted"))
	})

	It("serves BIOS settings from 1.40", func() {
		plain := e.createNode(`, "bios_interface": "no-bios"`)
		Expect(e.at("1.40", http.MethodGet, "/v1/nodes/"+plain, "").json()).To(HaveKeyWithValue("bios_interface", "no-bios"))
		Expect(e.at("1.40", http.MethodGet, "/v1/nodes/"+plain+"/bios", "").json()).To(Equal(map[string]any{"bios": []any{}}))

		uuid := e.createNode(`, "bios_interface": "fake"`)
		bios := "/v1/nodes/" + uuid + "/bios"
		Expect(e.at("1.39", http.MethodGet, bios, "").status).To(Equal(http.StatusNotFound))
		Expect(e.at("1.39", http.MethodGet, "/v1/nodes/"+uuid, "").json()).NotTo(HaveKey("bios_interface"))
		list := e.at("1.40", http.MethodGet, bios, "").json()["bios"].([]any)
		Expect(list).To(HaveLen(2))
		first := list[0].(map[string]any)
		Expect(first).To(HaveKeyWithValue("name", "BootMode"))
		Expect(first).To(HaveKeyWithValue("value", "Uefi"))
		Expect(first["links"].([]any)[0]).To(HaveKeyWithValue("href", e.url+"/v1/nodes/"+uuid+"/bios/BootMode"))
		one := e.at("1.40", http.MethodGet, bios+"/ProcVirtualization", "").json()
		Expect(one).To(HaveKey("ProcVirtualization"))
		Expect(one["ProcVirtualization"]).To(HaveKeyWithValue("value", "Enabled"))
		Expect(e.at("1.40", http.MethodGet, bios+"/Nope", "").status).To(Equal(http.StatusNotFound))
		Expect(e.at("1.40", http.MethodGet, bios+"?x=1", "").status).To(Equal(http.StatusBadRequest))
	})

	It("shows and filters by fault from 1.42", func() {
		faulty, fine := e.createNode(""), e.createNode("")
		n := e.node(faulty)
		n.Fault = ptrTo("power failure")
		Expect(e.store.SaveNode(context.Background(), n)).To(Succeed())
		Expect(e.at("1.42", http.MethodGet, "/v1/nodes/"+faulty, "").json()).To(HaveKeyWithValue("fault", "power failure"))
		Expect(e.at("1.41", http.MethodGet, "/v1/nodes/"+faulty, "").json()).NotTo(HaveKey("fault"))
		list := e.at("1.42", http.MethodGet, "/v1/nodes?fault=power%20failure", "").json()["nodes"].([]any)
		Expect(list).To(HaveLen(1))
		Expect(list[0]).To(HaveKeyWithValue("uuid", faulty))
		Expect(e.at("1.42", http.MethodGet, "/v1/nodes?fault=clean%20failure", "").json()["nodes"]).To(BeEmpty())
		Expect(e.at("1.42", http.MethodGet, "/v1/nodes?fault=bogus", "").status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.41", http.MethodGet, "/v1/nodes?fault=power%20failure", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(fine).NotTo(Equal(faulty))
	})

	It("guards protection (1.48)", func() {
		uuid := e.createNode("")
		node := "/v1/nodes/" + uuid
		protect := `[{"op": "replace", "path": "/protected", "value": true}]`
		Expect(e.at("1.47", http.MethodPatch, node, protect).status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.48", http.MethodPatch, node, protect).status).To(Equal(http.StatusConflict), "not active")
		Expect(e.at("1.48", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "protected": true}`).status).To(Equal(http.StatusBadRequest))

		e.setState(uuid, "active")
		r := e.at("1.48", http.MethodPatch, node, `[{"op": "replace", "path": "/protected_reason", "value": "why"}]`)
		Expect(r.status).To(Equal(http.StatusBadRequest), "a reason needs protection")
		r = e.at("1.48", http.MethodPatch, node, `[{"op": "replace", "path": "/protected", "value": "true"}, {"op": "add", "path": "/protected_reason", "value": "prod"}]`)
		Expect(r.status).To(Equal(http.StatusOK))
		Expect(r.json()).To(HaveKeyWithValue("protected", true))
		Expect(r.json()).To(HaveKeyWithValue("protected_reason", "prod"))
		Expect(e.at("1.47", http.MethodGet, node, "").json()).NotTo(HaveKey("protected"))

		prov := node + "/states/provision"
		for _, target := range []string{"deleted", "rebuild"} {
			r := e.at("1.48", http.MethodPut, prov, `{"target": "`+target+`"}`)
			Expect(r.status).To(Equal(http.StatusForbidden), target)
			Expect(r.fault()["faultstring"]).To(ContainSubstring("protected"))
		}
		Expect(e.at("1.48", http.MethodPut, node+"/maintenance", "").status).To(Equal(http.StatusAccepted))
		Expect(e.at("1.48", http.MethodDelete, node, "").status).To(Equal(http.StatusForbidden))

		r = e.at("1.48", http.MethodPatch, node, `[{"op": "replace", "path": "/protected", "value": false}]`)
		Expect(r.status).To(Equal(http.StatusOK))
		Expect(r.json()).To(HaveKeyWithValue("protected_reason", BeNil()))
		Expect(e.at("1.48", http.MethodDelete, node, "").status).To(Equal(http.StatusNoContent))
	})

	It("stores automated_clean from 1.47 and shows deploy_step from 1.44", func() {
		uuid := e.createNode(`, "automated_clean": false`)
		Expect(e.at("1.47", http.MethodGet, "/v1/nodes/"+uuid, "").json()).To(HaveKeyWithValue("automated_clean", false))
		Expect(e.at("1.46", http.MethodGet, "/v1/nodes/"+uuid, "").json()).NotTo(HaveKey("automated_clean"))
		Expect(e.at("1.44", http.MethodGet, "/v1/nodes/"+uuid, "").json()).To(HaveKeyWithValue("deploy_step", map[string]any{}))
		Expect(e.at("1.43", http.MethodGet, "/v1/nodes/"+uuid, "").json()).NotTo(HaveKey("deploy_step"))
	})

	It("accepts ?detail= on nodes, ports, portgroups and chassis from 1.43", func() {
		uuid := e.createNode("")
		e.addPort(uuid, "52:54:00:aa:bb:01")
		for _, coll := range []string{"nodes", "ports", "portgroups", "chassis"} {
			Expect(e.at("1.42", http.MethodGet, "/v1/"+coll+"?detail=true", "").status).To(Equal(http.StatusBadRequest), coll)
			Expect(e.at("1.43", http.MethodGet, "/v1/"+coll+"?detail=true", "").status).To(Equal(http.StatusOK), coll)
		}
		nodes := e.at("1.43", http.MethodGet, "/v1/nodes?detail=true", "").json()["nodes"].([]any)
		Expect(nodes[0]).To(HaveKey("driver_info"))
		ports := e.at("1.43", http.MethodGet, "/v1/ports?detail=true", "").json()["ports"].([]any)
		Expect(ports[0]).To(HaveKey("extra"))
	})
})

var _ = Describe("conductor groups, reset_interfaces and conductors (1.45-1.49)", func() {
	var e *env
	BeforeEach(func() {
		e = sqliteEnv(func(c *config.Config) {
			c.Conductor.ConductorGroup = "racka"
			c.Conductor.EnabledHardwareTypes = []string{"fake-hardware", "ipmi"}
			// The API sees a conductor leave when it rebuilds its ring.
			c.Default.HashRingResetInterval = 500 * time.Millisecond
		})
	})

	It("lower-cases conductor groups and filters by them", func() {
		Expect(e.at("1.45", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "conductor_group": "RackA"}`).status).To(Equal(http.StatusNotAcceptable))
		r := e.at("1.46", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "conductor_group": "RackA"}`)
		Expect(r.status).To(Equal(http.StatusCreated))
		Expect(r.json()).To(HaveKeyWithValue("conductor_group", "racka"))
		uuid := r.json()["uuid"].(string)
		Expect(e.at("1.46", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "conductor_group": "rack a"}`).status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.46", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "conductor_group": "elsewhere"}`).status).To(Equal(http.StatusBadRequest))
		list := e.at("1.46", http.MethodGet, "/v1/nodes?conductor_group=RACKA", "").json()["nodes"].([]any)
		Expect(list).To(HaveLen(1))
		Expect(list[0]).To(HaveKeyWithValue("uuid", uuid))
		Expect(e.at("1.46", http.MethodGet, "/v1/nodes?conductor_group=other", "").json()["nodes"]).To(BeEmpty())
		Expect(e.at("1.45", http.MethodGet, "/v1/nodes?conductor_group=racka", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.45", http.MethodGet, "/v1/nodes/"+uuid, "").json()).NotTo(HaveKey("conductor_group"))
	})

	It("resets interfaces to the new driver's defaults only with a driver change", func() {
		r := e.at("1.46", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "conductor_group": "racka"}`)
		uuid := r.json()["uuid"].(string)
		node := "/v1/nodes/" + uuid
		toIPMI := `[{"op": "replace", "path": "/driver", "value": "ipmi"}]`
		r = e.at("1.45", http.MethodPatch, node+"?reset_interfaces=true", `[{"op": "add", "path": "/extra/a", "value": "b"}]`)
		Expect(r.status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.45", http.MethodPatch, node, toIPMI).status).To(Equal(http.StatusBadRequest), "fake interfaces are not ipmi's")
		r = e.at("1.45", http.MethodPatch, node+"?reset_interfaces=true", toIPMI)
		Expect(r.status).To(Equal(http.StatusOK))
		Expect(r.json()).To(HaveKeyWithValue("driver", "ipmi"))
		Expect(r.json()).To(HaveKeyWithValue("power_interface", "ipmitool"))
		Expect(r.json()).To(HaveKeyWithValue("deploy_interface", Not(Equal("fake"))))
	})

	It("lists and shows conductors from 1.49", func() {
		host := e.cfg.Default.Host
		ctx := context.Background()
		Expect(e.store.RegisterConductor(ctx, &model.Conductor{Hostname: "ghost", ConductorGroup: "racka"}, nil)).To(Succeed())
		Expect(e.store.UnregisterConductor(ctx, "ghost")).To(Succeed())

		Expect(e.at("1.48", http.MethodGet, "/v1/conductors", "").status).To(Equal(http.StatusNotFound))
		Expect(e.at("1.48", http.MethodGet, "/v1/conductors/"+host, "").status).To(Equal(http.StatusNotFound))
		Expect(e.at("1.48", http.MethodGet, "/v1", "").json()).NotTo(HaveKey("conductors"))
		Expect(e.at("1.49", http.MethodGet, "/v1", "").json()).To(HaveKey("conductors"))

		list := e.at("1.49", http.MethodGet, "/v1/conductors?sort_key=hostname", "").json()["conductors"].([]any)
		Expect(list).To(HaveLen(2))
		byName := map[string]map[string]any{}
		for _, it := range list {
			m := it.(map[string]any)
			Expect(m).To(HaveLen(4), "hostname, conductor_group, alive, links")
			byName[m["hostname"].(string)] = m
		}
		Expect(byName[host]).To(HaveKeyWithValue("alive", true))
		Expect(byName[host]).To(HaveKeyWithValue("conductor_group", "racka"))
		Expect(byName["ghost"]).To(HaveKeyWithValue("alive", false))
		Expect(byName[host]["links"].([]any)[1]).To(HaveKeyWithValue("href", e.url+"/conductors/"+host))

		detail := e.at("1.49", http.MethodGet, "/v1/conductors?detail=true", "").json()["conductors"].([]any)
		for _, it := range detail {
			m := it.(map[string]any)
			if m["hostname"] == host {
				Expect(m["drivers"]).To(ConsistOf("fake-hardware", "ipmi"))
				Expect(m).To(HaveKey("created_at"))
				Expect(m).To(HaveKey("updated_at"))
			}
		}
		one := e.at("1.49", http.MethodGet, "/v1/conductors/"+host, "").json()
		Expect(one).To(HaveKeyWithValue("hostname", host))
		Expect(one["drivers"]).To(ConsistOf("fake-hardware", "ipmi"))
		Expect(e.at("1.49", http.MethodGet, "/v1/conductors/"+host+"?fields=drivers", "").json()).To(HaveLen(2))
		sel := e.at("1.49", http.MethodGet, "/v1/conductors?fields=hostname,drivers", "").json()["conductors"].([]any)
		Expect(sel[0]).To(HaveLen(3))

		r := e.at("1.49", http.MethodGet, "/v1/conductors?limit=1&sort_key=hostname", "")
		Expect(r.json()["conductors"]).To(HaveLen(1))
		Expect(r.json()["next"]).To(ContainSubstring("marker=" + host))
		rest := e.at("1.49", http.MethodGet, "/v1/conductors?sort_key=hostname&marker="+host, "").json()["conductors"].([]any)
		Expect(rest).To(HaveLen(1))
		Expect(rest[0]).To(HaveKeyWithValue("hostname", "ghost"))

		for q, code := range map[string]int{
			"sort_key=alive": 400, "sort_key=drivers": 400, "sort_key=bogus": 400, "fields=bogus": 400,
			"detail=true&fields=hostname": 400, "marker=nobody": 404, "limit=0": 400, "colour=red": 400,
		} {
			Expect(e.at("1.49", http.MethodGet, "/v1/conductors?"+q, "").status).To(Equal(code), q)
		}
		Expect(e.at("1.49", http.MethodGet, "/v1/conductors/nobody", "").status).To(Equal(http.StatusNotFound))
	})

	It("shows each node's conductor from the hash ring and filters by it (1.49)", func() {
		host := e.cfg.Default.Host
		r := e.at("1.49", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "conductor_group": "racka"}`)
		Expect(r.status).To(Equal(http.StatusCreated))
		Expect(r.json()).To(HaveKeyWithValue("conductor", host))
		uuid := r.json()["uuid"].(string)
		Expect(e.at("1.49", http.MethodGet, "/v1/nodes/"+uuid, "").json()).To(HaveKeyWithValue("conductor", host))
		Expect(e.at("1.48", http.MethodGet, "/v1/nodes/"+uuid, "").json()).NotTo(HaveKey("conductor"))
		sel := e.at("1.49", http.MethodGet, "/v1/nodes/"+uuid+"?fields=conductor", "").json()
		Expect(sel).To(HaveKeyWithValue("conductor", host))
		Expect(sel).To(HaveLen(2))
		listed := e.at("1.49", http.MethodGet, "/v1/nodes?fields=uuid,conductor", "").json()["nodes"].([]any)
		Expect(listed[0]).To(HaveKeyWithValue("conductor", host))
		Expect(e.at("1.48", http.MethodGet, "/v1/nodes?fields=conductor", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.49", http.MethodGet, "/v1/nodes?sort_key=conductor", "").status).To(Equal(http.StatusBadRequest))

		Expect(e.at("1.49", http.MethodGet, "/v1/nodes?conductor="+host, "").json()["nodes"]).To(HaveLen(1))
		Expect(e.at("1.49", http.MethodGet, "/v1/nodes?conductor="+host+"&fields=uuid", "").json()["nodes"]).To(HaveLen(1))
		both := e.at("1.49", http.MethodGet, "/v1/nodes?conductor="+host+"&fields=driver,conductor,conductor_group", "").json()["nodes"].([]any)
		Expect(both).To(HaveLen(1))
		Expect(both[0]).To(HaveKeyWithValue("driver", "fake-hardware"))
		Expect(e.at("1.49", http.MethodGet, "/v1/nodes/detail?conductor=ghost", "").json()["nodes"]).To(BeEmpty())
		Expect(e.at("1.48", http.MethodGet, "/v1/nodes?conductor="+host, "").status).To(Equal(http.StatusNotAcceptable))

		Expect(e.cond.Stop(context.Background())).To(Succeed())
		Eventually(func() any {
			return e.at("1.49", http.MethodGet, "/v1/nodes/"+uuid, "").json()["conductor"]
		}, 30*time.Second).Should(BeNil(), "no live conductor serves it")
	})
})

var _ = Describe("node owner (1.50)", func() {
	It("stores an owner on create and PATCH, shows it and filters by it", func() {
		e := sqliteEnv(nil)
		r := e.at("1.50", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "owner": "project-a"}`)
		Expect(r.status).To(Equal(http.StatusCreated))
		Expect(r.json()).To(HaveKeyWithValue("owner", "project-a"))
		mine := r.json()["uuid"].(string)
		other := e.at("1.50", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware"}`).json()["uuid"].(string)
		Expect(e.at("1.50", http.MethodGet, "/v1/nodes/"+other, "").json()).To(HaveKeyWithValue("owner", BeNil()))

		owned := func(owner string) []string {
			return e.at("1.50", http.MethodGet, "/v1/nodes?owner="+owner, "").uuids("nodes")
		}
		Expect(owned("project-a")).To(ConsistOf(mine))
		Expect(owned("project-b")).To(BeEmpty())

		p := e.at("1.50", http.MethodPatch, "/v1/nodes/"+other, `[{"op": "add", "path": "/owner", "value": "project-b"}]`)
		Expect(p.status).To(Equal(http.StatusOK))
		Expect(owned("project-b")).To(ConsistOf(other))

		long := strings.Repeat("o", 256)
		Expect(e.at("1.50", http.MethodPatch, "/v1/nodes/"+other, `[{"op": "replace", "path": "/owner", "value": "`+long+`"}]`).status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.50", http.MethodGet, "/v1/nodes/"+other, "").json()).To(HaveKeyWithValue("owner", "project-b"), "a refused PATCH changes nothing")
		Expect(e.at("1.49", http.MethodGet, "/v1/nodes/"+mine, "").json()).NotTo(HaveKey("owner"))
	})
})

var _ = Describe("node description (1.51)", func() {
	It("stores a description on create and PATCH, shows it and filters by a part of it", func() {
		e := sqliteEnv(nil)
		r := e.at("1.51", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "description": "Rack 4, slot 12: 100% burned in"}`)
		Expect(r.status).To(Equal(http.StatusCreated))
		Expect(r.json()).To(HaveKeyWithValue("description", "Rack 4, slot 12: 100% burned in"))
		rack4 := r.json()["uuid"].(string)
		other := e.at("1.51", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware"}`).json()["uuid"].(string)
		Expect(e.at("1.51", http.MethodGet, "/v1/nodes/"+other, "").json()).To(HaveKeyWithValue("description", BeNil()))

		matching := func(part string) []string {
			return e.at("1.51", http.MethodGet, "/v1/nodes?description_contains="+url.QueryEscape(part), "").uuids("nodes")
		}
		Expect(matching("RACK 4")).To(ConsistOf(rack4), "the match ignores case")
		Expect(matching("100%")).To(ConsistOf(rack4), "%% is matched literally")
		Expect(matching("0% b")).To(ConsistOf(rack4))
		Expect(matching("1_0")).To(BeEmpty(), "_ is matched literally")
		Expect(matching("rack 5")).To(BeEmpty())

		p := e.at("1.51", http.MethodPatch, "/v1/nodes/"+other, `[{"op": "add", "path": "/description", "value": "spare in rack 5"}]`)
		Expect(p.status).To(Equal(http.StatusOK))
		Expect(matching("rack 5")).To(ConsistOf(other))

		long := strings.Repeat("d", 4097)
		Expect(e.at("1.51", http.MethodPatch, "/v1/nodes/"+other, `[{"op": "replace", "path": "/description", "value": "`+long+`"}]`).status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.51", http.MethodGet, "/v1/nodes/"+other, "").json()).To(HaveKeyWithValue("description", "spare in rack 5"), "a refused PATCH changes nothing")

		By("hiding it below 1.51")
		Expect(e.at("1.50", http.MethodGet, "/v1/nodes/"+rack4, "").json()).NotTo(HaveKey("description"))
		Expect(e.at("1.50", http.MethodGet, "/v1/nodes?description_contains=rack", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.50", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "description": "x"}`).status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.50", http.MethodPatch, "/v1/nodes/"+other, `[{"op": "remove", "path": "/description"}]`).status).To(Equal(http.StatusNotAcceptable))
	})
})

func ptrTo[T any](v T) *T { return &v }
