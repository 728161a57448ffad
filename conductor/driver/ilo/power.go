package ilo

import (
	"context"
	"maps"
	"time"

	"github.com/ferricbm/ferric/conductor/bmc"
	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/states"
)

// Power is the power interface of a flavor.
type Power struct {
	h *Hardware
	f Flavor
	// boots are the hardware type's virtual-media boot interfaces by
	// name: an active instance booting from an ISO gets it re-inserted
	// before each power-on and reboot.
	boots map[string]*Boot
}

var (
	_ driver.PowerInterface    = (*Power)(nil)
	_ driver.PropertyDescriber = (*Power)(nil)
)

// Validate checks the node's driver_info; it does not contact the BMC.
func (p *Power) Validate(_ context.Context, t driver.TaskContext) error {
	_, err := p.f.parse(t.Node())
	return err
}

// Properties describes the driver_info keys this interface reads.
func (p *Power) Properties() map[string]string { return maps.Clone(p.f.properties) }

// SupportedPowerStates are the states SetPowerState and Reboot reach.
func (p *Power) SupportedPowerStates(context.Context, driver.TaskContext) []string {
	return []string{states.PowerOn, states.PowerOff, states.Rebooting, states.SoftPowerOff, states.SoftRebooting}
}

// GetPowerState asks the BMC.
func (p *Power) GetPowerState(ctx context.Context, t driver.TaskContext) (string, error) {
	c, err := p.h.Controller(ctx, p.f, t.Node())
	if err != nil {
		return "", err
	}
	return c.PowerState(ctx)
}

// SetPowerState turns the node on, off, or asks its OS to shut down, then
// reads the power state every [ilo] power_wait until it matches; timeout,
// when given, replaces the [ilo] power_retry reads.
func (p *Power) SetPowerState(ctx context.Context, t driver.TaskContext, state string, timeout time.Duration) error {
	c, err := p.controller(ctx, t, timeout)
	if err != nil {
		return err
	}
	if state == states.PowerOn {
		if err := p.reattach(ctx, t, c); err != nil {
			return err
		}
	}
	return c.SetPowerState(ctx, state)
}

// Reboot resets a running node (powers on one that is off); soft asks the
// OS to shut down first, then powers on.
func (p *Power) Reboot(ctx context.Context, t driver.TaskContext, soft bool, timeout time.Duration) error {
	c, err := p.controller(ctx, t, timeout)
	if err != nil {
		return err
	}
	if err := p.reattach(ctx, t, c); err != nil {
		return err
	}
	if !soft {
		return c.Reboot(ctx)
	}
	if err := c.SetPowerState(ctx, states.SoftPowerOff); err != nil {
		return err
	}
	return c.SetPowerState(ctx, states.PowerOn)
}

func (p *Power) controller(ctx context.Context, t driver.TaskContext, timeout time.Duration) (*bmc.Controller, error) {
	c, err := p.h.Controller(ctx, p.f, t.Node())
	if err != nil {
		return nil, err
	}
	if timeout > 0 && c.Poll.Interval > 0 {
		c.Poll.Retries = max(1, int((timeout+c.Poll.Interval-1)/c.Poll.Interval))
	}
	return c, nil
}

// reattach re-inserts the boot ISO of an active instance whose boot
// interface is one of the hardware type's virtual-media ones.
func (p *Power) reattach(ctx context.Context, t driver.TaskContext, c *bmc.Controller) error {
	n := t.Node()
	if n.BootInterface == nil {
		return nil
	}
	b, ok := p.boots[*n.BootInterface]
	if !ok {
		return nil
	}
	return b.reattachBootISO(ctx, n, c)
}
