// Package fake is the fake-hardware hardware type: interfaces that succeed
// at once without touching any machine. Its power interface remembers what
// it was told per node, which makes it a small simulated BMC: tests change
// the "real" power state behind the conductor's back (SetPowerState) and
// inject failures, panics or stalls into any operation (Inject). A node's
// driver_info may give its power and management calls a BMC's latency,
// failures and timeouts (behaviour.go).
package fake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/states"
)

// Name is the hardware type's name.
const Name = "fake-hardware"

// Op names an operation faults can be injected into.
type Op string

const (
	OpPowerValidate      Op = "power.validate"
	OpGetPowerState      Op = "power.get_power_state"
	OpSetPowerState      Op = "power.set_power_state"
	OpReboot             Op = "power.reboot"
	OpManagementValidate Op = "management.validate"
	OpSetBootDevice      Op = "management.set_boot_device"
	OpDeployValidate     Op = "deploy.validate"
	OpPrepare            Op = "deploy.prepare"
	OpDeploy             Op = "deploy.deploy"
	OpContinueDeploy     Op = "deploy.continue_deploy"
	OpTearDown           Op = "deploy.tear_down"
	OpCleanUp            Op = "deploy.clean_up"
	OpTakeOver           Op = "deploy.take_over"
	OpPrepareCleaning    Op = "deploy.prepare_cleaning"
	OpTearDownCleaning   Op = "deploy.tear_down_cleaning"
	OpBootValidate       Op = "boot.validate"
	OpInspect            Op = "inspect.inspect_hardware"
)

// Fault is what an injected operation does before (instead of) succeeding:
// wait until Block is closed (or the context ends), then panic with Panic
// if set, then fail with Err if set.
type Fault struct {
	Block <-chan struct{}
	Panic string
	Err   error
}

type faultKey struct {
	node string
	op   Op
}

type bootDevice struct {
	device     string
	persistent bool
}

// Hardware is one simulated fleet. Conductors that should see the same
// machines must share one Hardware.
type Hardware struct {
	mu     sync.Mutex
	power  map[string]string
	boot   map[string]bootDevice
	faults map[faultKey]Fault
	rec    *records
	bios   bios
}

// New returns a fleet where every node is powered as its DB record says
// until told otherwise.
func New() *Hardware {
	return &Hardware{
		power:  map[string]string{},
		boot:   map[string]bootDevice{},
		faults: map[faultKey]Fault{},
		rec:    newRecords(),
	}
}

// SetPowerState changes a node's real power state without the conductor
// knowing, as a person at the machine would.
func (h *Hardware) SetPowerState(nodeUUID, state string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.power[nodeUUID] = state
}

// PowerState is the node's real power state, if it was ever set.
func (h *Hardware) PowerState(nodeUUID string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.power[nodeUUID]
	return s, ok
}

// Inject makes op on the node behave as f until Clear.
func (h *Hardware) Inject(nodeUUID string, op Op, f Fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults[faultKey{nodeUUID, op}] = f
}

// Clear removes every fault injected for the node.
func (h *Hardware) Clear(nodeUUID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range h.faults {
		if k.node == nodeUUID {
			delete(h.faults, k)
		}
	}
}

func (h *Hardware) fault(ctx context.Context, t driver.TaskContext, op Op) error {
	switch op {
	case OpPowerValidate, OpManagementValidate:
		if _, err := parseBehaviour(t.Node().DriverInfo); err != nil {
			return err
		}
	case OpGetPowerState, OpSetPowerState, OpReboot, OpSetBootDevice:
		if err := behave(ctx, t, op); err != nil {
			return err
		}
	}
	h.mu.Lock()
	f, ok := h.faults[faultKey{t.Node().UUID, op}]
	h.mu.Unlock()
	if !ok {
		return nil
	}
	if f.Block != nil {
		select {
		case <-f.Block:
		case <-ctx.Done():
			return fmt.Errorf("fake %s: %w", op, ctx.Err())
		}
	}
	if f.Panic != "" {
		panic(f.Panic)
	}
	return f.Err
}

