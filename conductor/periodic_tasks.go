package conductor

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// budget caps one periodic run: at most periodic_max_workers nodes acted
// upon, and nothing more once the worker pool is full, so periodic work
// never crowds out user requests.
type budget struct {
	left int
	c    *Conductor
}

func (c *Conductor) newBudget() *budget { return &budget{left: max(c.cfg.PeriodicMaxWorkers, 1), c: c} }

func (b *budget) take() bool {
	if b.left <= 0 || b.c.pool.Free() == 0 {
		return false
	}
	b.left--
	return true
}

// periodicBatch is how many nodes one query of a periodic task reads.
const periodicBatch = 500

// mappedNodes lists the nodes matching f that the ring gives to this
// conductor, ordered by id. The database returns only nodes of this
// conductor's group and hardware types, in batches, and only the ones the
// ring maps here are kept: memory follows the nodes a conductor owns, not
// the deployment's size.
func (c *Conductor) mappedNodes(ctx context.Context, f db.NodeFilter) []model.Node {
	f.ConductorGroupFold = &c.cfg.ConductorGroup
	f.Drivers = c.drivers.HardwareTypes()
	// A group/hardware type without a live conductor makes every lookup
	// rebuild the ring; ask once per run.
	unserved := map[[2]string]bool{}
	var out []model.Node
	for {
		nodes, err := c.store.ListNodes(ctx, f, db.Page{Limit: periodicBatch, SortKey: "id"}, nodeInfoColumns)
		if err != nil {
			if ctx.Err() == nil {
				logging.FromContext(ctx, c.log).WithError(err).Error("Periodic task cannot list nodes")
			}
			return out
		}
		for i := range nodes {
			n := &nodes[i]
			key := [2]string{n.ConductorGroup, n.Driver}
			if unserved[key] {
				continue
			}
			host, err := c.ring.Lookup(ctx, n.ConductorGroup, n.Driver, n.UUID)
			if err != nil {
				unserved[key] = true
				continue
			}
			if host == c.host {
				out = append(out, *n)
			}
		}
		if len(nodes) < periodicBatch {
			return out
		}
		f.IDAbove = nodes[len(nodes)-1].ID
	}
}

// waitTimeout is one kind of callback timeout.
type waitTimeout struct {
	state   states.State
	timeout time.Duration
	fail    func(n *model.Node) failure
}

func (c *Conductor) waitTimeouts() []waitTimeout {
	return []waitTimeout{
		{states.DeployWait, c.cfg.DeployCallbackTimeout, func(n *model.Node) failure {
			return failure{
				lastError: fmt.Sprintf("Timeout reached while waiting for callback for node %s", n.UUID),
				cleanup: &task.Work{Name: "cleanup_after_timeout", Run: func(ctx context.Context, t *task.Task) error {
					d, err := t.Driver()
					if err != nil {
						return err
					}
					// What the clean-up dropped (the deploy key) must be
					// stored, even when part of it failed.
					if err := d.Deploy.CleanUp(ctx, t); err != nil {
						t.Log().WithError(err).Error("Cleaning up after the deploy callback timeout failed")
					}
					return t.Save(ctx)
				}},
			}
		}},
		{states.CleanWait, c.cfg.CleanCallbackTimeout, func(n *model.Node) failure {
			msg := fmt.Sprintf("Timeout reached while cleaning the node. Please check if the ramdisk responsible for the cleaning is running on the node. Failed on step %s.", jsonText(n.CleanStep))
			return failure{
				lastError:  msg,
				keepTarget: true,
				apply:      func(n *model.Node) { cleanFailure(n, msg) },
				cleanup:    tearDownCleaningWork,
			}
		}},
		{states.InspectWait, c.cfg.InspectWaitTimeout, func(*model.Node) failure {
			return failure{lastError: "timeout reached while inspecting the node"}
		}},
		{states.RescueWait, c.cfg.RescueCallbackTimeout, func(n *model.Node) failure {
			return failure{lastError: fmt.Sprintf("Timeout reached while waiting for rescue ramdisk callback for node %s", n.UUID), keepTarget: true}
		}},
		{states.ServiceWait, c.cfg.CleanCallbackTimeout, func(n *model.Node) failure {
			return failure{lastError: fmt.Sprintf("Timeout reached while servicing the node. Please check if the ramdisk responsible for the servicing is running on the node. Failed on step %s.", jsonText(n.DeployStep)), keepTarget: true}
		}},
	}
}

