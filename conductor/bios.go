package conductor

import (
	"context"
	"fmt"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/rpc"
)

// GetBIOSSettings reads the node's BIOS settings through its bios
// interface; a node without one (no-bios) has none.
func (c *Conductor) GetBIOSSettings(ctx context.Context, args rpc.NodeArgs) ([]rpc.BIOSSetting, error) {
	t, d, err := c.readDriver(ctx, args.NodeID, "get BIOS settings")
	if err != nil {
		return nil, err
	}
	bi, ok := driver.Lookup[driver.BIOSInterface](d, hwcatalog.Bios)
	if !ok {
		return []rpc.BIOSSetting{}, nil
	}
	settings, err := bi.Settings(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("read BIOS settings of node %s: %w", args.NodeID, err)
	}
	out := make([]rpc.BIOSSetting, len(settings))
	for i, s := range settings {
		out[i] = rpc.BIOSSetting{Name: s.Name, Value: s.Value}
	}
	return out, nil
}
