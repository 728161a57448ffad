package conductor

import (
	"context"
	"slices"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/rpc"
)

func methodInfos(methods map[string]driver.VendorMethod, node bool) map[string]rpc.VendorMethodInfo {
	out := make(map[string]rpc.VendorMethodInfo, len(methods))
	for name, m := range methods {
		info := rpc.VendorMethodInfo{HTTPMethods: slices.Clone(m.HTTPMethods), Async: m.Async,
			Description: m.Description, Attach: m.Attach}
		if node {
			info.RequireExclusiveLock = ptr(m.RequireExclusiveLock)
		}
		out[name] = info
	}
	return out
}

// checkVendorCall finds the method and checks the HTTP verb it was called
// with.
func checkVendorCall(methods map[string]driver.VendorMethod, method, httpMethod string) (driver.VendorMethod, error) {
	m, ok := methods[method]
	if !ok {
		return m, errs.InvalidParameterValue("No handler for method %s", method)
	}
	if !slices.Contains(m.HTTPMethods, httpMethod) {
		return m, errs.InvalidParameterValue("The method %s does not support HTTP %s", method, httpMethod)
	}
	return m, nil
}

// GetNodeVendorPassthruMethods lists the vendor methods of the node's
// vendor interface.
func (c *Conductor) GetNodeVendorPassthruMethods(ctx context.Context, args rpc.NodeArgs) (map[string]rpc.VendorMethodInfo, error) {
	t, err := c.tasks.AcquireShared(ctx, args.NodeID, "listing vendor methods")
	if err != nil {
		return nil, err
	}
	_, v, err := driver.RequireFor[driver.VendorInterface](t, hwcatalog.Vendor)
	if err != nil {
		return nil, err
	}
	return methodInfos(v.Methods(), true), nil
}

// GetDriverVendorPassthruMethods lists the driver-level vendor methods of
// the hardware type's default vendor interface.
func (c *Conductor) GetDriverVendorPassthruMethods(_ context.Context, args rpc.DriverArgs) (map[string]rpc.VendorMethodInfo, error) {
	v, err := driver.RequireDefault[driver.VendorInterface](c.drivers, args.DriverName, hwcatalog.Vendor)
	if err != nil {
		return nil, err
	}
	return methodInfos(v.DriverMethods(), false), nil
}

// VendorPassthru calls a vendor method of the node's driver. Methods that
// need the lock, and every asynchronous one (its worker owns the lock until
// it ends), run under the node lock; the others run without it.
func (c *Conductor) VendorPassthru(ctx context.Context, args rpc.VendorPassthruArgs) (rpc.VendorPassthruResult, error) {
	t, err := c.tasks.AcquireShared(ctx, args.NodeID, "calling vendor passthru")
	if err != nil {
		return rpc.VendorPassthruResult{}, err
	}
	_, v, err := driver.RequireFor[driver.VendorInterface](t, hwcatalog.Vendor)
	if err != nil {
		return rpc.VendorPassthruResult{}, err
	}
	m, err := checkVendorCall(v.Methods(), args.Method, args.HTTPMethod)
	if err != nil {
		return rpc.VendorPassthruResult{}, err
	}
	if err := v.Validate(ctx, t); err != nil {
		return rpc.VendorPassthruResult{}, validationError(err)
	}
	if m.RequireExclusiveLock || m.Async {
		if err := t.Upgrade(ctx); err != nil {
			if lc, ok := v.(driver.VendorLockedCaller); ok && errs.Is(err, errs.KindNodeLocked) {
				if lerr := lc.CallWhileLocked(ctx, t, args.Method, args.Info); lerr != nil {
					return rpc.VendorPassthruResult{}, lerr
				}
			}
			return rpc.VendorPassthruResult{}, err
		}
		defer t.Release(ctx)
	}
	if cv, ok := v.(driver.VendorCallValidator); ok {
		// Checked under the lock the method runs with, so what was
		// validated is what the method sees.
		if err := cv.ValidateCall(ctx, t, args.Method, args.HTTPMethod, args.Info); err != nil {
			return rpc.VendorPassthruResult{}, validationError(err)
		}
	}
	if m.Async {
		err := t.Spawn(ctx, task.Work{Name: "vendor passthru " + args.Method, Run: func(ctx context.Context, t *task.Task) error {
			// A ramdisk's callback may move a clean on.
			if _, err := v.Call(ctx, t, args.Method, args.HTTPMethod, args.Info); err != nil || t.CleanMovedOn() {
				return err
			}
			return t.Save(ctx)
		}}, nil)
		if err != nil {
			return rpc.VendorPassthruResult{}, err
		}
		return rpc.VendorPassthruResult{Async: true, Attach: m.Attach}, nil
	}
	ret, err := v.Call(ctx, t, args.Method, args.HTTPMethod, args.Info)
	if err != nil {
		return rpc.VendorPassthruResult{}, err
	}
	if m.RequireExclusiveLock {
		if err := t.Save(ctx); err != nil {
			return rpc.VendorPassthruResult{}, err
		}
	}
	return rpc.VendorPassthruResult{Return: ret, Attach: m.Attach}, nil
}

// DriverVendorPassthru calls a driver-level vendor method of the hardware
// type's default vendor interface; asynchronous ones run in a worker.
func (c *Conductor) DriverVendorPassthru(ctx context.Context, args rpc.DriverVendorPassthruArgs) (rpc.VendorPassthruResult, error) {
	v, err := driver.RequireDefault[driver.VendorInterface](c.drivers, args.DriverName, hwcatalog.Vendor)
	if err != nil {
		return rpc.VendorPassthruResult{}, err
	}
	m, err := checkVendorCall(v.DriverMethods(), args.Method, args.HTTPMethod)
	if err != nil {
		return rpc.VendorPassthruResult{}, err
	}
	if m.Async {
		log := logging.FromContext(ctx, c.log).WithField("driver", args.DriverName)
		workCtx := logging.NewContext(logging.ContextWithRequestID(c.workCtx, logging.RequestID(ctx)), log)
		err := c.pool.Spawn(func() {
			if _, err := v.CallDriver(workCtx, args.Method, args.HTTPMethod, args.Info); err != nil {
				log.WithError(err).Errorf("Asynchronous driver vendor method %s failed", args.Method)
			}
		})
		if err != nil {
			return rpc.VendorPassthruResult{}, err
		}
		return rpc.VendorPassthruResult{Async: true, Attach: m.Attach}, nil
	}
	ret, err := v.CallDriver(ctx, args.Method, args.HTTPMethod, args.Info)
	if err != nil {
		return rpc.VendorPassthruResult{}, err
	}
	return rpc.VendorPassthruResult{Return: ret, Attach: m.Attach}, nil
}
