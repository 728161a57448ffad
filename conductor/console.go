package conductor

import (
	"context"
	"fmt"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/rpc"
)

// SetConsoleMode starts or stops the node's console in a worker;
// console_enabled changes once the driver succeeded, last_error records a
// failure. Asking for the mode the node is already in does nothing.
func (c *Conductor) SetConsoleMode(ctx context.Context, args rpc.SetConsoleModeArgs) error {
	t, err := c.tasks.Acquire(ctx, args.NodeID, "setting console mode")
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	n := t.Node()
	_, ci, err := driver.RequireFor[driver.ConsoleInterface](t, hwcatalog.Console)
	if err != nil {
		return err
	}
	if err := ci.Validate(ctx, t); err != nil {
		return validationError(err)
	}
	if n.ConsoleEnabled == args.Enabled {
		t.Log().Infof("No console action was triggered because the console is already %s", consoleWord(args.Enabled))
		return nil
	}
	n.LastError = nil
	if err := t.Save(ctx); err != nil {
		return err
	}
	enable := args.Enabled
	return t.Spawn(ctx, task.Work{Name: "set_console_mode", Run: func(ctx context.Context, t *task.Task) error {
		n := t.Node()
		var err error
		if enable {
			err = ci.StartConsole(ctx, t)
		} else {
			err = ci.StopConsole(ctx, t)
		}
		if err != nil {
			op := "enabling"
			if !enable {
				op = "disabling"
			}
			msg := fmt.Sprintf("Error %s the console on node %s. Reason: %s", op, n.UUID, err)
			t.Log().WithError(err).Error(msg)
			n.LastError = &msg
		} else {
			n.ConsoleEnabled = enable
		}
		return t.Save(ctx)
	}}, nil)
}

func consoleWord(enabled bool) string {
	if enabled {
		return "enabled"
	}
	return "disabled"
}

// GetConsoleInformation tells how to reach the node's running console.
func (c *Conductor) GetConsoleInformation(ctx context.Context, args rpc.NodeArgs) (map[string]any, error) {
	t, err := c.tasks.AcquireShared(ctx, args.NodeID, "getting console information")
	if err != nil {
		return nil, err
	}
	n := t.Node()
	if !n.ConsoleEnabled {
		return nil, errs.New(errs.KindInvalid, "Console access is not enabled on node %s", n.UUID)
	}
	_, ci, err := driver.RequireFor[driver.ConsoleInterface](t, hwcatalog.Console)
	if err != nil {
		return nil, err
	}
	if err := ci.Validate(ctx, t); err != nil {
		return nil, validationError(err)
	}
	return ci.GetConsole(ctx, t)
}

// InjectNMI sends a non-maskable interrupt through the node's BMC.
func (c *Conductor) InjectNMI(ctx context.Context, args rpc.NodeArgs) error {
	return c.onManagement(ctx, args.NodeID, "inject nmi", func(d *driver.Driver, t *task.Task) error {
		nmi, ok := driver.Lookup[driver.NMIInjector](d, hwcatalog.Management)
		if !ok {
			return driver.Unsupported(t.Node().Driver, "inject_nmi")
		}
		return nmi.InjectNMI(ctx, t)
	})
}