// tearDownCleaningWork undoes a failed clean's set-up and records what
// that changed (power state, the ramdisk's bookkeeping), even when part
// of it failed.
var tearDownCleaningWork = &task.Work{Name: "tear_down_cleaning", Run: func(ctx context.Context, t *task.Task) error {
	d, err := t.Driver()
	if err != nil {
		return err
	}
	if err := d.Deploy.TearDownCleaning(ctx, t); err != nil {
		t.Log().WithError(err).Error("Tearing down cleaning failed")
	}
	return t.Save(ctx)
}}

// checkCallbackTimeouts fails unreserved nodes that waited for their
// ramdisk longer than allowed. The clock is provision_updated_at, which
// every state change and agent heartbeat refreshes.
func (c *Conductor) checkCallbackTimeouts(ctx context.Context) {
	b := c.newBudget()
	notReserved, notMaintenance := false, false
	for _, wt := range c.waitTimeouts() {
		if wt.timeout <= 0 {
			continue
		}
		before := time.Now().UTC().Add(-wt.timeout)
		nodes := c.mappedNodes(ctx, db.NodeFilter{
			ProvisionStates:        []string{string(wt.state)},
			Reserved:               &notReserved,
			Maintenance:            &notMaintenance,
			ProvisionUpdatedBefore: &before,
		})
		// The longest overdue first: the budget may not reach them all.
		sort.SliceStable(nodes, func(i, j int) bool {
			return nodes[i].ProvisionUpdatedAt.Before(*nodes[j].ProvisionUpdatedAt)
		})
		for i := range nodes {
			if !b.take() {
				return
			}
			fail := wt.fail
			c.failIfInState(ctx, nodes[i].UUID, []states.State{wt.state}, func(n *model.Node) failure {
				f := fail(n)
				f.skipMaintenance = true
				return f
			})
		}
	}
}

// offlineConductors are the other conductors whose heartbeat is too old.
// This host is never among them: a conductor that still runs this code is
// alive, whatever its row says.
func (c *Conductor) offlineConductors(ctx context.Context) []string {
	hosts, err := c.store.OfflineConductors(ctx, c.cfg.HeartbeatTimeout)
	if err != nil {
		if ctx.Err() == nil {
			logging.FromContext(ctx, c.log).WithError(err).Error("Cannot list offline conductors")
		}
		return nil
	}
	return slices.DeleteFunc(hosts, func(h string) bool { return h == c.host })
}

// checkOrphanNodes fails the nodes left without a worker in a state only a
// worker moves on, frees nodes still locked by conductors that died, and
// fails the operations those conductors can no longer finish.
func (c *Conductor) checkOrphanNodes(ctx context.Context) {
	// The grace keeps clear of a worker that is between its save and its
	// start; none takes this long.
	grace := time.Now().Add(-c.cfg.HeartbeatTimeout)
	c.failStuckNodes(ctx, &grace)
	offline := c.offlineConductors(ctx)
	if len(offline) == 0 {
		return
	}
	nodes, err := c.store.ListNodes(ctx, db.NodeFilter{ReservedBy: offline}, db.Page{}, nodeInfoColumns)
	if err != nil {
		if ctx.Err() == nil {
			logging.FromContext(ctx, c.log).WithError(err).Error("Cannot list nodes locked by offline conductors")
		}
		return
	}
	if len(nodes) == 0 {
		return
	}
	// The dead hosts' nodes must map to the survivors now, not at the next
	// scheduled ring refresh.
	c.ring.Reset()
	b := c.newBudget()
	for _, n := range nodes {
		if !c.mapped(ctx, &n) {
			continue
		}
		holder := deref(n.Reservation)
		if !slices.Contains(offline, holder) {
			continue
		}
		if err := c.store.ReleaseNode(ctx, n.UUID, holder, 0); err != nil {
			logging.FromContext(ctx, c.log).WithError(err).WithField("node", n.UUID).Warnf("Cannot release the lock of offline conductor %s", holder)
			continue
		}
		logging.FromContext(ctx, c.log).WithField("node", n.UUID).Warnf("Released the lock of offline conductor %s", holder)
		if n.Maintenance {
			continue
		}
		if n.TargetPowerState == nil && !isStuck(n.State()) {
			continue
		}
		if !b.take() {
			return
		}
		c.abortTakenOver(ctx, n.UUID)
	}
}

func isStuck(state states.State) bool {
	_, ok := states.StuckFailState(state)
	return ok
}

