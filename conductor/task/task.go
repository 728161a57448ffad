// Package task is the conductor's task manager: a Task is a node taken
// under the lock (or read for a shared, read-only job) together with its
// ports and driver. It fires state-machine events, persists them, and hands
// the lock to a background worker without ever letting go of it in between;
// whichever way the worker ends, the lock is released.
package task

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/nodelock"
	"github.com/ferricbm/ferric/conductor/workers"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// Store is the part of the repository tasks need.
type Store interface {
	nodelock.Store
	GetNode(ctx context.Context, uuid string) (*model.Node, error)
	SaveNode(ctx context.Context, n *model.Node) error
	SaveLockedNode(ctx context.Context, n *model.Node, host string, epoch int64, from string) error
	SaveAndReleaseNode(ctx context.Context, n *model.Node, host string, epoch int64) error
	ListPorts(ctx context.Context, f db.PortFilter, p db.Page, columns []string) ([]model.Port, error)
	SavePort(ctx context.Context, p *model.Port) error
	ListVolumeConnectors(ctx context.Context, f db.VolumeFilter, p db.Page, columns []string) ([]model.VolumeConnector, error)
	ListVolumeTargets(ctx context.Context, f db.VolumeFilter, p db.Page, columns []string) ([]model.VolumeTarget, error)
	ConfigDrive(ctx context.Context, nodeID int64, driveID string) (string, error)
}

// NoFreeWorkersError is last_error after a refused spawn.
const NoFreeWorkersError = "No free conductor workers available"

// Manager creates tasks for one conductor.
type Manager struct {
	store    Store
	locker   *nodelock.Locker
	pool     *workers.Pool
	drivers  *driver.Registry
	cleaner  Cleaner
	log      logrus.FieldLogger
	observer Observer
	// workCtx outlives any RPC: a worker keeps running after the call that
	// started it has returned, until the conductor stops.
	workCtx context.Context
}

// NewManager wires a task manager. workCtx is the context workers run in.
func NewManager(workCtx context.Context, store Store, locker *nodelock.Locker, pool *workers.Pool,
	drivers *driver.Registry, cleaner Cleaner, log logrus.FieldLogger) *Manager {
	return &Manager{store: store, locker: locker, pool: pool, drivers: drivers, cleaner: cleaner, log: log, workCtx: workCtx}
}

// Observer is told of every provision state change a task saves.
type Observer interface {
	Transition(node string, from, to states.State)
}

// Observe makes the manager report every saved provision state change to
// o; it must be set before the manager is used.
func (m *Manager) Observe(o Observer) { m.observer = o }

// saved records that the node's row now holds its in-memory provision
// state, which was from before.
func (t *Task) saved(from states.State) {
	to := t.ProvisionState()
	t.stored = to
	if from != to && t.m.observer != nil {
		t.m.observer.Transition(t.node.UUID, from, to)
	}
}

// Task is one node under work. It is not safe for concurrent use: it
// belongs to the RPC goroutine until handed to a worker, then to the worker.
type Task struct {
	m    *Manager
	node *model.Node
	// stored is the provision state the node's row holds: the lock holder
	// is the only one to move it, so a save need not read the row back.
	stored states.State
	// epoch is the conductor epoch the lock was taken in: a worker that
	// outlived its conductor's restart presents a stale one and is refused.
	epoch       int64
	ports       []model.Port
	portsLoaded bool
	drv         *driver.Driver
	shared      bool
	purpose     string
	handedOff   bool
	released    bool
	// cleanMovedOn: a driver continued or failed the clean; the node was
	// saved and may already be released.
	cleanMovedOn bool
	// requestID is the id of the request that started the work: a worker
	// keeps it after the RPC has returned.
	requestID string
	log       logrus.FieldLogger
}

// Acquire locks the node (retrying while another holder has it) and loads
// it. The caller must Release the task.
func (m *Manager) Acquire(ctx context.Context, nodeUUID, purpose string) (*Task, error) {
	node, err := m.locker.Acquire(ctx, nodeUUID)
	if err != nil {
		return nil, err
	}
	return m.newTask(ctx, node, false, purpose), nil
}

// AcquireShared reads the node without locking it, for read-only work.
func (m *Manager) AcquireShared(ctx context.Context, nodeUUID, purpose string) (*Task, error) {
	node, err := m.store.GetNode(ctx, nodeUUID)
	if err != nil {
		return nil, err
	}
	return m.newTask(ctx, node, true, purpose), nil
}

