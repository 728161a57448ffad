package conductor

import (
	"context"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/rpc"
)

func networkInterface(t *task.Task) (driver.NetworkInterface, error) {
	_, ni, err := driver.RequireFor[driver.NetworkInterface](t, hwcatalog.Network)
	return ni, err
}

// VIFList lists the tenant VIFs attached to the node.
func (c *Conductor) VIFList(ctx context.Context, args rpc.NodeArgs) ([]rpc.VIF, error) {
	t, err := c.tasks.AcquireShared(ctx, args.NodeID, "listing vifs")
	if err != nil {
		return nil, err
	}
	ni, err := networkInterface(t)
	if err != nil {
		return nil, err
	}
	vifs, err := ni.VIFList(ctx, t)
	if err != nil {
		return nil, err
	}
	out := make([]rpc.VIF, len(vifs))
	for i, v := range vifs {
		out[i] = rpc.VIF{ID: v.ID}
	}
	return out, nil
}

// VIFAttach binds a tenant VIF to the node through its network interface.
func (c *Conductor) VIFAttach(ctx context.Context, args rpc.VIFAttachArgs) error {
	if args.VIF.ID == "" {
		return errs.New(errs.KindMissingParameterValue, "Missing mandatory parameter: id")
	}
	return c.onNetwork(ctx, args.NodeID, "attaching vif", func(ni driver.NetworkInterface, t *task.Task) error {
		return ni.VIFAttach(ctx, t, driver.VIF{ID: args.VIF.ID})
	})
}

// VIFDetach unbinds a tenant VIF from the node.
func (c *Conductor) VIFDetach(ctx context.Context, args rpc.VIFDetachArgs) error {
	return c.onNetwork(ctx, args.NodeID, "detaching vif", func(ni driver.NetworkInterface, t *task.Task) error {
		return ni.VIFDetach(ctx, t, args.VIFID)
	})
}

// onNetwork runs fn under the node's lock once its network interface
// validates.
func (c *Conductor) onNetwork(ctx context.Context, nodeID, purpose string, fn func(driver.NetworkInterface, *task.Task) error) error {
	t, err := c.tasks.Acquire(ctx, nodeID, purpose)
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	ni, err := networkInterface(t)
	if err != nil {
		return err
	}
	if err := ni.Validate(ctx, t); err != nil {
		return validationError(err)
	}
	return fn(ni, t)
}
