package apiservice_test

import (
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Every version from 1.1 to 1.31 is walked: each node field, endpoint,
// parameter and verb of api.md §1.7 is hidden (404), refused (406) or
// omitted below its version and works from it on.
var _ = Describe("versions 1.1 to 1.31", func() {
	It("gate every feature at its version", func() {
		e := newEnv(GinkgoT(), sqliteConnection(GinkgoT()), nil)
		r := e.at("1.10", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "name": "walker"}`)
		Expect(r.status).To(Equal(http.StatusCreated))
		uuid := r.json()["uuid"].(string)
		agent := e.createNode("")
		e.addPort(agent, "52:54:00:aa:bb:42")
		e.setState(agent, "wait call-back")

		fieldSince := map[string]int{
			"driver_internal_info": 3, "name": 5, "inspection_started_at": 6, "inspection_finished_at": 6,
			"clean_step": 7, "raid_config": 12, "target_raid_config": 12, "states": 14,
			"network_interface": 20, "resource_class": 21,
			"boot_interface": 31, "console_interface": 31, "deploy_interface": 31, "inspect_interface": 31,
			"management_interface": 31, "power_interface": 31, "raid_interface": 31, "vendor_interface": 31,
		}
		// gated requests: status below the version, and whether the status
		// from the version on must differ from it.
		type gate struct {
			since              int
			method, path, body string
			below              int
		}
		gates := []gate{
			{5, http.MethodGet, "/v1/nodes/walker", "", http.StatusNotFound},
			{8, http.MethodGet, "/v1/nodes/" + uuid + "?fields=uuid", "", http.StatusNotAcceptable},
			{9, http.MethodGet, "/v1/nodes?provision_state=available", "", http.StatusNotAcceptable},
			{6, http.MethodPut, "/v1/nodes/" + agent + "/states/provision", `{"target": "inspect"}`, http.StatusNotAcceptable},
			{12, http.MethodPut, "/v1/nodes/" + uuid + "/states/raid", `{}`, http.StatusNotAcceptable},
			{12, http.MethodGet, "/v1/drivers/fake-hardware/raid/logical_disk_properties", "", http.StatusNotAcceptable},
			{13, http.MethodPut, "/v1/nodes/" + uuid + "/states/provision", `{"target": "abort"}`, http.StatusNotAcceptable},
			{15, http.MethodPut, "/v1/nodes/" + agent + "/states/provision", `{"target": "clean", "clean_steps": [{"interface": "raid", "step": "delete_configuration"}]}`, http.StatusNotAcceptable},
			{16, http.MethodGet, "/v1/nodes?driver=fake-hardware", "", http.StatusNotAcceptable},
			{17, http.MethodPut, "/v1/nodes/" + agent + "/states/provision", `{"target": "adopt"}`, http.StatusNotAcceptable},
			{21, http.MethodGet, "/v1/nodes?resource_class=x", "", http.StatusNotAcceptable},
			{22, http.MethodGet, "/v1/lookup?addresses=52:54:00:aa:bb:42", "", http.StatusNotFound},
			{22, http.MethodPost, "/v1/heartbeat/" + agent, `{"callback_url": "", "agent_token": "x"}`, http.StatusNotFound},
			{27, http.MethodPut, "/v1/nodes/" + agent + "/states/power", `{"target": "soft power off"}`, http.StatusNotAcceptable},
			{28, http.MethodGet, "/v1/nodes/" + uuid + "/vifs", "", http.StatusNotFound},
			{29, http.MethodPut, "/v1/nodes/" + uuid + "/management/inject_nmi", `{}`, http.StatusNotFound},
			{30, http.MethodGet, "/v1/drivers?detail=true", "", http.StatusNotAcceptable},
		}
		creates := map[string]int{`"network_interface": "flat"`: 20, `"resource_class": "gold"`: 21, `"raid_interface": "no-raid"`: 31}

		for minor := 1; minor <= 31; minor++ {
			v := fmt.Sprintf("1.%d", minor)
			got := e.at(v, http.MethodGet, "/v1/nodes/"+uuid, "")
			Expect(got.status).To(Equal(http.StatusOK), v)
			Expect(got.header.Get("X-OpenStack-Ironic-API-Version")).To(Equal(v))
			n := got.json()
			for field, from := range fieldSince {
				if minor >= from {
					Expect(n).To(HaveKey(field), "%s at %s", field, v)
				} else {
					Expect(n).NotTo(HaveKey(field), "%s at %s", field, v)
				}
			}
			Expect(n).NotTo(HaveKey("storage_interface"), "1.33")
			if minor == 1 {
				Expect(n).To(HaveKeyWithValue("provision_state", BeNil()))
			} else {
				Expect(n).To(HaveKeyWithValue("provision_state", "available"), v)
			}
			st := e.at(v, http.MethodGet, "/v1/nodes/"+uuid+"/states", "").json()
			Expect(st).To(HaveKey("console_enabled"), v)
			if minor >= 12 {
				Expect(st).To(HaveKey("target_raid_config"), v)
			} else {
				Expect(st).NotTo(HaveKey("target_raid_config"), v)
			}
			drv := e.at(v, http.MethodGet, "/v1/drivers/fake-hardware", "").json()
			Expect(drv).To(HaveKey("hosts"), v)
			if minor >= 14 {
				Expect(drv).To(HaveKey("properties"), v)
			} else {
				Expect(drv).NotTo(HaveKey("properties"), v)
			}
			if minor >= 30 {
				Expect(drv).To(HaveKeyWithValue("type", "dynamic"), v)
				Expect(drv).To(HaveKey("default_vendor_interface"), v)
			} else {
				Expect(drv).NotTo(HaveKey("type"), v)
				Expect(drv).NotTo(HaveKey("default_vendor_interface"), v)
			}
			index := e.at(v, http.MethodGet, "/v1", "").json()
			Expect(index).To(HaveKey("nodes"), v)
			if minor >= 22 {
				Expect(index).To(HaveKey("lookup"), v)
			} else {
				Expect(index).NotTo(HaveKey("lookup"), v)
			}
			for _, g := range gates {
				status := e.at(v, g.method, g.path, g.body).status
				if minor >= g.since {
					Expect(status).NotTo(Equal(g.below), "%s %s at %s", g.method, g.path, v)
					Expect(status).To(BeNumerically("<", 500), "%s %s at %s", g.method, g.path, v)
				} else {
					Expect(status).To(Equal(g.below), "%s %s at %s", g.method, g.path, v)
				}
			}
			for field, since := range creates {
				status := e.at(v, http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", `+field+`}`).status
				if minor >= since {
					Expect(status).To(Equal(http.StatusCreated), "%s at %s", field, v)
				} else {
					Expect(status).To(Equal(http.StatusNotAcceptable), "%s at %s", field, v)
				}
			}
		}
	})
})
