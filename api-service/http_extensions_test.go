package apiservice_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// node reads a node straight from the database.
func (e *env) node(uuid string) *model.Node {
	n, err := e.store.GetNode(context.Background(), uuid)
	Expect(err).NotTo(HaveOccurred())
	return n
}

// setState puts a node into a provision state directly, as if an earlier
// operation had left it there.
func (e *env) setState(uuid string, state states.State) {
	n := e.node(uuid)
	n.SetState(state, "")
	Expect(e.store.SaveNode(context.Background(), n)).To(Succeed())
}

func (e *env) addPort(uuid, mac string) {
	n := e.node(uuid)
	Expect(e.store.CreatePort(context.Background(), &model.Port{UUID: newTestUUID(), Address: mac, NodeID: n.ID, PXEEnabled: true})).To(Succeed())
}

var uuidSeq int

func newTestUUID() string {
	uuidSeq++
	return fmt.Sprintf("7e1c4a2b-0000-4000-8000-%012d", uuidSeq)
}

func (e *env) provisionState(uuid string) func() string {
	return func() string {
		if s := e.node(uuid).ProvisionState; s != nil {
			return *s
		}
		return ""
	}
}

const wait = 20 * time.Second

var _ = Describe("RAID, console, NMI and vendor endpoints", func() {
	var e *env
	BeforeEach(func() { e = sqliteEnv(nil) })
	mirror := `{"logical_disks": [{"raid_level": "1", "size_gb": 100, "is_root_volume": true}]}`

	It("sets the target RAID configuration from 1.12 and builds it in a manual clean from 1.15", func() {
		uuid := e.createNode("")
		path := "/v1/nodes/" + uuid + "/states/raid"
		Expect(e.at("1.11", http.MethodPut, path, mirror).status).To(Equal(http.StatusNotAcceptable))
		r := e.at("1.12", http.MethodPut, path, mirror)
		Expect(r.status).To(Equal(http.StatusNoContent))
		Expect(r.raw).To(BeEmpty())
		n := e.at("1.12", http.MethodGet, "/v1/nodes/"+uuid, "").json()
		Expect(n["target_raid_config"]).To(HaveKeyWithValue("logical_disks", HaveLen(1)))
		Expect(n["raid_config"]).To(BeEmpty())
		Expect(e.at("1.12", http.MethodGet, "/v1/nodes/"+uuid+"/states", "").json()).To(HaveKey("target_raid_config"))

		bad := e.at("1.12", http.MethodPut, path, `{"logical_disks": [{"raid_level": "1"}]}`)
		Expect(bad.status).To(Equal(http.StatusBadRequest))
		Expect(bad.fault()["faultstring"]).To(ContainSubstring("'size_gb' is a required property"))

		e.setState(uuid, "manageable")
		clean := `{"target": "clean", "clean_steps": [{"interface": "raid", "step": "create_configuration"}]}`
		Expect(e.at("1.14", http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", clean).status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.15", http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", `{"target": "clean"}`).status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.15", http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", clean).status).To(Equal(http.StatusAccepted))
		Eventually(func() map[string]any { return e.node(uuid).RAIDConfig }).WithTimeout(wait).Should(HaveKey("logical_disks"))
		Eventually(e.provisionState(uuid)).WithTimeout(wait).Should(Equal("manageable"))

		noRAID := e.createNode(`, "raid_interface": "no-raid"`)
		nf := e.at("1.31", http.MethodPut, "/v1/nodes/"+noRAID+"/states/raid", mirror)
		Expect(nf.status).To(Equal(http.StatusNotFound))
		Expect(nf.fault()["faultstring"]).To(Equal("Driver fake-hardware does not support raid (disabled or not implemented)."))
	})

	It("describes the driver's logical disk properties from 1.12", func() {
		path := "/v1/drivers/fake-hardware/raid/logical_disk_properties"
		Expect(e.at("1.11", http.MethodGet, path, "").status).To(Equal(http.StatusNotAcceptable))
		r := e.at("1.12", http.MethodGet, path, "")
		Expect(r.status).To(Equal(http.StatusOK))
		Expect(r.json()).To(HaveKey("raid_level"))
		Expect(r.json()).To(HaveKey("size_gb"))
		Expect(e.at("1.12", http.MethodGet, "/v1/drivers/ipmi/raid/logical_disk_properties", "").status).To(Equal(http.StatusNotFound))
	})

	It("enables, shows and disables a console, fake-hardware's default being fake", func() {
		uuid := e.createNode("")
		path := "/v1/nodes/" + uuid + "/states/console"
		Expect(e.call(http.MethodGet, path, "").json()).To(Equal(map[string]any{"console_enabled": false, "console_info": nil}))
		r := e.call(http.MethodPut, path, `{"enabled": true}`)
		Expect(r.status).To(Equal(http.StatusAccepted))
		Expect(r.header.Get("Location")).To(Equal(e.url + path))
		Eventually(func() bool { return e.node(uuid).ConsoleEnabled }).WithTimeout(wait).Should(BeTrue())
		got := e.call(http.MethodGet, path, "").json()
		Expect(got).To(HaveKeyWithValue("console_enabled", true))
		Expect(got["console_info"]).To(HaveKeyWithValue("type", "fake"))
		Expect(e.call(http.MethodGet, "/v1/nodes/states/console/"+uuid, "").json()).To(Equal(got), "Ironic's older path")
		Expect(e.call(http.MethodGet, "/v1/nodes/"+uuid+"/states", "").json()).To(HaveKeyWithValue("console_enabled", true))
		Eventually(func() *string { return e.node(uuid).Reservation }).WithTimeout(wait).Should(BeNil())
		Expect(e.call(http.MethodPut, path, `{"enabled": "false"}`).status).To(Equal(http.StatusAccepted))
		Eventually(func() bool { return e.node(uuid).ConsoleEnabled }).WithTimeout(wait).Should(BeFalse())

		Expect(e.call(http.MethodPut, path, `{}`).status).To(Equal(http.StatusBadRequest))
		Expect(e.call(http.MethodPut, path, `{"enabled": true, "mode": "x"}`).status).To(Equal(http.StatusBadRequest))
		plain := e.createNode(`, "console_interface": "no-console"`)
		nc := e.call(http.MethodPut, "/v1/nodes/"+plain+"/states/console", `{"enabled": true}`)
		Expect(nc.status).To(Equal(http.StatusBadRequest))
		Expect(nc.fault()["faultstring"]).To(Equal("Driver fake-hardware does not support console (disabled or not implemented)."))
	})

	It("injects NMIs from 1.29", func() {
		uuid := e.createNode("")
		path := "/v1/nodes/" + uuid + "/management/inject_nmi"
		Expect(e.at("1.28", http.MethodPut, path, `{}`).status).To(Equal(http.StatusNotFound))
		r := e.at("1.29", http.MethodPut, path, `{}`)
		Expect(r.status).To(Equal(http.StatusNoContent))
		Expect(r.raw).To(BeEmpty())
		Expect(e.at("1.29", http.MethodPut, path, `{"force": true}`).status).To(Equal(http.StatusBadRequest))
	})

	It("discovers and calls node and driver vendor methods", func() {
		uuid := e.createNode("")
		methods := e.call(http.MethodGet, "/v1/nodes/"+uuid+"/vendor_passthru/methods", "")
		Expect(methods.status).To(Equal(http.StatusOK))
		Expect(methods.json()).To(HaveKeyWithValue("record", map[string]any{"http_methods": []any{"POST"}, "async": true,
			"description": "Stores the request body in the node's driver_internal_info.", "attach": false, "require_exclusive_lock": true}))
		echo := e.call(http.MethodPut, "/v1/nodes/"+uuid+"/vendor_passthru?method=echo", `{"a": [1, 2]}`)
		Expect(echo.status).To(Equal(http.StatusOK))
		Expect(echo.json()).To(Equal(map[string]any{"a": []any{1.0, 2.0}}))
		rec := e.call(http.MethodPost, "/v1/nodes/"+uuid+"/vendor_passthru?method=record", `{"k": "v"}`)
		Expect(rec.status).To(Equal(http.StatusAccepted))
		Eventually(func() any { return e.node(uuid).DriverInternalInfo["fake_vendor_record"] }).WithTimeout(wait).Should(Equal(map[string]any{"k": "v"}))
		unknown := e.call(http.MethodPost, "/v1/nodes/"+uuid+"/vendor_passthru?method=hello", `{}`)
		Expect(unknown.status).To(Equal(http.StatusBadRequest))
		Expect(unknown.fault()["faultstring"]).To(Equal("No handler for method hello"))
		Expect(e.call(http.MethodDelete, "/v1/nodes/"+uuid+"/vendor_passthru?method=record", "").status).To(Equal(http.StatusBadRequest))

		dm := e.call(http.MethodGet, "/v1/drivers/fake-hardware/vendor_passthru/methods", "")
		Expect(dm.status).To(Equal(http.StatusOK))
		Expect(dm.json()["echo"]).NotTo(HaveKey("require_exclusive_lock"))
		Expect(dm.json()["echo"]).To(HaveKeyWithValue("async", false))
		de := e.call(http.MethodGet, "/v1/drivers/fake-hardware/vendor_passthru?method=echo", "")
		Expect(de.status).To(Equal(http.StatusOK))
		Expect(de.json()).To(BeEmpty())
		Expect(e.call(http.MethodPost, "/v1/drivers/fake-hardware/vendor_passthru?method=record", `{"x": 1}`).status).To(Equal(http.StatusAccepted))
		Expect(e.call(http.MethodPost, "/v1/drivers/fake-hardware/vendor_passthru", `{}`).fault()["faultstring"]).To(Equal("Missing mandatory parameter: method"))
		Expect(e.call(http.MethodGet, "/v1/drivers/ipmi/vendor_passthru/methods", "").status).To(Equal(http.StatusNotFound))

		noVendor := e.createNode(`, "vendor_interface": "no-vendor"`)
		nv := e.call(http.MethodGet, "/v1/nodes/"+noVendor+"/vendor_passthru/methods", "")
		Expect(nv.status).To(Equal(http.StatusBadRequest))
		Expect(nv.fault()["faultstring"]).To(Equal("Driver fake-hardware does not support vendor (disabled or not implemented)."))
	})
})

var _ = Describe("driver properties and details", func() {
	var e *env
	BeforeEach(func() { e = sqliteEnv(nil) })

	It("links and serves properties from 1.14", func() {
		Expect(e.at("1.13", http.MethodGet, "/v1/drivers/fake-hardware", "").json()).NotTo(HaveKey("properties"))
		d := e.at("1.14", http.MethodGet, "/v1/drivers/fake-hardware", "").json()
		Expect(d["properties"]).To(ContainElement(map[string]any{"href": e.url + "/v1/drivers/fake-hardware/properties", "rel": "self"}))
		p := e.call(http.MethodGet, "/v1/drivers/fake-hardware/properties", "")
		Expect(p.status).To(Equal(http.StatusOK))
		Expect(p.json()).To(HaveKeyWithValue("fake_latency", ContainSubstring("power and management call")))
		Expect(p.json()).To(HaveKey("fake_failure_rate"))
		Expect(p.json()).To(HaveKey("fake_timeout_rate"))
		Expect(e.call(http.MethodGet, "/v1/drivers/ipmi/properties", "").status).To(Equal(http.StatusNotFound))
	})

	It("shows type from 1.30 and interfaces with detail", func() {
		Expect(e.at("1.29", http.MethodGet, "/v1/drivers?detail=true", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.29", http.MethodGet, "/v1/drivers?type=dynamic", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.29", http.MethodGet, "/v1/drivers/fake-hardware", "").json()).NotTo(HaveKey("type"))

		short := e.at("1.30", http.MethodGet, "/v1/drivers", "").json()["drivers"].([]any)[0].(map[string]any)
		Expect(short).To(HaveKeyWithValue("type", "dynamic"))
		Expect(short).NotTo(HaveKey("default_power_interface"))
		detail := e.at("1.30", http.MethodGet, "/v1/drivers?detail=True", "").json()["drivers"].([]any)[0].(map[string]any)
		Expect(detail).To(HaveKeyWithValue("default_power_interface", "fake"))
		Expect(detail).To(HaveKeyWithValue("default_raid_interface", "fake"))
		Expect(detail).To(HaveKeyWithValue("enabled_raid_interfaces", []any{"fake", "no-raid"}))
		Expect(detail).To(HaveKeyWithValue("enabled_network_interfaces", []any{"noop", "flat"}))
		Expect(detail).NotTo(HaveKey("default_storage_interface"), "1.33")
		Expect(detail).NotTo(HaveKey("default_rescue_interface"), "1.38")
		Expect(detail).NotTo(HaveKey("default_bios_interface"), "1.40")
		one := e.at("1.33", http.MethodGet, "/v1/drivers/fake-hardware", "").json()
		Expect(one).To(HaveKey("default_storage_interface"))
		Expect(one).To(HaveKeyWithValue("enabled_console_interfaces", []any{"fake", "no-console"}))

		Expect(e.at("1.30", http.MethodGet, "/v1/drivers?type=classic", "").json()["drivers"]).To(BeEmpty())
		Expect(e.at("1.30", http.MethodGet, "/v1/drivers?type=dynamic", "").json()["drivers"]).To(HaveLen(1))
		Expect(e.at("1.30", http.MethodGet, "/v1/drivers?type=other", "").status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.30", http.MethodGet, "/v1/drivers?detail=maybe", "").status).To(Equal(http.StatusBadRequest))
	})
})

var _ = Describe("agent lookup and heartbeat", func() {
	var e *env
	BeforeEach(func() { e = sqliteEnv(nil) })

	It("serves the ramdisk from 1.22: lookup issues the token once, heartbeat needs it", func() {
		uuid := e.createNode(`, "driver_info": {"ipmi_password": "hunter2"}`)
		e.addPort(uuid, "52:54:00:aa:bb:01")
		Expect(e.at("1.21", http.MethodGet, "/v1/lookup?addresses=52:54:00:aa:bb:01", "").status).To(Equal(http.StatusNotFound))
		notWaiting := e.at("1.22", http.MethodGet, "/v1/lookup?addresses=52:54:00:aa:bb:01", "")
		Expect(notWaiting.status).To(Equal(http.StatusNotFound))
		Expect(notWaiting.fault()["faultstring"]).To(Equal("Resource could not be found."))

		e.setState(uuid, "wait call-back")
		r := e.at("1.22", http.MethodGet, "/v1/lookup?addresses=zz,52:54:00:AA:BB:01", "")
		Expect(r.status).To(Equal(http.StatusOK))
		body := r.json()
		Expect(body["node"]).To(HaveKeyWithValue("uuid", uuid))
		Expect(body["node"]).NotTo(HaveKey("driver_info"))
		config := body["config"].(map[string]any)
		Expect(config).To(HaveKeyWithValue("heartbeat_timeout", 300.0))
		token := config["agent_token"].(string)
		Expect(len(token)).To(BeNumerically(">=", 40))
		Expect(r.raw).NotTo(ContainSubstring("hunter2"))

		again := e.at("1.22", http.MethodGet, "/v1/lookup?node_uuid="+uuid, "").json()
		Expect(again["config"]).To(HaveKeyWithValue("agent_token", "******"))
		Expect(again["node"]).To(HaveKeyWithValue("driver_internal_info", HaveKeyWithValue("agent_secret_token", "******")))
		shown := e.at("1.22", http.MethodGet, "/v1/nodes/"+uuid, "")
		Expect(shown.raw).NotTo(ContainSubstring(token))

		Expect(e.at("1.22", http.MethodGet, "/v1/lookup", "").status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.22", http.MethodGet, "/v1/lookup?addresses=nope", "").status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.22", http.MethodGet, "/v1/lookup?node_uuid=nope", "").status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.22", http.MethodGet, "/v1/lookup?addresses=52:54:00:aa:bb:99", "").status).To(Equal(http.StatusNotFound))

		hb := "/v1/heartbeat/" + uuid
		Expect(e.at("1.21", http.MethodPost, hb, `{"callback_url": "http://192.0.2.9:9999", "agent_token": "`+token+`"}`).status).To(Equal(http.StatusNotFound))
		missing := e.at("1.22", http.MethodPost, hb, `{"callback_url": "http://192.0.2.9:9999"}`)
		Expect(missing.status).To(Equal(http.StatusBadRequest))
		Expect(missing.fault()["faultstring"]).To(Equal("Agent token is required for heartbeat processing."))
		wrong := e.at("1.22", http.MethodPost, hb, `{"callback_url": "http://192.0.2.9:9999", "agent_token": "guess"}`)
		Expect(wrong.status).To(Equal(http.StatusBadRequest))
		Expect(wrong.fault()["faultstring"]).To(Equal("Invalid or missing agent token received."))
		Expect(e.at("1.22", http.MethodPost, hb, `{"callback_url": "ftp://192.0.2.9", "agent_token": "`+token+`"}`).status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.22", http.MethodPost, hb, `{"callback_url": "http://192.0.2.9:9999", "agent_token": "`+token+`", "agent_version": "9"}`).status).To(Equal(http.StatusBadRequest), "agent_version is 1.36")

		withCA := `{"callback_url": "https://192.0.2.9:9999", "agent_token": "` + token + `", "agent_verify_ca": "not a certificate"}`
		badCA := e.at("1.22", http.MethodPost, hb, withCA)
		Expect(badCA.status).To(Equal(http.StatusBadRequest))
		Expect(badCA.fault()["faultstring"]).To(ContainSubstring("Invalid agent_verify_ca"), "taken at every version, and checked by the conductor")
		Expect(e.node(uuid).DriverInternalInfo).NotTo(HaveKey("agent_url"))

		ok := e.at("1.22", http.MethodPost, hb, `{"callback_url": "http://192.0.2.9:9999", "agent_token": "`+token+`"}`)
		Expect(ok.status).To(Equal(http.StatusAccepted))
		Expect(ok.raw).To(BeEmpty())
		Expect(e.node(uuid).DriverInternalInfo).To(HaveKeyWithValue("agent_url", "http://192.0.2.9:9999"))
		moved := e.at("1.22", http.MethodPost, hb, `{"callback_url": "http://192.0.2.10:9999", "agent_token": "`+token+`"}`)
		Expect(moved.status).To(Equal(http.StatusBadRequest))
		Expect(moved.fault()["faultstring"]).To(Equal(`Detected change in ramdisk provided "callback_url"`))
		movedGuess := e.at("1.22", http.MethodPost, hb, `{"callback_url": "http://192.0.2.10:9999", "agent_token": "guess"}`)
		Expect(movedGuess.status).To(Equal(http.StatusBadRequest))
		Expect(movedGuess.fault()["faultstring"]).To(Equal("Invalid or missing agent token received."),
			"a caller without the token learns nothing from the callback_url comparison")
		movedNone := e.at("1.22", http.MethodPost, hb, `{"callback_url": "http://192.0.2.10:9999"}`)
		Expect(movedNone.fault()["faultstring"]).To(Equal("Agent token is required for heartbeat processing."))
		Expect(e.at("1.22", http.MethodPost, "/v1/heartbeat/1be26c0b-03f2-4d2e-ae87-c02d7f33c123", `{"callback_url": "", "agent_token": "x"}`).status).To(Equal(http.StatusNotFound))
	})

	It("lists lookup and heartbeat in /v1 from 1.22", func() {
		Expect(e.at("1.21", http.MethodGet, "/v1", "").json()).NotTo(HaveKey("lookup"))
		v1 := e.at("1.22", http.MethodGet, "/v1", "").json()
		Expect(v1["lookup"]).To(ContainElement(map[string]any{"href": e.url + "/v1/lookup/", "rel": "self"}))
		Expect(v1).To(HaveKey("heartbeat"))
	})
})

var _ = Describe("VIFs", func() {
	var e *env
	BeforeEach(func() { e = sqliteEnv(nil) })

	It("attaches, lists and detaches VIFs from 1.28", func() {
		uuid := e.createNode(`, "network_interface": "flat"`)
		e.addPort(uuid, "52:54:00:aa:bb:02")
		path := "/v1/nodes/" + uuid + "/vifs"
		Expect(e.at("1.27", http.MethodGet, path, "").status).To(Equal(http.StatusNotFound))
		Expect(e.at("1.27", http.MethodPost, path, `{"id": "vif-1"}`).status).To(Equal(http.StatusNotFound))
		Expect(e.at("1.27", http.MethodGet, path+"?bogus=1", "").status).To(Equal(http.StatusNotFound),
			"below 1.28 the endpoint does not exist, whatever the query")
		Expect(e.at("1.27", http.MethodDelete, path+"/vif-1", "").status).To(Equal(http.StatusNotFound))
		Expect(e.at("1.28", http.MethodGet, path, "").json()).To(Equal(map[string]any{"vifs": []any{}}))
		r := e.at("1.28", http.MethodPost, path, `{"id": "vif-1"}`)
		Expect(r.status).To(Equal(http.StatusNoContent))
		Expect(e.at("1.28", http.MethodGet, path, "").json()).To(Equal(map[string]any{"vifs": []any{map[string]any{"id": "vif-1"}}}))
		Expect(e.at("1.28", http.MethodPost, path, `{"id": "vif-1"}`).status).To(Equal(http.StatusConflict))
		full := e.at("1.28", http.MethodPost, path, `{"id": "vif-2"}`)
		Expect(full.status).To(Equal(http.StatusBadRequest))
		Expect(full.fault()["faultstring"]).To(Equal("Unable to attach VIF vif-2, not enough free physical ports."))
		Expect(e.at("1.28", http.MethodPost, path, `{}`).status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.28", http.MethodDelete, path+"/vif-1", "").status).To(Equal(http.StatusNoContent))
		Expect(e.at("1.28", http.MethodDelete, path+"/vif-1", "").status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.28", http.MethodGet, path, "").json()["vifs"]).To(BeEmpty())

		noop := e.createNode("")
		Expect(e.at("1.28", http.MethodPost, "/v1/nodes/"+noop+"/vifs", `{"id": "vif-3"}`).status).To(Equal(http.StatusNoContent))
		Expect(e.at("1.28", http.MethodGet, "/v1/nodes/"+noop+"/vifs", "").json()["vifs"]).To(BeEmpty(), "noop binds nothing")
	})
})

var _ = Describe("provisioning verbs, power and filters of 1.6-1.27", func() {
	var e *env
	BeforeEach(func() { e = sqliteEnv(nil) })
	provision := func(v, uuid, body string) int {
		return e.at(v, http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", body).status
	}

	It("inspects from 1.6 and records when", func() {
		uuid := e.createNode("")
		e.setState(uuid, "manageable")
		Expect(provision("1.5", uuid, `{"target": "inspect"}`)).To(Equal(http.StatusNotAcceptable))
		Expect(provision("1.6", uuid, `{"target": "inspect"}`)).To(Equal(http.StatusAccepted))
		Eventually(func() *time.Time { return e.node(uuid).InspectionFinishedAt }).WithTimeout(wait).ShouldNot(BeNil())
		Eventually(e.provisionState(uuid)).WithTimeout(wait).Should(Equal("manageable"))
		n := e.at("1.6", http.MethodGet, "/v1/nodes/"+uuid, "").json()
		Expect(n["inspection_started_at"]).NotTo(BeNil())
		Expect(n["inspection_finished_at"]).NotTo(BeNil())
	})

	It("adopts from 1.17", func() {
		uuid := e.createNode("")
		e.setState(uuid, "manageable")
		Expect(provision("1.16", uuid, `{"target": "adopt"}`)).To(Equal(http.StatusNotAcceptable))
		Expect(provision("1.17", uuid, `{"target": "adopt"}`)).To(Equal(http.StatusAccepted))
		Eventually(e.provisionState(uuid)).WithTimeout(wait).Should(Equal("active"))
	})

	It("aborts a clean waiting for its ramdisk from 1.13", func() {
		uuid := e.createNode("")
		e.setState(uuid, "clean wait")
		Expect(provision("1.12", uuid, `{"target": "abort"}`)).To(Equal(http.StatusNotAcceptable))
		Expect(provision("1.13", uuid, `{"target": "abort"}`)).To(Equal(http.StatusAccepted))
		Eventually(e.provisionState(uuid)).WithTimeout(wait).Should(Equal("clean failed"))
		Eventually(func() *string { return e.node(uuid).LastError }).WithTimeout(wait).Should(HaveValue(Equal("By request, the clean operation was aborted")))
		// The abort's tear-down may still hold the lock, which answers 409
		// before the state is looked at.
		Eventually(func() *string { return e.node(uuid).Reservation }).WithTimeout(wait).Should(BeNil())
		Expect(provision("1.13", uuid, `{"target": "abort"}`)).To(Equal(http.StatusBadRequest), "nothing to abort in clean failed")
	})

	It("soft powers off with a timeout from 1.27", func() {
		uuid := e.createNode("")
		path := "/v1/nodes/" + uuid + "/states/power"
		Expect(e.at("1.26", http.MethodPut, path, `{"target": "soft power off"}`).status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.26", http.MethodPut, path, `{"target": "power on", "timeout": 10}`).status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.27", http.MethodPut, path, `{"target": "power on", "timeout": 0}`).status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.27", http.MethodPut, path, `{"target": "power on", "timeout": 10}`).status).To(Equal(http.StatusAccepted))
		Eventually(func() *string { return e.node(uuid).PowerState }).WithTimeout(wait).Should(HaveValue(Equal("power on")))
		Eventually(func() *string { return e.node(uuid).Reservation }).WithTimeout(wait).Should(BeNil())
		Expect(e.at("1.27", http.MethodPut, path, `{"target": "soft rebooting", "timeout": 5}`).status).To(Equal(http.StatusAccepted))
		Eventually(func() *string { return e.node(uuid).Reservation }).WithTimeout(wait).Should(BeNil())
		Expect(e.at("1.27", http.MethodPut, path, `{"target": "soft power off"}`).status).To(Equal(http.StatusAccepted))
		Eventually(func() *string { return e.node(uuid).PowerState }).WithTimeout(wait).Should(HaveValue(Equal("power off")))
	})

	It("filters by driver from 1.16 and resource class from 1.21", func() {
		gold := e.createNode(`, "resource_class": "gold"`)
		e.createNode("")
		Expect(e.at("1.15", http.MethodGet, "/v1/nodes?driver=fake-hardware", "").status).To(Equal(http.StatusNotAcceptable))
		Expect(e.at("1.16", http.MethodGet, "/v1/nodes?driver=fake-hardware", "").json()["nodes"]).To(HaveLen(2))
		Expect(e.at("1.16", http.MethodGet, "/v1/nodes?driver=ipmi", "").json()["nodes"]).To(BeEmpty())
		Expect(e.at("1.20", http.MethodGet, "/v1/nodes?resource_class=gold", "").status).To(Equal(http.StatusNotAcceptable))
		byClass := e.at("1.21", http.MethodGet, "/v1/nodes?resource_class=gold", "").json()["nodes"].([]any)
		Expect(byClass).To(HaveLen(1))
		Expect(byClass[0]).To(HaveKeyWithValue("uuid", gold))
		Expect(e.at("1.20", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "resource_class": "x"}`).status).To(Equal(http.StatusNotAcceptable))
	})

	It("validates network and other interfaces on create and patch through the hardware type", func() {
		Expect(e.at("1.19", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "network_interface": "flat"}`).status).To(Equal(http.StatusNotAcceptable))
		r := e.at("1.20", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "network_interface": "flat"}`)
		Expect(r.status).To(Equal(http.StatusCreated))
		Expect(r.json()).To(HaveKeyWithValue("network_interface", "flat"))
		Expect(r.json()).NotTo(HaveKey("raid_interface"), "1.31")
		uuid := r.json()["uuid"].(string)
		bad := e.at("1.20", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "network_interface": "neutron"}`)
		Expect(bad.status).To(Equal(http.StatusBadRequest))
		Expect(bad.fault()["faultstring"]).To(ContainSubstring("Valid network interfaces are: noop, flat"))
		Expect(e.at("1.30", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "console_interface": "fake"}`).status).To(Equal(http.StatusNotAcceptable))
		full := e.at("1.31", http.MethodGet, "/v1/nodes/"+uuid, "").json()
		for _, f := range []string{"boot", "console", "deploy", "inspect", "management", "power", "raid", "vendor"} {
			Expect(full).To(HaveKey(f+"_interface"), f)
		}
		Expect(full).NotTo(HaveKey("storage_interface"), "1.33")
		Expect(e.at("1.31", http.MethodPatch, "/v1/nodes/"+uuid, `[{"op": "replace", "path": "/console_interface", "value": "serial"}]`).status).To(Equal(http.StatusBadRequest))
		ok := e.at("1.31", http.MethodPatch, "/v1/nodes/"+uuid, `[{"op": "replace", "path": "/console_interface", "value": "fake"}]`)
		Expect(ok.status).To(Equal(http.StatusOK))
		Expect(ok.json()).To(HaveKeyWithValue("console_interface", "fake"))
		Expect(e.at("1.30", http.MethodPatch, "/v1/nodes/"+uuid, `[{"op": "replace", "path": "/console_interface", "value": "fake"}]`).status).To(Equal(http.StatusNotAcceptable))
	})
})
