// Package driver is the conductor's hardware-type framework: the interfaces
// a node is driven through (power, management, deploy, boot, ...), the
// hardware types that bundle implementations of them, and the registry
// that resolves a node's interfaces to code. What the registry enables is
// described by a hwcatalog.Catalog, which the conductor registers and the
// API service reads back, so the API never loads driver code.
package driver

import (
	"context"
	"time"

	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// TaskContext is what an interface implementation sees of the node it acts
// on. The conductor holds the node lock (unless Shared) and persists the
// node after the call; implementations change Node() fields in place.
type TaskContext interface {
	Node() *model.Node
	Ports(ctx context.Context) ([]model.Port, error)
	Shared() bool
	// VolumeConnectors and VolumeTargets are the node's volume records,
	// which storage interfaces validate.
	VolumeConnectors(ctx context.Context) ([]model.VolumeConnector, error)
	VolumeTargets(ctx context.Context) ([]model.VolumeTarget, error)
	TaskControl
}

// TaskControl is what a task offers an implementation beyond the node. A
// deploy that goes on from a ramdisk callback (heartbeat, vendor
// passthru) acts for the conductor: it drives the node's other
// interfaces, reads the stored config drive, records progress before a
// long step, and moves the state machine itself, or a clean. Save,
// ProcessEvent, Fail and the cleaning methods need the node lock. Test doubles that never get this far may embed
// a nil TaskControl.
type TaskControl interface {
	// Driver is the node's resolved set of interfaces.
	Driver() (*Driver, error)
	// ConfigDrive is the instance's config drive, read from the database
	// when the API stored it there.
	ConfigDrive(ctx context.Context) (string, error)
	// Save persists the node now.
	Save(ctx context.Context) error
	// ProcessEvent fires a state-machine event and persists the node;
	// targetOverride replaces the new state's default target ("" keeps it).
	ProcessEvent(ctx context.Context, event states.Event, targetOverride states.State) error
	// Fail records msg as last_error, logs it and fires fail.
	Fail(ctx context.Context, msg string) error

	// A deploy interface whose ramdisk calls back during a clean moves the
	// clean on with these, in the worker holding the lock. After
	// ContinueCleaning or FailCleaning the conductor has saved the node
	// (and may have released it): the caller returns at once.

	// SetCleanSteps computes the steps of an automated clean from every
	// interface's, or checks a manual clean's against them.
	SetCleanSteps(ctx context.Context) error
	// ContinueCleaning runs the next step (the current one again with
	// rerunCurrent), as continue_node_clean does.
	ContinueCleaning(ctx context.Context, rerunCurrent bool) error
	// FailCleaning ends the clean in clean failed with msg.
	FailCleaning(ctx context.Context, msg string) error
}

// Result is how a deploy, clean, inspect or rescue step ended when it did
// not fail (failure is the error beside it). A driver says what happened;
// which state-machine event that fires is the conductor's business.
type Result int

const (
	// Done: the step finished; the operation moves on.
	Done Result = iota
	// Wait: the step goes on without the conductor, which waits for a
	// ramdisk's callback.
	Wait
)

// Interface is implemented by every interface implementation. Validate
// checks that the node carries what the implementation needs; it returns
// InvalidParameterValue / MissingParameterValue errors for the user.
type Interface interface {
	Validate(ctx context.Context, t TaskContext) error
}

// PowerInterface controls and reads a node's power.
type PowerInterface interface {
	Interface
	GetPowerState(ctx context.Context, t TaskContext) (string, error)
	// SetPowerState moves the node to power on / power off / soft power off
	// and waits up to timeout for the new state.
	SetPowerState(ctx context.Context, t TaskContext, state string, timeout time.Duration) error
	// Reboot performs a hard (soft=false) or soft reboot.
	Reboot(ctx context.Context, t TaskContext, soft bool, timeout time.Duration) error
	SupportedPowerStates(ctx context.Context, t TaskContext) []string
}

// BootDevice is a node's next boot device as far as the BMC reports it.
type BootDevice struct {
	Device     *string
	Persistent *bool
}

// ManagementInterface handles the BMC's boot device settings.
type ManagementInterface interface {
	Interface
	SupportedBootDevices(ctx context.Context, t TaskContext) ([]string, error)
	SetBootDevice(ctx context.Context, t TaskContext, device string, persistent bool) error
	GetBootDevice(ctx context.Context, t TaskContext) (BootDevice, error)
}

// DeployInterface puts an image on a node and removes it again.
type DeployInterface interface {
	Interface
	Prepare(ctx context.Context, t TaskContext) error
	// Deploy returns Done when it finished synchronously or Wait when the
	// ramdisk will call back.
	Deploy(ctx context.Context, t TaskContext) (Result, error)
	// ContinueDeploy resumes a deploy after the ramdisk called back; same
	// results as Deploy.
	ContinueDeploy(ctx context.Context, t TaskContext) (Result, error)
	// TearDown returns Done once the instance is gone.
	TearDown(ctx context.Context, t TaskContext) (Result, error)
	CleanUp(ctx context.Context, t TaskContext) error
	// TakeOver rebuilds local state (boot configuration) on a conductor
	// that took an active node over from another.
	TakeOver(ctx context.Context, t TaskContext) error
	// PrepareCleaning returns Wait when the ramdisk must boot before steps
	// can run, Done when cleaning can go on at once.
	PrepareCleaning(ctx context.Context, t TaskContext) (Result, error)
	TearDownCleaning(ctx context.Context, t TaskContext) error
}

// BootInterface prepares what a node boots: the deploy ramdisk or the
// deployed instance.
type BootInterface interface {
	Interface
	PrepareRamdisk(ctx context.Context, t TaskContext, params map[string]any) error
	CleanUpRamdisk(ctx context.Context, t TaskContext) error
	PrepareInstance(ctx context.Context, t TaskContext) error
	CleanUpInstance(ctx context.Context, t TaskContext) error
}

// InspectInterface discovers a node's properties.
type InspectInterface interface {
	Interface
	// InspectHardware returns Done when finished or Wait when an
	// inspection ramdisk will report back.
	InspectHardware(ctx context.Context, t TaskContext) (Result, error)
}

// CleanStep is one clean step as stored in driver_internal_info.clean_steps
// and node.clean_step.
type CleanStep struct {
	Interface string         `json:"interface"`
	Step      string         `json:"step"`
	Priority  int            `json:"priority"`
	Abortable bool           `json:"abortable"`
	Args      map[string]any `json:"args,omitempty"`
	// RebootRequested: the node is rebooted once the step succeeded.
	RebootRequested bool `json:"reboot_requested,omitempty"`
}

// CleanStepper is implemented by interfaces that offer clean steps.
type CleanStepper interface {
	CleanSteps(ctx context.Context, t TaskContext) ([]CleanStep, error)
	// ExecuteCleanStep returns Done when the step finished, Wait when it
	// continues asynchronously.
	ExecuteCleanStep(ctx context.Context, t TaskContext, step CleanStep) (Result, error)
}
