package conductor

import (
	"context"
	"slices"

	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// A periodic task or a restarting conductor fails the nodes it finds stuck
// in a transient state; the selection is read without the lock, so each
// node is checked again under it.

// nodeInfoColumns is what periodic tasks read of every candidate node: the
// fields they filter on. The full row is loaded again under the lock.
var nodeInfoColumns = []string{"id", "uuid", "driver", "conductor_group", "provision_state",
	"target_provision_state", "reservation", "maintenance", "power_state", "target_power_state",
	"conductor_affinity", "provision_updated_at"}

// mapped reports whether the hash ring gives the node to this conductor.
func (c *Conductor) mapped(ctx context.Context, n *model.Node) bool {
	host, err := c.ring.Lookup(ctx, n.ConductorGroup, n.Driver, n.UUID)
	return err == nil && host == c.host
}

// failure describes how failIfInState fails a node.
type failure struct {
	lastError  string
	keepTarget bool
	// skipMaintenance leaves nodes in maintenance alone: an operator froze
	// them.
	skipMaintenance bool
	// apply makes further changes under the lock before the transition.
	apply func(n *model.Node)
	// cleanup, if set, runs in a worker after the node was failed.
	cleanup *task.Work
}

// failIfInState locks the node and, if it is still in one of inStates
// (the list it was selected from may be stale), fires fail as describe says
// for the node as read under the lock. It reports whether the node was
// failed. Locked or vanished nodes are skipped.
func (c *Conductor) failIfInState(ctx context.Context, uuid string, inStates []states.State, describe func(n *model.Node) failure) bool {
	t, err := c.tasks.Acquire(ctx, uuid, "fail node in transient state")
	if err != nil {
		logging.FromContext(ctx, c.log).WithError(err).WithField("node", uuid).Debug("Skipping node")
		return false
	}
	defer t.Release(ctx)
	n := t.Node()
	f := describe(n)
	if !slices.Contains(inStates, t.ProvisionState()) || (f.skipMaintenance && n.Maintenance) {
		return false
	}
	if f.apply != nil {
		f.apply(n)
	}
	fail := t.Fail
	if f.keepTarget {
		fail = t.FailKeepingTarget
	}
	if err := fail(ctx, f.lastError); err != nil {
		t.Log().WithError(err).Error("Cannot fail node")
		return false
	}
	if f.cleanup != nil {
		if err := t.Spawn(ctx, *f.cleanup, nil); err != nil {
			t.Log().WithError(err).Warnf("Skipping %s", f.cleanup.Name)
		}
	}
	return true
}
