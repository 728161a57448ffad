package apiservice

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ferricbm/ferric/pkg/model"
)

// nodeFieldRules names the rule that guards a change of a node field with
// a rule of its own: Ironic's baremetal:node:update:<field> family and its
// older update_extra and update_instance_info. The driver and every
// <kind>_interface share update:driver_interfaces. A change of any field
// not named here is guarded by baremetal:node:update. Fields Ferric does
// not serve yet (network_data, shard, parent_node) get their entry with
// the field.
var nodeFieldRules = map[string]string{
	"extra":           "baremetal:node:update_extra",
	"instance_info":   "baremetal:node:update_instance_info",
	"driver_info":     "baremetal:node:update:driver_info",
	"properties":      "baremetal:node:update:properties",
	"chassis_uuid":    "baremetal:node:update:chassis_uuid",
	"instance_uuid":   "baremetal:node:update:instance_uuid",
	"lessee":          "baremetal:node:update:lessee",
	"owner":           "baremetal:node:update:owner",
	"driver":          "baremetal:node:update:driver_interfaces",
	"conductor_group": "baremetal:node:update:conductor_group",
	"name":            "baremetal:node:update:name",
	"retired":         "baremetal:node:update:retired",
	"retired_reason":  "baremetal:node:update:retired",
}

// nodeUpdateRules are the rules a PATCH that turns before into after must
// pass, in a stable order. Ironic's PATCH has no rule of its own for
// maintenance or automated_clean, but a PATCH must not do what the
// endpoints and rules made for them refuse: setting or clearing
// maintenance (or changing its reason) passes the rule of PUT or DELETE
// /maintenance, and turning automated cleaning off passes
// baremetal:node:disable_cleaning, as in Ironic.
func nodeUpdateRules(before, after *model.Node) ([]string, error) {
	changed, err := changedFields(before, after)
	if err != nil {
		return nil, err
	}
	var rules []string
	generic := len(changed) == 0
	for _, field := range changed {
		rule, ok := nodeFieldRules[field]
		switch {
		case ok:
		case strings.HasSuffix(field, "_interface"):
			rule = nodeFieldRules["driver"]
		case field == "maintenance" || field == "maintenance_reason":
			rule = "baremetal:node:clear_maintenance"
			if after.Maintenance {
				rule = "baremetal:node:set_maintenance"
			}
		case field == "automated_clean" && after.AutomatedClean != nil && !*after.AutomatedClean:
			rule = "baremetal:node:disable_cleaning"
		default:
			generic = true
			continue
		}
		if !slices.Contains(rules, rule) {
			rules = append(rules, rule)
		}
	}
	if generic {
		rules = append(rules, "baremetal:node:update")
	}
	return rules, nil
}

// changedFields are the API names of the fields that differ, sorted.
func changedFields(before, after *model.Node) ([]string, error) {
	b, err := fieldValues(before)
	if err != nil {
		return nil, err
	}
	a, err := fieldValues(after)
	if err != nil {
		return nil, err
	}
	var changed []string
	for name, v := range a {
		if !bytes.Equal(v, b[name]) {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	return changed, nil
}

// fieldValues are the node's fields as JSON; encoding/json writes object
// keys sorted, so equal values encode alike, and numbers beyond float64
// that older rows may hold compare as written.
func fieldValues(n *model.Node) (map[string]json.RawMessage, error) {
	raw, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("node fields: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("node fields: %w", err)
	}
	return m, nil
}
