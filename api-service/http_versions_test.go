package apiservice_test

import (
	"context"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
)

// Every version from 1.1 to the newest served is walked: each endpoint,
// parameter and verb of docs/api.md §1.4 is hidden (404), refused (406) or
// omitted below its version and works from it on. The objects' key sets
// are walked in http_keysets_test.go.
var _ = Describe("versions 1.1 to the newest served", func() {
	It("gate every feature at its version", func() {
		// The locked nodes below answer at once, without the conductor's
		// pauses between lock attempts.
		e := sqliteEnv(func(c *config.Config) { c.Conductor.NodeLockedRetryAttempts = 0 })
		r := e.at("1.10", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "name": "walker"}`)
		Expect(r.status).To(Equal(http.StatusCreated))
		uuid := r.json()["uuid"].(string)
		agent := e.createNode("")
		e.addPort(agent, "52:54:00:aa:bb:42")
		e.setState(agent, "wait call-back")
		// Nodes another conductor holds: an accepted request reaches the
		// conductor and ends in NodeLocked instead of changing them.
		active, waiting := e.createNode(""), e.createNode("")
		e.setState(active, "active")
		e.setState(waiting, "inspect wait")
		for _, n := range []string{active, waiting} {
			_, err := e.store.ReserveNode(context.Background(), n, "elsewhere", 1)
			Expect(err).NotTo(HaveOccurred())
		}
		host := e.cfg.Default.Host

		// gated requests: status below the version (checked from minor
		// "from" on, 1 if unset); from the version on it must differ.
		type gate struct {
			since              int
			method, path, body string
			below              int
			from               int
		}
		gates := []gate{
			{5, http.MethodGet, "/v1/nodes/walker", "", http.StatusNotFound, 0},
			{8, http.MethodGet, "/v1/nodes/" + uuid + "?fields=uuid", "", http.StatusNotAcceptable, 0},
			{9, http.MethodGet, "/v1/nodes?provision_state=available", "", http.StatusNotAcceptable, 0},
			{6, http.MethodPut, "/v1/nodes/" + agent + "/states/provision", `{"target": "inspect"}`, http.StatusNotAcceptable, 0},
			{12, http.MethodPut, "/v1/nodes/" + uuid + "/states/raid", `{}`, http.StatusNotAcceptable, 0},
			{12, http.MethodGet, "/v1/drivers/fake-hardware/raid/logical_disk_properties", "", http.StatusNotAcceptable, 0},
			{13, http.MethodPut, "/v1/nodes/" + uuid + "/states/provision", `{"target": "abort"}`, http.StatusNotAcceptable, 0},
			{15, http.MethodPut, "/v1/nodes/" + agent + "/states/provision", `{"target": "clean", "clean_steps": [{"interface": "raid", "step": "delete_configuration"}]}`, http.StatusNotAcceptable, 0},
			{16, http.MethodGet, "/v1/nodes?driver=fake-hardware", "", http.StatusNotAcceptable, 0},
			{17, http.MethodPut, "/v1/nodes/" + agent + "/states/provision", `{"target": "adopt"}`, http.StatusNotAcceptable, 0},
			{21, http.MethodGet, "/v1/nodes?resource_class=x", "", http.StatusNotAcceptable, 0},
			{22, http.MethodGet, "/v1/lookup?addresses=52:54:00:aa:bb:42", "", http.StatusNotFound, 0},
			{22, http.MethodPost, "/v1/heartbeat/" + agent, `{"callback_url": "", "agent_token": "x"}`, http.StatusNotFound, 0},
			{27, http.MethodPut, "/v1/nodes/" + agent + "/states/power", `{"target": "soft power off"}`, http.StatusNotAcceptable, 0},
			{28, http.MethodGet, "/v1/nodes/" + uuid + "/vifs", "", http.StatusNotFound, 0},
			{29, http.MethodPut, "/v1/nodes/" + uuid + "/management/inject_nmi", `{}`, http.StatusNotFound, 0},
			{30, http.MethodGet, "/v1/drivers?detail=true", "", http.StatusNotAcceptable, 0},
			{32, http.MethodGet, "/v1/volume", "", http.StatusNotFound, 0},
			{34, http.MethodGet, "/v1/ports?fields=uuid,physical_network", "", http.StatusNotAcceptable, 8},
			{35, http.MethodPut, "/v1/nodes/" + active + "/states/provision", `{"target": "rebuild", "configdrive": "http://192.0.2.1/cd.iso"}`, http.StatusBadRequest, 0},
			{36, http.MethodPost, "/v1/heartbeat/" + newTestUUID(), `{"callback_url": "http://192.0.2.9:9999", "agent_token": "x", "agent_version": "9"}`, http.StatusBadRequest, 22},
			{37, http.MethodGet, "/v1/nodes/" + uuid + "/traits", "", http.StatusNotAcceptable, 0},
			{37, http.MethodPut, "/v1/nodes/" + uuid + "/traits/CUSTOM_WALK", "", http.StatusMethodNotAllowed, 0},
			{38, http.MethodPut, "/v1/nodes/" + uuid + "/states/provision", `{"target": "rescue", "rescue_password": "pw"}`, http.StatusNotAcceptable, 0},
			{38, http.MethodPut, "/v1/nodes/" + active + "/states/provision", `{"target": "unrescue"}`, http.StatusNotAcceptable, 0},
			{40, http.MethodGet, "/v1/nodes/" + uuid + "/bios", "", http.StatusNotFound, 0},
			{41, http.MethodPut, "/v1/nodes/" + waiting + "/states/provision", `{"target": "abort"}`, http.StatusNotAcceptable, 0},
			{42, http.MethodGet, "/v1/nodes?fault=power%20failure", "", http.StatusNotAcceptable, 0},
			{43, http.MethodGet, "/v1/nodes?detail=true", "", http.StatusBadRequest, 0},
			{43, http.MethodGet, "/v1/ports?detail=true", "", http.StatusBadRequest, 0},
			{45, http.MethodPatch, "/v1/nodes/" + uuid + "?reset_interfaces=true", `[]`, http.StatusNotAcceptable, 0},
			{46, http.MethodGet, "/v1/nodes?conductor_group=x", "", http.StatusNotAcceptable, 0},
			{48, http.MethodPatch, "/v1/nodes/" + uuid, `[{"op": "replace", "path": "/protected", "value": false}]`, http.StatusNotAcceptable, 0},
			{49, http.MethodGet, "/v1/conductors", "", http.StatusNotFound, 0},
			{49, http.MethodGet, "/v1/conductors/" + host, "", http.StatusNotFound, 0},
			{49, http.MethodGet, "/v1/nodes?conductor=" + host, "", http.StatusNotAcceptable, 0},
			{50, http.MethodGet, "/v1/nodes?owner=x", "", http.StatusNotAcceptable, 0},
			{50, http.MethodPatch, "/v1/nodes/" + uuid, `[{"op": "add", "path": "/owner", "value": "walker"}]`, http.StatusNotAcceptable, 0},
			{51, http.MethodGet, "/v1/nodes?description_contains=walk", "", http.StatusNotAcceptable, 0},
			{51, http.MethodPatch, "/v1/nodes/" + uuid, `[{"op": "add", "path": "/description", "value": "walker"}]`, http.StatusNotAcceptable, 0},
			{52, http.MethodGet, "/v1/allocations", "", http.StatusNotFound, 0},
			{52, http.MethodPost, "/v1/allocations", `{"resource_class": "walker"}`, http.StatusMethodNotAllowed, 0},
			{53, http.MethodGet, "/v1/ports?fields=uuid,is_smartnic", "", http.StatusNotAcceptable, 8},
			{54, http.MethodPost, "/v1/events", `{"events": [{"event": "network.bind_port", "port_id": "` + newTestUUID() +
				`", "mac_address": "52:54:00:aa:bb:43", "status": "ACTIVE"}]}`, http.StatusNotFound, 0},
		}
		creates := map[string]int{`"network_interface": "flat"`: 20, `"resource_class": "gold"`: 21, `"raid_interface": "no-raid"`: 31,
			`"storage_interface": "noop"`: 33, `"rescue_interface": "no-rescue"`: 38, `"bios_interface": "no-bios"`: 40,
			`"conductor_group": ""`: 46, `"automated_clean": true`: 47, `"owner": "walker"`: 50}

		for minor := 1; minor <= microversion.Max.Minor; minor++ {
			v := fmt.Sprintf("1.%d", minor)
			got := e.at(v, http.MethodGet, "/v1/nodes/"+uuid, "")
			Expect(got.status).To(Equal(http.StatusOK), v)
			Expect(got.header.Get("X-OpenStack-Ironic-API-Version")).To(Equal(v))
			n := got.json()
			if minor >= 49 {
				Expect(n).To(HaveKeyWithValue("conductor", host))
			}
			wait := e.at(v, http.MethodGet, "/v1/nodes/"+waiting, "").json()
			if minor >= 39 {
				Expect(wait).To(HaveKeyWithValue("provision_state", "inspect wait"), v)
			} else {
				Expect(wait).To(HaveKeyWithValue("provision_state", "inspecting"), v)
			}
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
				for kind, since := range map[string]int{"storage": 33, "rescue": 38, "bios": 40} {
					if minor >= since {
						Expect(drv).To(HaveKey("default_"+kind+"_interface"), v)
					} else {
						Expect(drv).NotTo(HaveKey("default_"+kind+"_interface"), v)
					}
				}
			} else {
				Expect(drv).NotTo(HaveKey("type"), v)
				Expect(drv).NotTo(HaveKey("default_vendor_interface"), v)
			}
			index := e.at(v, http.MethodGet, "/v1", "").json()
			Expect(index).To(HaveKey("nodes"), v)
			for key, since := range map[string]int{"lookup": 22, "volume": 32, "conductors": 49} {
				if minor >= since {
					Expect(index).To(HaveKey(key), v)
				} else {
					Expect(index).NotTo(HaveKey(key), v)
				}
			}
			for _, g := range gates {
				if minor < g.from {
					continue
				}
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
