package apiservice_test

import (
	"fmt"
	"maps"
	"net/http"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/resource/microversion"
)

// keysAt is the key set an object shows at minor: base, and each gated key
// from its version on. The tables are written from Ironic's API reference,
// not read from the catalogues, so a row given the wrong version fails.
func keysAt(minor int, base []string, gated map[string]int) []string {
	keys := slices.Clone(base)
	for k, since := range gated {
		if minor >= since {
			keys = append(keys, k)
		}
	}
	return keys
}

var _ = Describe("every resource, at every version up to the newest served", func() {
	It("shows exactly the keys of its version", func() {
		e := sqliteEnv(nil)
		chassis := e.at("latest", http.MethodPost, "/v1/chassis", `{"description": "rack"}`).json()["uuid"].(string)
		node := e.createNode(`, "chassis_uuid": "` + chassis + `"`)
		port := e.at("latest", http.MethodPost, "/v1/ports", `{"node_uuid": "`+node+`", "address": "52:54:00:12:34:56"}`).json()["uuid"].(string)
		group := e.at("latest", http.MethodPost, "/v1/portgroups", `{"node_uuid": "`+node+`", "address": "52:54:00:12:34:57"}`).json()["uuid"].(string)
		connector := e.at("latest", http.MethodPost, "/v1/volume/connectors",
			`{"node_uuid": "`+node+`", "type": "iqn", "connector_id": "iqn.2010-10.org.openstack:walker"}`).json()["uuid"].(string)
		target := e.at("latest", http.MethodPost, "/v1/volume/targets",
			`{"node_uuid": "`+node+`", "volume_type": "iscsi", "boot_index": 0, "volume_id": "v-walker"}`).json()["uuid"].(string)

		allocation := e.at("1.52", http.MethodPost, "/v1/allocations", `{"resource_class": "walker"}`).json()["uuid"].(string)

		type resource struct {
			path  string
			since int
			base  []string
			gated map[string]int
		}
		resources := []resource{
			{"/v1/nodes/" + node, 1, []string{"uuid", "driver", "driver_info", "properties", "instance_info", "instance_uuid",
				"chassis_uuid", "extra", "power_state", "target_power_state", "provision_state", "target_provision_state",
				"provision_updated_at", "maintenance", "maintenance_reason", "last_error", "reservation", "console_enabled",
				"created_at", "updated_at", "links", "ports"},
				map[string]int{"driver_internal_info": 3, "name": 5, "inspection_started_at": 6, "inspection_finished_at": 6,
					"clean_step": 7, "raid_config": 12, "target_raid_config": 12, "states": 14, "network_interface": 20,
					"resource_class": 21, "portgroups": 24, "boot_interface": 31, "console_interface": 31,
					"deploy_interface": 31, "inspect_interface": 31, "management_interface": 31, "power_interface": 31,
					"raid_interface": 31, "vendor_interface": 31, "volume": 32, "storage_interface": 33, "traits": 37,
					"rescue_interface": 38, "bios_interface": 40, "fault": 42, "deploy_step": 44, "conductor_group": 46,
					"automated_clean": 47, "protected": 48, "protected_reason": 48, "conductor": 49, "owner": 50,
					"description": 51, "allocation_uuid": 52, "retired": 61, "retired_reason": 61, "lessee": 65}},
			{"/v1/ports/" + port, 1, []string{"uuid", "address", "node_uuid", "extra", "created_at", "updated_at", "links"},
				map[string]int{"internal_info": 18, "local_link_connection": 19, "pxe_enabled": 19, "portgroup_uuid": 24,
					"physical_network": 34, "is_smartnic": 53}},
			{"/v1/portgroups/" + group, 23, []string{"uuid", "name", "address", "node_uuid", "extra", "internal_info",
				"standalone_ports_supported", "created_at", "updated_at", "links"},
				map[string]int{"ports": 24, "mode": 26, "properties": 26}},
			{"/v1/chassis/" + chassis, 1, []string{"uuid", "description", "extra", "created_at", "updated_at", "links", "nodes"}, nil},
			{"/v1/volume/connectors/" + connector, 32, []string{"uuid", "node_uuid", "type", "connector_id", "extra",
				"created_at", "updated_at", "links"}, nil},
			{"/v1/volume/targets/" + target, 32, []string{"uuid", "node_uuid", "volume_type", "properties", "boot_index",
				"volume_id", "extra", "created_at", "updated_at", "links"}, nil},
			{"/v1/allocations/" + allocation, 52, []string{"uuid", "name", "node_uuid", "state", "last_error", "resource_class",
				"traits", "candidate_nodes", "extra", "created_at", "updated_at", "links"}, map[string]int{"owner": 60}},
		}
		for minor := 1; minor <= microversion.Max.Minor; minor++ {
			v := fmt.Sprintf("1.%d", minor)
			for _, r := range resources {
				if minor < r.since {
					continue
				}
				got := e.at(v, http.MethodGet, r.path, "")
				Expect(got.status).To(Equal(http.StatusOK), "%s at %s: %s", r.path, v, got.raw)
				Expect(slices.Collect(maps.Keys(got.json()))).To(ConsistOf(keysAt(minor, r.base, r.gated)), "%s at %s", r.path, v)
			}
		}
	})
})
