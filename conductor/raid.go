package conductor

import (
	"context"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/rpc"
)

// SetTargetRAIDConfig validates a target RAID configuration against the
// node's RAID interface and stores it; a later create_configuration clean
// step builds it. An empty configuration clears the target.
func (c *Conductor) SetTargetRAIDConfig(ctx context.Context, args rpc.SetTargetRAIDConfigArgs) error {
	t, err := c.tasks.Acquire(ctx, args.NodeID, "setting target RAID config")
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	n := t.Node()
	_, raid, err := driver.RequireFor[driver.RAIDInterface](t, hwcatalog.RAID)
	if err != nil {
		return err
	}
	if len(args.Config) > 0 {
		if err := raid.ValidateRAIDConfig(ctx, t, args.Config); err != nil {
			return validationError(err)
		}
	}
	n.TargetRAIDConfig = model.JSONObject(args.Config)
	if n.TargetRAIDConfig == nil {
		n.TargetRAIDConfig = model.JSONObject{}
	}
	return t.Save(ctx)
}

// GetDriverProperties describes the node properties and driver_info keys
// the hardware type's default interfaces read (GET
// /v1/drivers/{name}/properties).
func (c *Conductor) GetDriverProperties(_ context.Context, args rpc.DriverArgs) (map[string]string, error) {
	return c.drivers.Properties(args.DriverName)
}

// GetRAIDLogicalDiskProperties describes the logical disk keys the hardware
// type's default RAID interface understands.
func (c *Conductor) GetRAIDLogicalDiskProperties(_ context.Context, args rpc.DriverArgs) (map[string]string, error) {
	raid, err := driver.RequireDefault[driver.RAIDInterface](c.drivers, args.DriverName, hwcatalog.RAID)
	if err != nil {
		return nil, err
	}
	return raid.LogicalDiskProperties(), nil
}
