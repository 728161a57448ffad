package fake

import (
	"context"
	"slices"
	"sync"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
)

// More operations faults can be injected into.
const (
	OpStartConsole Op = "console.start_console"
	OpStopConsole  Op = "console.stop_console"
	OpInjectNMI    Op = "management.inject_nmi"
	OpVendorCall   Op = "vendor.call"
	OpRAIDStep     Op = "raid.clean_step"
)

// extras is the simulated state behind the console, NMI and vendor
// interfaces.
type extras struct {
	mu          sync.Mutex
	consoles    map[string]bool
	nmis        map[string]int
	driverCalls []VendorCall
}

func newExtras() *extras {
	return &extras{consoles: map[string]bool{}, nmis: map[string]int{}}
}

// ConsoleRunning reports whether the node's fake console is started.
func (h *Hardware) ConsoleRunning(nodeUUID string) bool {
	h.ext.mu.Lock()
	defer h.ext.mu.Unlock()
	return h.ext.consoles[nodeUUID]
}

// NMIs counts the NMIs the node received.
func (h *Hardware) NMIs(nodeUUID string) int {
	h.ext.mu.Lock()
	defer h.ext.mu.Unlock()
	return h.ext.nmis[nodeUUID]
}

// VendorCall is a driver vendor passthru call the fleet received.
type VendorCall struct {
	Method string
	Info   map[string]any
}

// DriverVendorCalls lists the driver-level vendor calls received so far.
func (h *Hardware) DriverVendorCalls() []VendorCall {
	h.ext.mu.Lock()
	defer h.ext.mu.Unlock()
	return slices.Clone(h.ext.driverCalls)
}

// raid accepts any valid target configuration; its clean steps "build" the
// target (raid_config becomes target_raid_config) and tear it down.
type raid struct{ h *Hardware }

func (r *raid) Validate(ctx context.Context, t driver.TaskContext) error {
	return driver.ValidateRAIDConfig(t.Node().TargetRAIDConfig)
}

func (r *raid) LogicalDiskProperties() map[string]string { return driver.LogicalDiskProperties() }

func (r *raid) ValidateRAIDConfig(_ context.Context, _ driver.TaskContext, config map[string]any) error {
	return driver.ValidateRAIDConfig(config)
}

func (r *raid) CleanSteps(context.Context, driver.TaskContext) ([]driver.CleanStep, error) {
	return []driver.CleanStep{
		{Interface: string(hwcatalog.RAID), Step: "create_configuration"},
		{Interface: string(hwcatalog.RAID), Step: "delete_configuration"},
	}, nil
}

func (r *raid) ExecuteCleanStep(ctx context.Context, t driver.TaskContext, step driver.CleanStep) (driver.Result, error) {
	if err := r.h.fault(ctx, t, OpRAIDStep); err != nil {
		return 0, err
	}
	n := t.Node()
	switch step.Step {
	case "create_configuration":
		if len(n.TargetRAIDConfig) == 0 {
			return 0, errs.InvalidParameterValue("Node %s has no target RAID configuration.", n.UUID)
		}
		n.RAIDConfig = model.JSONObject(cloneJSON(n.TargetRAIDConfig))
	case "delete_configuration":
		n.RAIDConfig = model.JSONObject{}
	default:
		return 0, errs.InvalidParameterValue("Unknown RAID clean step %s.", step.Step)
	}
	return driver.Done, nil
}

func cloneJSON(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

type console struct{ h *Hardware }

func (c *console) Validate(context.Context, driver.TaskContext) error { return nil }

func (c *console) StartConsole(ctx context.Context, t driver.TaskContext) error {
	if err := c.h.fault(ctx, t, OpStartConsole); err != nil {
		return err
	}
	c.h.ext.mu.Lock()
	defer c.h.ext.mu.Unlock()
	c.h.ext.consoles[t.Node().UUID] = true
	return nil
}

func (c *console) StopConsole(ctx context.Context, t driver.TaskContext) error {
	if err := c.h.fault(ctx, t, OpStopConsole); err != nil {
		return err
	}
	c.h.ext.mu.Lock()
	defer c.h.ext.mu.Unlock()
	delete(c.h.ext.consoles, t.Node().UUID)
	return nil
}

func (c *console) GetConsole(_ context.Context, t driver.TaskContext) (map[string]any, error) {
	return map[string]any{"type": "fake", "url": "fake://console/" + t.Node().UUID}, nil
}

func (m *management) InjectNMI(ctx context.Context, t driver.TaskContext) error {
	if err := m.h.fault(ctx, t, OpInjectNMI); err != nil {
		return err
	}
	m.h.ext.mu.Lock()
	defer m.h.ext.mu.Unlock()
	m.h.ext.nmis[t.Node().UUID]++
	return nil
}

// Vendor method names of the fake vendor interface.
const (
	// VendorEcho (node and driver, sync) returns the body it was sent.
	VendorEcho = "echo"
	// VendorRecord (node, async, exclusive) stores the body in the node's
	// driver_internal_info under "fake_vendor_record"; as a driver method
	// it is recorded in the fleet (DriverVendorCalls).
	VendorRecord = "record"
)

type vendor struct{ h *Hardware }

func (v *vendor) Validate(context.Context, driver.TaskContext) error { return nil }

func (v *vendor) Methods() map[string]driver.VendorMethod {
	return map[string]driver.VendorMethod{
		VendorEcho: {HTTPMethods: []string{"GET", "POST", "PUT"}, Description: "Returns the request body."},
		VendorRecord: {HTTPMethods: []string{"POST"}, Async: true, RequireExclusiveLock: true,
			Description: "Stores the request body in the node's driver_internal_info."},
	}
}

func (v *vendor) DriverMethods() map[string]driver.VendorMethod {
	return map[string]driver.VendorMethod{
		VendorEcho:   {HTTPMethods: []string{"GET", "POST", "PUT"}, Description: "Returns the request body."},
		VendorRecord: {HTTPMethods: []string{"POST"}, Async: true, Description: "Records the call in the fake fleet."},
	}
}

func (v *vendor) Call(ctx context.Context, t driver.TaskContext, method, _ string, info map[string]any) (any, error) {
	if err := v.h.fault(ctx, t, OpVendorCall); err != nil {
		return nil, err
	}
	switch method {
	case VendorEcho:
		return info, nil
	case VendorRecord:
		n := t.Node()
		if n.DriverInternalInfo == nil {
			n.DriverInternalInfo = model.JSONObject{}
		}
		n.DriverInternalInfo["fake_vendor_record"] = info
		return nil, nil
	}
	return nil, errs.InvalidParameterValue("No handler for method %s", method)
}

func (v *vendor) CallDriver(_ context.Context, method, _ string, info map[string]any) (any, error) {
	switch method {
	case VendorEcho:
		return info, nil
	case VendorRecord:
		v.h.ext.mu.Lock()
		defer v.h.ext.mu.Unlock()
		v.h.ext.driverCalls = append(v.h.ext.driverCalls, VendorCall{Method: method, Info: info})
		return nil, nil
	}
	return nil, errs.InvalidParameterValue("No handler for method %s", method)
}

var (
	_ driver.CleanStepper     = (*raid)(nil)
	_ driver.RescueInterface  = (*rescue)(nil)
	_ driver.DeployInterface  = (*deploy)(nil)
	_ driver.InspectInterface = (*inspect)(nil)
)
