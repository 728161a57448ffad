package rpc

import (
	"context"

	"github.com/ferricbm/ferric/pkg/model"
)

// Port group methods. Creation needs no conductor (the API writes the
// row); updates and deletions take the node lock.
const (
	MethodUpdatePortgroup  = "update_portgroup"
	MethodDestroyPortgroup = "destroy_portgroup"
)

type PortgroupArgs struct {
	// Portgroup is the whole port group as the API patched it (unsaved),
	// NodeUUID naming its (possibly new) node, for update; for destroy
	// only UUID is read.
	Portgroup model.Portgroup `json:"portgroup"`
}

func (cc conductorClient) UpdatePortgroup(ctx context.Context, args PortgroupArgs) (model.Portgroup, error) {
	var r model.Portgroup
	err := cc.call(ctx, MethodUpdatePortgroup, args, &r)
	return r, err
}

func (cc conductorClient) DestroyPortgroup(ctx context.Context, args PortgroupArgs) error {
	return cc.call(ctx, MethodDestroyPortgroup, args, nil)
}