// newTask logs through the logger of ctx's work (an RPC's, tagged with its
// request id) and keeps the id for the worker the task may be handed to.
func (m *Manager) newTask(ctx context.Context, node *model.Node, shared bool, purpose string) *Task {
	return &Task{m: m, node: node, stored: node.State(), epoch: deref64(node.ReservationEpoch), shared: shared, purpose: purpose,
		requestID: logging.RequestID(ctx),
		log:       logging.FromContext(ctx, m.log).WithFields(logrus.Fields{"node": node.UUID, "purpose": purpose})}
}

// Node is the node as loaded under the lock; changes are persisted by Save.
func (t *Task) Node() *model.Node { return t.node }

// Shared reports whether the task holds no lock.
func (t *Task) Shared() bool { return t.shared }

// Log is a logger carrying the node, purpose and request id; in a worker,
// logging.FromContext(ctx) returns it too.
func (t *Task) Log() logrus.FieldLogger { return t.log }

// Ports loads the node's ports on first use; most operations never need them.
func (t *Task) Ports(ctx context.Context) ([]model.Port, error) {
	if t.portsLoaded {
		return t.ports, nil
	}
	id := t.node.ID
	ports, err := t.m.store.ListPorts(ctx, db.PortFilter{NodeID: &id}, db.Page{}, nil)
	if err != nil {
		return nil, fmt.Errorf("load ports of node %s: %w", t.node.UUID, err)
	}
	t.ports, t.portsLoaded = ports, true
	return ports, nil
}

// Driver resolves the node's driver on first use, so work that only edits
// the record (update, delete) does not depend on the hardware type being
// enabled here.
func (t *Task) Driver() (*driver.Driver, error) {
	if t.drv == nil {
		d, err := t.m.drivers.Load(t.node)
		if err != nil {
			return nil, err
		}
		t.drv = d
	}
	return t.drv, nil
}

// Upgrade turns a shared task into an exclusive one, re-reading the node
// under the lock.
func (t *Task) Upgrade(ctx context.Context) error {
	if !t.shared {
		return nil
	}
	node, err := t.m.locker.Acquire(ctx, t.node.UUID)
	if err != nil {
		return err
	}
	t.node, t.stored, t.shared, t.drv, t.portsLoaded, t.ports = node, node.State(), false, nil, false, nil
	t.epoch = deref64(node.ReservationEpoch)
	return nil
}

func (t *Task) requireExclusive() error {
	if t.shared {
		return fmt.Errorf("node %s: an exclusive lock is required for %s, but the task is shared", t.node.UUID, t.purpose)
	}
	return nil
}

// Save persists the node, provided this conductor still holds its lock:
// one judged dead, whose node another conductor has taken over, gets
// NodeLocked instead of overwriting the survivor's work.
func (t *Task) Save(ctx context.Context) error {
	if err := t.requireExclusive(); err != nil {
		return err
	}
	// An operation cancelled at shutdown still records where it got to;
	// a half-saved outcome would be worse than a late one.
	if err := t.m.store.SaveLockedNode(context.WithoutCancel(ctx), t.node, t.m.locker.Host(), t.epoch, string(t.stored)); err != nil {
		return fmt.Errorf("save node %s: %w", t.node.UUID, err)
	}
	t.saved(t.stored)
	return nil
}

// ProvisionState is the node's provision state ("" for NULL).
func (t *Task) ProvisionState() states.State { return t.node.State() }

// TargetProvisionState is the node's target provision state ("" for NULL).
func (t *Task) TargetProvisionState() states.State { return t.node.TargetState() }

// ProcessEvent fires event and persists the node's new provision and target
// states. targetOverride replaces the new state's default target ("" keeps
// it). An event the current state does not allow is InvalidStateRequested
// and changes nothing.
func (t *Task) ProcessEvent(ctx context.Context, event states.Event, targetOverride states.State) error {
	if err := t.requireExclusive(); err != nil {
		return err
	}
	if err := t.transition(event, targetOverride); err != nil {
		return err
	}
	return t.Save(ctx)
}

// Fail ends the operation under way: msg becomes the node's last_error
// (the API and the logs mask any secret in it), is logged, and fail is
// fired with the failed state's default target. It is the one way a
// conductor operation or a driver records a failure.
func (t *Task) Fail(ctx context.Context, msg string) error {
	return t.fail(ctx, msg, "")
}