// HardwareType describes fake-hardware with this fleet behind it. The
// first implementation of each kind is the default, fake wherever there is
// one, as in Ironic.
func (h *Hardware) HardwareType() driver.HardwareType {
	one := func(name string, impl driver.Interface) []driver.Implementation {
		return []driver.Implementation{{Name: name, Impl: impl}}
	}
	return driver.HardwareType{
		Name: Name,
		Interfaces: map[hwcatalog.InterfaceType][]driver.Implementation{
			hwcatalog.Bios:       {{Name: "fake", Impl: &biosIface{h}}, {Name: "no-bios", Impl: driver.NoOp{}}},
			hwcatalog.Boot:       one("fake", &boot{h}),
			hwcatalog.Console:    {{Name: "fake", Impl: &console{h}}, {Name: "no-console", Impl: driver.NoOp{}}},
			hwcatalog.Deploy:     one("fake", &deploy{h}),
			hwcatalog.Inspect:    {{Name: "fake", Impl: &inspect{h}}, {Name: "no-inspect", Impl: driver.NoInspect{}}},
			hwcatalog.Management: one("fake", &management{h}),
			hwcatalog.Network:    {{Name: "noop", Impl: driver.NoopNetwork{}}, {Name: "flat", Impl: driver.FlatNetwork{}}},
			hwcatalog.Power:      one("fake", &power{h}),
			hwcatalog.RAID:       {{Name: "fake", Impl: &raid{h}}, {Name: "no-raid", Impl: driver.NoOp{}}},
			hwcatalog.Rescue:     {{Name: "fake", Impl: &rescue{h}}, {Name: "no-rescue", Impl: driver.NoOp{}}},
			hwcatalog.Storage:    driver.StorageImplementations(),
			hwcatalog.Vendor:     {{Name: "fake", Impl: &vendor{h}}, {Name: "no-vendor", Impl: driver.NoOp{}}},
		},
	}
}

type power struct{ h *Hardware }

func (p *power) Properties() map[string]string { return maps.Clone(behaviourProperties) }

func (p *power) Validate(ctx context.Context, t driver.TaskContext) error {
	return p.h.fault(ctx, t, OpPowerValidate)
}

// GetPowerState reports the remembered state; a node never told anything
// is as its record says, and off when the record does not know either.
func (p *power) GetPowerState(ctx context.Context, t driver.TaskContext) (string, error) {
	if err := p.h.fault(ctx, t, OpGetPowerState); err != nil {
		return "", err
	}
	if s, ok := p.h.PowerState(t.Node().UUID); ok {
		return s, nil
	}
	if ps := t.Node().PowerState; ps != nil && (*ps == states.PowerOn || *ps == states.PowerOff) {
		return *ps, nil
	}
	return states.PowerOff, nil
}

func (p *power) SetPowerState(ctx context.Context, t driver.TaskContext, state string, _ time.Duration) error {
	if err := p.h.fault(ctx, t, OpSetPowerState); err != nil {
		return err
	}
	switch state {
	case states.PowerOn, states.PowerOff:
	case states.SoftPowerOff:
		state = states.PowerOff
	default:
		return errs.InvalidParameterValue("set_power_state called with an invalid power state: %s.", state)
	}
	p.h.SetPowerState(t.Node().UUID, state)
	return nil
}

func (p *power) Reboot(ctx context.Context, t driver.TaskContext, _ bool, _ time.Duration) error {
	if err := p.h.fault(ctx, t, OpReboot); err != nil {
		return err
	}
	p.h.SetPowerState(t.Node().UUID, states.PowerOn)
	return nil
}

func (p *power) SupportedPowerStates(context.Context, driver.TaskContext) []string {
	return []string{states.PowerOn, states.PowerOff, states.Rebooting, states.SoftPowerOff, states.SoftRebooting}
}

var bootDevices = []string{"pxe", "disk", "cdrom", "bios", "safe"}

type management struct{ h *Hardware }

func (m *management) Validate(ctx context.Context, t driver.TaskContext) error {
	return m.h.fault(ctx, t, OpManagementValidate)
}

func (m *management) SupportedBootDevices(context.Context, driver.TaskContext) ([]string, error) {
	return slices.Clone(bootDevices), nil
}

func (m *management) SetBootDevice(ctx context.Context, t driver.TaskContext, device string, persistent bool) error {
	if err := m.h.fault(ctx, t, OpSetBootDevice); err != nil {
		return err
	}
	if !slices.Contains(bootDevices, device) {
		return errs.InvalidParameterValue("Invalid boot device %s specified.", device)
	}
	m.h.mu.Lock()
	defer m.h.mu.Unlock()
	m.h.boot[t.Node().UUID] = bootDevice{device: device, persistent: persistent}
	return nil
}

