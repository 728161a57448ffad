package ipmi

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/states"
)

// Power is the ipmitool power interface.
type Power struct{ h *Hardware }

var _ driver.PowerInterface = (*Power)(nil)

// Validate checks the node's driver_info; it does not contact the BMC.
func (p *Power) Validate(_ context.Context, t driver.TaskContext) error {
	_, err := parseDriverInfo(t.Node())
	return err
}

// Properties describes the driver_info keys this interface reads.
func (p *Power) Properties() map[string]string { return Properties() }

// SupportedPowerStates are the states SetPowerState and Reboot reach.
func (p *Power) SupportedPowerStates(context.Context, driver.TaskContext) []string {
	return []string{states.PowerOn, states.PowerOff, states.Rebooting, states.SoftPowerOff, states.SoftRebooting}
}

// GetPowerState asks the BMC: power on, power off, or PowerError when the
// BMC answers something else.
func (p *Power) GetPowerState(ctx context.Context, t driver.TaskContext) (string, error) {
	b, err := parseDriverInfo(t.Node())
	if err != nil {
		return "", err
	}
	return p.status(ctx, t, b)
}

func (p *Power) status(ctx context.Context, t driver.TaskContext, b bmcInfo) (string, error) {
	out, err := p.h.tool.run(ctx, t.Node().UUID, b, "power", "status")
	if err != nil {
		return "", err
	}
	switch {
	case strings.Contains(out, "Chassis Power is on"):
		return states.PowerOn, nil
	case strings.Contains(out, "Chassis Power is off"):
		return states.PowerOff, nil
	}
	return states.PowerError, nil
}

// SetPowerState turns the node on or off, or asks its OS to shut down
// (soft power off), then reads the power state until it matches. timeout
// bounds the wait; 0 means [conductor] power_state_change_timeout, or
// soft_power_off_timeout for a soft power off.
func (p *Power) SetPowerState(ctx context.Context, t driver.TaskContext, state string, timeout time.Duration) error {
	b, err := parseDriverInfo(t.Node())
	if err != nil {
		return err
	}
	switch state {
	case states.PowerOn:
		return p.change(ctx, t, b, "on", states.PowerOn, p.timeout(timeout, false))
	case states.PowerOff:
		return p.change(ctx, t, b, "off", states.PowerOff, p.timeout(timeout, false))
	case states.SoftPowerOff:
		return p.change(ctx, t, b, "soft", states.PowerOff, p.timeout(timeout, true))
	}
	return errs.InvalidParameterValue("set_power_state called with an invalid power state: %s.", state)
}

// Reboot powers the node off and on again, each step confirmed by reading
// the power state; soft asks the OS to shut down first. An explicit off
// and on is used rather than "power cycle", which many BMCs refuse or
// ignore for a machine that is off and which cannot be told apart from
// no change at all by polling.
func (p *Power) Reboot(ctx context.Context, t driver.TaskContext, soft bool, timeout time.Duration) error {
	b, err := parseDriverInfo(t.Node())
	if err != nil {
		return err
	}
	if soft {
		if err := p.change(ctx, t, b, "soft", states.PowerOff, p.timeout(timeout, true)); err != nil {
			return err
		}
	} else if err := p.change(ctx, t, b, "off", states.PowerOff, p.timeout(timeout, false)); err != nil {
		return err
	}
	return p.change(ctx, t, b, "on", states.PowerOn, p.timeout(timeout, false))
}

func (p *Power) timeout(given time.Duration, soft bool) time.Duration {
	switch {
	case given > 0:
		return given
	case soft:
		return p.h.opts.SoftPowerOffTimeout
	}
	return p.h.opts.PowerStateChangeTimeout
}

// change sends "power <verb>" once, then reads the power state until it
// is want, pausing [ipmi] power_state_poll_interval between reads, for up
// to timeout. A failed read while waiting is only logged: BMCs often miss
// a request while the machine changes state.
func (p *Power) change(ctx context.Context, t driver.TaskContext, b bmcInfo, verb, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	if _, err := p.h.tool.run(ctx, t.Node().UUID, b, "power", verb); err != nil {
		return err
	}
	log := logging.FromContext(ctx, p.h.tool.log).WithFields(map[string]any{"node": t.Node().UUID, "bmc": b.target()})
	var last string
	var lastErr error
	for {
		got, err := p.status(ctx, t, b)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return err
			}
			log.Warnf("power state read while waiting for %s failed: %v", want, err)
			lastErr = err
		case got == want:
			return nil
		default:
			last, lastErr = got, nil
		}
		if !time.Now().Before(deadline) {
			failure := errs.New(errs.KindPowerStateFailure, "Failed to set node power state to %s.", want)
			if last != "" && lastErr == nil {
				failure.Message += fmt.Sprintf(" It was still %s after %s.", last, timeout)
			}
			failure.Err = lastErr
			return failure
		}
		wait := time.NewTimer(min(p.h.opts.IPMI.PowerStatePollInterval, time.Until(deadline)))
		select {
		case <-ctx.Done():
			wait.Stop()
			return fmt.Errorf("wait for %s: %w", want, ctx.Err())
		case <-wait.C:
		}
	}
}