// abortTakenOver ends what a dead conductor left half done on a node.
func (c *Conductor) abortTakenOver(ctx context.Context, uuid string) {
	t, err := c.tasks.Acquire(ctx, uuid, "conductor take over")
	if err != nil {
		logging.FromContext(ctx, c.log).WithError(err).WithField("node", uuid).Debug("Skipping node")
		return
	}
	defer t.Release(ctx)
	n := t.Node()
	if n.Maintenance {
		return
	}
	changed := false
	if n.TargetPowerState != nil {
		n.TargetPowerState, n.LastError = nil, ptr(abortedByTakeOver)
		changed = true
	}
	state := t.ProvisionState()
	if isStuck(state) {
		msg := "Operation was aborted due to conductor take over"
		if state == states.Cleaning {
			cleanFailure(n, msg)
		}
		if err := t.FailKeepingTarget(ctx, msg); err != nil {
			t.Log().WithError(err).Error("Cannot fail node taken over")
			return
		}
		if state == states.Cleaning {
			if err := t.Spawn(ctx, *tearDownCleaningWork, nil); err != nil {
				t.Log().WithError(err).Warn("Skipping tear down of cleaning")
			}
		}
		return
	}
	if changed {
		if err := t.Save(ctx); err != nil {
			t.Log().WithError(err).Error("Cannot abort pending power operation")
		}
	}
}

// syncLocalState takes over active nodes that the ring now gives to this
// conductor but that another conductor deployed or last took over.
func (c *Conductor) syncLocalState(ctx context.Context) {
	me := c.conductorID()
	if me == nil {
		return
	}
	notReserved, notMaintenance := false, false
	b := c.newBudget()
	for _, n := range c.mappedNodes(ctx, db.NodeFilter{ProvisionStates: []string{string(states.Active)},
		Reserved: &notReserved, Maintenance: &notMaintenance}) {
		if n.ConductorAffinity != nil && *n.ConductorAffinity == *me {
			continue
		}
		if !b.take() {
			return
		}
		c.takeOverActive(ctx, n.UUID, *me)
	}
}

func (c *Conductor) takeOverActive(ctx context.Context, uuid string, me int64) {
	t, err := c.tasks.Acquire(ctx, uuid, "node take over")
	if err != nil {
		logging.FromContext(ctx, c.log).WithError(err).WithField("node", uuid).Debug("Skipping node")
		return
	}
	defer t.Release(ctx)
	n := t.Node()
	if t.ProvisionState() != states.Active || n.Maintenance || (n.ConductorAffinity != nil && *n.ConductorAffinity == me) {
		return
	}
	err = t.Spawn(ctx, task.Work{Name: "take_over", Run: func(ctx context.Context, t *task.Task) error {
		if err := c.takeOver(ctx, t, false); err != nil {
			return err
		}
		t.Log().Info("Took over node")
		return t.Save(ctx)
	}}, nil)
	if err != nil {
		t.Log().WithError(err).Warn("Skipping take over")
	}
}