// GetBootDevice reports PXE, non-persistent, until told otherwise.
func (m *management) GetBootDevice(_ context.Context, t driver.TaskContext) (driver.BootDevice, error) {
	m.h.mu.Lock()
	b, ok := m.h.boot[t.Node().UUID]
	m.h.mu.Unlock()
	if !ok {
		b = bootDevice{device: "pxe"}
	}
	return driver.BootDevice{Device: &b.device, Persistent: &b.persistent}, nil
}

type deploy struct{ h *Hardware }

func (d *deploy) Validate(ctx context.Context, t driver.TaskContext) error {
	return d.h.fault(ctx, t, OpDeployValidate)
}

func (d *deploy) Prepare(ctx context.Context, t driver.TaskContext) error {
	return d.h.fault(ctx, t, OpPrepare)
}

func (d *deploy) Deploy(ctx context.Context, t driver.TaskContext) (driver.Result, error) {
	if err := d.h.fault(ctx, t, OpDeploy); err != nil {
		return 0, err
	}
	return driver.Done, nil
}

func (d *deploy) ContinueDeploy(ctx context.Context, t driver.TaskContext) (driver.Result, error) {
	if err := d.h.fault(ctx, t, OpContinueDeploy); err != nil {
		return 0, err
	}
	return driver.Done, nil
}

func (d *deploy) TearDown(ctx context.Context, t driver.TaskContext) (driver.Result, error) {
	if err := d.h.fault(ctx, t, OpTearDown); err != nil {
		return 0, err
	}
	return driver.Done, nil
}

func (d *deploy) KeepsStorage() {}

func (d *deploy) CleanUp(ctx context.Context, t driver.TaskContext) error {
	return d.h.fault(ctx, t, OpCleanUp)
}

func (d *deploy) TakeOver(ctx context.Context, t driver.TaskContext) error {
	return d.h.fault(ctx, t, OpTakeOver)
}

func (d *deploy) PrepareCleaning(ctx context.Context, t driver.TaskContext) (driver.Result, error) {
	return driver.Done, d.h.fault(ctx, t, OpPrepareCleaning)
}

func (d *deploy) TearDownCleaning(ctx context.Context, t driver.TaskContext) error {
	return d.h.fault(ctx, t, OpTearDownCleaning)
}

type boot struct{ h *Hardware }

func (b *boot) Validate(ctx context.Context, t driver.TaskContext) error {
	return b.h.fault(ctx, t, OpBootValidate)
}

func (b *boot) PrepareRamdisk(context.Context, driver.TaskContext, map[string]any) error { return nil }
func (b *boot) CleanUpRamdisk(context.Context, driver.TaskContext) error                 { return nil }
func (b *boot) PrepareInstance(context.Context, driver.TaskContext) error                { return nil }
func (b *boot) CleanUpInstance(context.Context, driver.TaskContext) error                { return nil }

type inspect struct{ h *Hardware }

func (i *inspect) Validate(context.Context, driver.TaskContext) error { return nil }

func (i *inspect) InspectHardware(ctx context.Context, t driver.TaskContext) (driver.Result, error) {
	if err := i.h.fault(ctx, t, OpInspect); err != nil {
		return 0, err
	}
	return driver.Done, nil
}

// OpInjectNMI is the management interface's NMI, for fault injection.
const OpInjectNMI Op = "management.inject_nmi"

// records is what the console, NMI and vendor interfaces remember, for
// specs to read back.
type records struct {
	mu          sync.Mutex
	consoles    map[string]bool
	nmis        map[string]int
	driverCalls []VendorCall
}

func newRecords() *records {
	return &records{consoles: map[string]bool{}, nmis: map[string]int{}}
}

// NMIs counts the NMIs the node received.
func (h *Hardware) NMIs(nodeUUID string) int {
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	return h.rec.nmis[nodeUUID]
}

func (m *management) InjectNMI(ctx context.Context, t driver.TaskContext) error {
	if err := m.h.fault(ctx, t, OpInjectNMI); err != nil {
		return err
	}
	m.h.rec.mu.Lock()
	defer m.h.rec.mu.Unlock()
	m.h.rec.nmis[t.Node().UUID]++
	return nil
}

var (
	_ driver.CleanStepper     = (*raid)(nil)
	_ driver.RescueInterface  = (*rescue)(nil)
	_ driver.DeployInterface  = (*deploy)(nil)
	_ driver.InspectInterface = (*inspect)(nil)
)