// FailKeepingTarget is Fail for a failure that must remember where the
// operation was heading: a failed clean keeps manageable or available, so
// the node's next step after repair is known.
func (t *Task) FailKeepingTarget(ctx context.Context, msg string) error {
	return t.fail(ctx, msg, t.TargetProvisionState())
}

func (t *Task) fail(ctx context.Context, msg string, target states.State) error {
	t.log.Error(msg)
	t.node.LastError = &msg
	return t.ProcessEvent(ctx, states.EventFail, target)
}

// ProcessEventAndRelease is ProcessEvent as the task's last act: the new
// state and the unlocking are one write, so a client that sees the new
// state finds the node free, and the end of the work costs one statement
// instead of a save and a release. The task must not be used afterwards
// (its Release becomes a no-op). On failure the lock is still held and
// Release (or the worker's end) releases it.
func (t *Task) ProcessEventAndRelease(ctx context.Context, event states.Event, targetOverride states.State) error {
	if err := t.requireExclusive(); err != nil {
		return err
	}
	if err := t.transition(event, targetOverride); err != nil {
		return err
	}
	if err := t.m.store.SaveAndReleaseNode(context.WithoutCancel(ctx), t.node, t.m.locker.Host(), t.epoch); err != nil {
		return fmt.Errorf("save node %s: %w", t.node.UUID, err)
	}
	t.saved(t.stored)
	t.released = true
	t.m.locker.Forget(t.node.UUID)
	return nil
}

func (t *Task) transition(event states.Event, targetOverride states.State) error {
	current := t.ProvisionState()
	next, target, err := states.Transition(current, event, targetOverride)
	if err != nil {
		return errs.InvalidStateRequested(string(event), t.node.UUID, string(current))
	}
	t.node.SetState(next, target)
	// As Ironic does: an operator follows a node's operation by its
	// request id through these lines.
	t.log.WithFields(logrus.Fields{"from": string(current), "provision_state": string(next), "target": string(target)}).
		Info("Provision state changed")
	if agentSession[current] != agentSession[next] {
		driver.WipeAgentSession(t.node)
	}
	return nil
}

// agentSession are the states in which an agent ramdisk runs for the
// operation under way (a deploy, clean, rescue or service). Entering one
// from outside means a new ramdisk will boot and look the node up;
// leaving means the ramdisk is done: either way the token and URL of any
// earlier ramdisk must go (a rebuild, a retried deploy), while moving
// between them (wait, resume, hold) keeps the running ramdisk's.
var agentSession = map[states.State]bool{
	states.Deploying: true, states.DeployWait: true, states.DeployHold: true,
	states.Cleaning: true, states.CleanWait: true, states.CleanHold: true,
	states.Rescuing: true, states.RescueWait: true,
	states.Servicing: true, states.ServiceWait: true, states.ServiceHold: true,
}

// Work is a job for a background worker. Run owns the task (and the lock)
// until it returns.
type Work struct {
	// Name appears in last_error when Run fails unexpectedly.
	Name string
	Run  func(ctx context.Context, t *Task) error
}

// ProcessEventAsync fires event, clears last_error (a new operation is
// starting), persists, and hands the locked task to a worker running w. If
// no worker is free the previous provision and target states are restored
// with last_error "No free conductor workers available" and
// NoFreeConductorWorker is returned.
func (t *Task) ProcessEventAsync(ctx context.Context, event states.Event, targetOverride states.State, w Work) error {
	if err := t.requireExclusive(); err != nil {
		return err
	}
	prevState, prevTarget := t.node.ProvisionState, t.node.TargetProvisionState
	if err := t.transition(event, targetOverride); err != nil {
		return err
	}
	t.node.LastError = nil
	if err := t.Save(ctx); err != nil {
		return err
	}
	return t.Spawn(ctx, w, func(ctx context.Context) error {
		t.node.ProvisionState, t.node.TargetProvisionState = prevState, prevTarget
		msg := NoFreeWorkersError
		t.node.LastError = &msg
		return t.Save(ctx)
	})
}