// syncPowerStates compares every mapped node's recorded power state with
// the hardware's, periodic_max_workers nodes at a time. Nodes that failed
// before go first.
func (c *Conductor) syncPowerStates(ctx context.Context) {
	start := time.Now()
	// Every mapped node is read, maintenance ones too (skipped below), to
	// count the nodes this conductor owns.
	nodes := c.mappedNodes(ctx, db.NodeFilter{})
	defer func() { c.metrics.ObservePowerSync(time.Since(start), len(nodes)) }()
	c.powerMu.Lock()
	sort.SliceStable(nodes, func(i, j int) bool {
		return c.powerFailures[nodes[i].UUID] > c.powerFailures[nodes[j].UUID]
	})
	c.powerMu.Unlock()
	sem := make(chan struct{}, max(c.cfg.PeriodicMaxWorkers, 1))
	var wg sync.WaitGroup
	checked, skipped := 0, 0
	for i := range nodes {
		n := &nodes[i]
		if skipPowerSync(n) {
			skipped++
			continue
		}
		if ctx.Err() != nil {
			break
		}
		if c.pool.Free() == 0 {
			c.log.WithFields(logrus.Fields{"checked": checked, "nodes": len(nodes)}).
				Warn("Power sync cut its cycle short: the worker pool is full (raise workers_pool_size above periodic_max_workers)")
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		checked++
		go func(uuid string) {
			defer func() { <-sem; wg.Done() }()
			c.syncNodePower(ctx, uuid)
		}(n.UUID)
	}
	wg.Wait()
	// Whether a cycle that fits its interval read every node, or stopped
	// early, is what an operator sizing periodic_max_workers needs to know.
	c.log.WithFields(logrus.Fields{"nodes": len(nodes), "checked": checked, "skipped": skipped}).Info("Power sync cycle")
}

// skipPowerSync: someone holds or is about to change the node, or a
// ramdisk may call back any moment and must not find the node locked.
func skipPowerSync(n *model.Node) bool {
	return n.Maintenance || n.Reservation != nil || n.TargetPowerState != nil ||
		states.SyncPowerExcluded(n.State())
}

func (c *Conductor) powerFailure(uuid string) int {
	c.powerMu.Lock()
	defer c.powerMu.Unlock()
	c.powerFailures[uuid]++
	return c.powerFailures[uuid]
}

func (c *Conductor) powerSynced(uuid string) {
	c.powerMu.Lock()
	defer c.powerMu.Unlock()
	delete(c.powerFailures, uuid)
}

func (c *Conductor) syncNodePower(ctx context.Context, uuid string) {
	t, err := c.tasks.AcquireShared(ctx, uuid, "power state sync")
	if err != nil {
		return
	}
	defer t.Release(ctx)
	n := t.Node()
	if skipPowerSync(n) {
		return
	}
	d, err := t.Driver()
	if err != nil {
		return
	}
	// One node whose BMC hangs must not hold its worker, and with it the
	// end of the cycle, for ever.
	readCtx, cancel := context.WithTimeout(ctx, c.cfg.PowerStateSyncTimeout)
	defer cancel()
	if n.PowerState == nil {
		// Never verified: wrong credentials are not a power failure.
		if err := d.Power.Validate(readCtx, t); err != nil {
			return
		}
	}
	actual, err := d.Power.GetPowerState(readCtx, t)
	if err == nil && actual == states.PowerError {
		err = errs.New(errs.KindPowerStateFailure, "Power driver returned ERROR state while trying to sync power state.")
	}
	if err != nil {
		t.Log().WithError(err).Warn("Power state sync cannot read the power state")
		if c.powerFailure(uuid) >= c.cfg.PowerStateSyncMaxRetries {
			c.powerSyncGiveUp(ctx, t, nil, err)
		}
		return
	}
	if n.PowerState != nil && *n.PowerState == actual {
		c.powerSynced(uuid)
		return
	}
	if err := t.Upgrade(ctx); err != nil {
		return
	}
	n = t.Node()
	if skipPowerSync(&model.Node{Maintenance: n.Maintenance, TargetPowerState: n.TargetPowerState, ProvisionState: n.ProvisionState}) {
		return
	}
	if n.PowerState == nil {
		n.PowerState = &actual
		if err := t.Save(ctx); err == nil {
			c.powerSynced(uuid)
		}
		return
	}
	if *n.PowerState == actual {
		c.powerSynced(uuid)
		return
	}
	if !c.cfg.ForcePowerStateDuringSync {
		t.Log().Warnf("Power state %q does not match the recorded %q; recording the hardware's", actual, *n.PowerState)
		n.PowerState = &actual
		if err := t.Save(ctx); err == nil {
			c.powerSynced(uuid)
		}
		return
	}
	if c.powerFailure(uuid) >= c.cfg.PowerStateSyncMaxRetries {
		c.powerSyncGiveUp(ctx, t, &actual, nil)
		return
	}
	t.Log().Warnf("Power state %q does not match the recorded %q; changing the hardware back", actual, *n.PowerState)
	if err := c.powerAction(ctx, t, *n.PowerState, c.cfg.PowerStateChangeTimeout); err != nil {
		t.Log().WithError(err).Error("Forcing the power state failed")
	}
}

// powerSyncGiveUp stops fighting the hardware: the node records what was
// read and goes into maintenance with a power failure.
func (c *Conductor) powerSyncGiveUp(ctx context.Context, t *task.Task, actual *string, cause error) {
	if err := t.Upgrade(ctx); err != nil {
		return
	}
	n := t.Node()
	if n.Maintenance {
		return
	}
	msg := fmt.Sprintf("During sync_power_state, max retries exceeded for node %s, node state %s does not match expected state '%s'. Updating DB state to '%s' Switching node to maintenance mode.",
		n.UUID, orNone(actual), orNone(n.PowerState), orNone(actual))
	if cause != nil {
		msg += fmt.Sprintf(" Error: %s", cause)
	}
	reason := msg
	n.PowerState = actual
	n.Maintenance, n.MaintenanceReason, n.LastError = true, &reason, &msg
	n.Fault = ptr("power failure")
	if err := t.Save(ctx); err != nil {
		t.Log().WithError(err).Error("Cannot put node into maintenance after power sync failures")
		return
	}
	t.Log().Error(msg)
	c.powerSynced(n.UUID)
}
