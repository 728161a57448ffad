package rpc

import (
	"context"
	"encoding/json"

	"github.com/ferricbm/ferric/pkg/model"
)

// Port group methods. Creation needs no conductor (the API writes the
// row); updates and deletions take the node lock.
const (
	MethodUpdatePortgroup  = "update_portgroup"
	MethodDestroyPortgroup = "destroy_portgroup"
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

func (cc conductorClient) UpdatePortgroup(ctx context.Context, args PortgroupArgs) (model.Portgroup, error) {
	var r model.Portgroup
	err := cc.call(ctx, MethodUpdatePortgroup, args, &r)
	return r, err
}

func (cc conductorClient) DestroyPortgroup(ctx context.Context, args PortgroupArgs) error {
	return cc.call(ctx, MethodDestroyPortgroup, args, nil)
}
