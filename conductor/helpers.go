package conductor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

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

// cleanFailure marks a node whose cleaning failed: it goes into
// maintenance so nobody is handed a half-cleaned machine.
func cleanFailure(n *model.Node, msg string) {
	n.LastError = &msg
	reason := msg
	n.Maintenance, n.MaintenanceReason = true, &reason
	fault := "clean failure"
	n.Fault = &fault
	clearCleaningInfo(n)
}

// cleaningInfoKeys are the driver_internal_info entries of a clean in
// progress.
var cleaningInfoKeys = []string{"clean_steps", "clean_step_index", "cleaning_reboot",
	"cleaning_polling", "skip_current_clean_step", "agent_cached_clean_steps", manualCleaningKey}

func clearCleaningInfo(n *model.Node) {
	n.CleanStep = model.JSONObject{}
	for _, k := range cleaningInfoKeys {
		delete(n.DriverInternalInfo, k)
	}
}

// resultEvent is the state-machine event a driver's result fires: drivers
// say what happened, the conductor decides what it means for the node.
func resultEvent(r driver.Result) states.Event {
	if r == driver.Wait {
		return states.EventWait
	}
	return states.EventDone
}

// validationError keeps typed driver validation errors and turns anything
// else into InvalidParameterValue, so the API never answers 500 for a node
// whose driver_info is wrong.
func validationError(err error) error {
	if _, ok := errs.As(err); ok {
		return err
	}
	return errs.InvalidParameterValue("%s", err.Error())
}

func nodeProtected(uuid string) *errs.Error {
	return errs.New(errs.KindNodeProtected, "Node %s is protected and cannot be undeployed, rebuilt or deleted", uuid)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ptr[T any](v T) *T { return &v }

func orNone(s *string) string {
	if s == nil {
		return "None"
	}
	return *s
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func ensureInfo(n *model.Node) {
	if n.DriverInternalInfo == nil {
		n.DriverInternalInfo = model.JSONObject{}
	}
	if n.InstanceInfo == nil {
		n.InstanceInfo = model.JSONObject{}
	}
}
