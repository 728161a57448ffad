package rpc

import (
	"encoding/json"

	"github.com/ferricbm/ferric/pkg/model"
)

// PortgroupArgs names the port group to destroy by Portgroup.UUID. An
// update since 1.2 sends PortgroupID, Patch and APIVersion, which the
// conductor applies to the group it reads under the node locks; the 1.0
// form, Portgroup alone, is the whole group as the caller patched it,
// NodeUUID naming its (possibly new) node.
type PortgroupArgs struct {
	PortgroupID string `json:"portgroup_id,omitempty"`
	// Patch is the Bare Metal API's JSON patch document of the group.
	Patch json.RawMessage `json:"patch,omitempty"`
	// APIVersion is the Bare Metal API microversion the patch is read at.
	APIVersion string          `json:"api_version,omitempty"`
	Portgroup  model.Portgroup `json:"portgroup,omitzero"`
}
