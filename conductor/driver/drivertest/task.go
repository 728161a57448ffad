// Package drivertest holds the driver.TaskContext that driver specs hand
// to an interface implementation in place of the conductor's task. It
// keeps the node, ports and volume records in memory, answers the state
// machine as the conductor would, and records what the implementation
// asked of the conductor, so a spec can check it.
package drivertest

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// ErrNoDriver is what Driver returns when the spec gave the task none.
var ErrNoDriver = errors.New("drivertest: the task has no driver")

// Event is one state-machine event an implementation fired.
type Event struct {
	Event  states.Event
	Target states.State
}

// Task is a recording driver.PortTaskContext. Set the fields a spec needs
// before handing it over; the zero value of the rest works.
type Task struct {
	node *model.Node

	PortList   []model.Port
	Connectors []model.VolumeConnector
	Targets    []model.VolumeTarget
	// Drv is what Driver returns (ErrNoDriver when nil).
	Drv *driver.Driver
	// Drive is the stored config drive ConfigDrive returns.
	Drive string
	// IsShared is what Shared reports.
	IsShared bool

	// What the implementation asked of the conductor, in order.
	Saves         int
	SavedPorts    []string
	Events        []Event
	Failures      []string
	CleanStepsSet int
	// CleanContinued records each ContinueCleaning's rerunCurrent.
	CleanContinued []bool
	CleanFailures  []string
}

var _ driver.PortTaskContext = (*Task)(nil)

// New is a task over n.
func New(n *model.Node) *Task { return &Task{node: n} }

// WithPorts sets the node's ports and returns the task.
func (t *Task) WithPorts(ports []model.Port) *Task {
	t.PortList = ports
	return t
}

// Node is the node the task acts on.
func (t *Task) Node() *model.Node { return t.node }

// Ports are the node's ports.
func (t *Task) Ports(context.Context) ([]model.Port, error) { return t.PortList, nil }

// Shared reports IsShared.
func (t *Task) Shared() bool { return t.IsShared }

// VolumeConnectors are the node's volume connectors.
func (t *Task) VolumeConnectors(context.Context) ([]model.VolumeConnector, error) {
	return t.Connectors, nil
}

// VolumeTargets are the node's volume targets.
func (t *Task) VolumeTargets(context.Context) ([]model.VolumeTarget, error) {
	return t.Targets, nil
}

// Driver is Drv.
func (t *Task) Driver() (*driver.Driver, error) {
	if t.Drv == nil {
		return nil, ErrNoDriver
	}
	return t.Drv, nil
}

// ConfigDrive is Drive.
func (t *Task) ConfigDrive(context.Context) (string, error) { return t.Drive, nil }

// Save counts the save.
func (t *Task) Save(context.Context) error {
	t.Saves++
	return nil
}

// SavePort stores p over the port with its UUID and records it.
func (t *Task) SavePort(_ context.Context, p *model.Port) error {
	i := slices.IndexFunc(t.PortList, func(q model.Port) bool { return q.UUID == p.UUID })
	if i < 0 {
		return fmt.Errorf("drivertest: node %s has no port %s", t.node.UUID, p.UUID)
	}
	t.PortList[i] = *p
	t.SavedPorts = append(t.SavedPorts, p.UUID)
	return nil
}

// ProcessEvent moves the node as the conductor's task does and records
// the event; an event the state does not allow changes nothing.
func (t *Task) ProcessEvent(_ context.Context, event states.Event, targetOverride states.State) error {
	next, target, err := states.Transition(t.node.State(), event, targetOverride)
	if err != nil {
		return err
	}
	t.node.SetState(next, target)
	t.Events = append(t.Events, Event{Event: event, Target: targetOverride})
	t.Saves++
	return nil
}

// Fail records msg as last_error and the failure, and fires fail.
func (t *Task) Fail(ctx context.Context, msg string) error {
	t.Failures = append(t.Failures, msg)
	t.node.LastError = &msg
	return t.ProcessEvent(ctx, states.EventFail, "")
}

// SetCleanSteps counts the call.
func (t *Task) SetCleanSteps(context.Context) error {
	t.CleanStepsSet++
	return nil
}

// ContinueCleaning records rerunCurrent.
func (t *Task) ContinueCleaning(_ context.Context, rerunCurrent bool) error {
	t.CleanContinued = append(t.CleanContinued, rerunCurrent)
	return nil
}

// FailCleaning records msg.
func (t *Task) FailCleaning(_ context.Context, msg string) error {
	t.CleanFailures = append(t.CleanFailures, msg)
	return nil
}
