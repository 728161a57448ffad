package conductor

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// powerTarget is the power state a power action ends in.
func powerTarget(newState string) string {
	switch newState {
	case states.PowerOff, states.SoftPowerOff:
		return states.PowerOff
	}
	return states.PowerOn
}

// ChangeNodePowerState validates the request, records the pending target
// and hands the power action to a worker.
func (c *Conductor) ChangeNodePowerState(ctx context.Context, args rpc.ChangePowerStateArgs) error {
	t, err := c.tasks.Acquire(ctx, args.NodeID, "changing node power state")
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	n := t.Node()
	d, err := t.Driver()
	if err != nil {
		return err
	}
	if err := d.Power.Validate(ctx, t); err != nil {
		return validationError(err)
	}
	if !slices.Contains(d.Power.SupportedPowerStates(ctx, t), args.NewState) {
		return errs.InvalidParameterValue("The driver %s does not support the power state, %s", n.Driver, args.NewState)
	}
	timeout := time.Duration(args.Timeout) * time.Second
	if timeout <= 0 {
		timeout = c.cfg.PowerStateChangeTimeout
		if args.NewState == states.SoftPowerOff || args.NewState == states.SoftRebooting {
			timeout = c.cfg.SoftPowerOffTimeout
		}
	}
	prevPower, prevTarget := n.PowerState, n.TargetPowerState
	n.TargetPowerState = ptr(powerTarget(args.NewState))
	n.LastError = nil
	if err := t.Save(ctx); err != nil {
		return err
	}
	newState := args.NewState
	return t.Spawn(ctx, task.Work{Name: "node_power_action", Run: func(ctx context.Context, t *task.Task) error {
		return c.powerAction(ctx, t, newState, timeout)
	}}, func(ctx context.Context) error {
		n.PowerState, n.TargetPowerState = prevPower, prevTarget
		n.LastError = ptr(task.NoFreeWorkersError)
		return t.Save(ctx)
	})
}

// powerAction drives the node to newState under the lock and records the
// outcome. Failures end up in last_error; only a failed save is returned.
func (c *Conductor) powerAction(ctx context.Context, t *task.Task, newState string, timeout time.Duration) error {
	n := t.Node()
	d, err := t.Driver()
	if err != nil {
		return err
	}
	target := powerTarget(newState)
	if newState == states.PowerOn || newState == states.PowerOff || newState == states.SoftPowerOff {
		current, err := d.Power.GetPowerState(ctx, t)
		if err != nil {
			n.TargetPowerState = nil
			n.LastError = ptr(fmt.Sprintf("Failed to change power state to '%s'. Error: %s", target, err))
			return t.Save(ctx)
		}
		if current == target {
			n.PowerState, n.TargetPowerState, n.LastError = ptr(target), nil, nil
			return t.Save(ctx)
		}
	}
	ensureInfo(n)
	n.TargetPowerState, n.LastError = ptr(target), nil
	n.DriverInternalInfo["last_power_state_change"] = time.Now().UTC().Format(time.RFC3339Nano)
	if target == states.PowerOff || newState == states.Rebooting || newState == states.SoftRebooting {
		// The running agent goes away with the power; its address and
		// token must not be trusted by the next boot.
		driver.WipeAgentSession(n)
	}
	if err := t.Save(ctx); err != nil {
		return err
	}
	switch newState {
	case states.Rebooting, states.SoftRebooting:
		err = d.Power.Reboot(ctx, t, newState == states.SoftRebooting, timeout)
	default:
		err = d.Power.SetPowerState(ctx, t, newState, timeout)
	}
	n.TargetPowerState = nil
	if err != nil {
		n.LastError = ptr(fmt.Sprintf("Failed to change power state to '%s' by '%s'. Error: %s", target, newState, err))
		t.Log().WithError(err).Errorf("Power action %s failed", newState)
	} else {
		n.PowerState = ptr(target)
	}
	return t.Save(ctx)
}