// Spawn hands the locked task to a worker running w; from then on the
// worker releases the lock and the caller must not touch the task again
// (its Release becomes a no-op). When the pool is full, onRefused (if not
// nil) runs while the lock is still held, and NoFreeConductorWorker is
// returned; the caller's Release then releases the lock.
func (t *Task) Spawn(ctx context.Context, w Work, onRefused func(ctx context.Context) error) error {
	if err := t.requireExclusive(); err != nil {
		return err
	}
	t.handedOff = true
	err := t.m.pool.Spawn(func() { t.runWorker(w) })
	if err == nil {
		return nil
	}
	t.handedOff = false
	if onRefused != nil {
		if herr := onRefused(ctx); herr != nil {
			t.log.WithError(herr).Error("Restoring the node after a refused worker failed")
		}
	}
	return err
}

func (t *Task) runWorker(w Work) {
	ctx := logging.NewContext(logging.ContextWithRequestID(t.m.workCtx, t.requestID), t.log)
	var err error
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
			t.log.WithField("stack", string(debug.Stack())).Errorf("Worker %s panicked: %v", w.Name, r)
		}
		if err != nil {
			t.recordFailure(ctx, w.Name, err)
		}
		t.release(ctx)
	}()
	err = w.Run(ctx, t)
}

// recordFailure runs after a worker failed unexpectedly. The in-memory node
// may be half-changed, so the stored row is re-read. A node left in a state
// only that worker could have moved on is failed, as a conductor restart
// would do, instead of waiting forever. The lock is released by the same
// write.
func (t *Task) recordFailure(ctx context.Context, name string, cause error) {
	t.log.WithError(cause).Errorf("Async execution of %s failed", name)
	node, err := t.m.store.GetNode(context.WithoutCancel(ctx), t.node.UUID)
	if err != nil {
		t.log.WithError(err).Error("Cannot re-read the node after a failed worker")
		return
	}
	t.node, t.stored = node, node.State()
	if node.LastError == nil {
		msg := fmt.Sprintf("Async execution of %s failed with error: %s", name, cause)
		node.LastError = &msg
	}
	// No power action survives its worker; a target left behind would also
	// keep the power sync away from the node for good.
	node.TargetPowerState = nil
	if _, stuck := states.StuckFailState(t.ProvisionState()); stuck {
		if terr := t.transition(states.EventFail, t.TargetProvisionState()); terr != nil {
			t.log.WithError(terr).Error("Cannot fail the node after a failed worker")
		}
	}
	// The failure and the unlocking land together: whoever sees the
	// failure can act on the node at once.
	if err := t.m.store.SaveAndReleaseNode(context.WithoutCancel(ctx), t.node, t.m.locker.Host(), t.epoch); err != nil {
		t.log.WithError(err).Error("Cannot record the failure of a worker")
		return
	}
	t.saved(t.stored)
	t.released = true
	t.m.locker.Forget(t.node.UUID)
}

// Release releases the lock unless it was handed to a worker. Safe to call
// more than once, and on shared tasks.
func (t *Task) Release(ctx context.Context) {
	if t.handedOff {
		return
	}
	t.release(ctx)
}

func (t *Task) release(ctx context.Context) {
	if t.shared || t.released {
		return
	}
	t.released = true
	// A cancelled request must not leave the lock behind.
	err := t.m.locker.Release(context.WithoutCancel(ctx), t.node.UUID, t.epoch)
	switch {
	case err == nil:
	case nodelock.Gone(err):
		t.log.WithError(err).Error("Releasing the node lock failed")
	default:
		t.log.WithError(err).Warn("Releasing the node lock failed; retrying until the database answers")
		go t.m.retryRelease(t.node.UUID, t.epoch, t.log)
	}
}

// Bounds of the pause between retries of a failed release.
const (
	releaseRetryMin = 100 * time.Millisecond
	releaseRetryMax = 5 * time.Second
)

// retryRelease retries a release the database did not carry out (it was
// restarting, or unreachable). The holder is alive, so no other conductor
// would ever break the lock, and the node would stay locked for good. It
// stops once the release lands, once the lock turns out to be gone, or at
// shutdown, which releases every lock of this host anyway.
func (m *Manager) retryRelease(uuid string, epoch int64, log logrus.FieldLogger) {
	wait := releaseRetryMin
	for {
		select {
		case <-m.workCtx.Done():
			return
		case <-time.After(wait):
		}
		err := m.locker.Release(m.workCtx, uuid, epoch)
		if err == nil {
			log.Info("Released the node lock on retry")
			return
		}
		if nodelock.Gone(err) {
			return
		}
		wait = min(2*wait, releaseRetryMax)
	}
}

func deref64(i *int64) int64 {
	if i == nil {
		return 0
	}
	return *i
}
