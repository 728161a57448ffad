package conductor

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// DoNodeClean starts a manual clean of a manageable node with the user's
// steps, in the user's order.
func (c *Conductor) DoNodeClean(ctx context.Context, args rpc.CleanArgs) error {
	t, err := c.tasks.Acquire(ctx, args.NodeID, "node manual cleaning")
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	n := t.Node()
	if n.Maintenance {
		return errs.NodeInMaintenance("cleaning", n.UUID)
	}
	if !states.Allowed(t.ProvisionState(), states.EventClean) {
		return errs.InvalidStateRequested("manual clean", n.UUID, string(t.ProvisionState()))
	}
	d, err := t.Driver()
	if err != nil {
		return err
	}
	if err := d.Power.Validate(ctx, t); err != nil {
		return validationError(err)
	}
	steps := args.CleanSteps
	return t.ProcessEventAsync(ctx, states.EventClean, states.Manageable, task.Work{Name: "do_node_clean",
		Run: func(ctx context.Context, t *task.Task) error { return c.doNodeClean(ctx, t, steps, true) }})
}

// skipAutomatedClean: automated cleaning is off globally, and the node does
// not ask for it itself.
func (c *Conductor) skipAutomatedClean(n *model.Node) bool {
	return !c.cfg.AutomatedClean && (n.AutomatedClean == nil || !*n.AutomatedClean)
}

// finishEvent ends a clean: manual cleans (and retired nodes) go back to
// manageable, automated ones to available.
func finishEvent(t *task.Task) states.Event {
	if t.TargetProvisionState() == states.Manageable {
		return states.EventManage
	}
	return states.EventDone
}

// doNodeClean runs a clean on a node already in cleaning.
func (c *Conductor) doNodeClean(ctx context.Context, t *task.Task, userSteps []map[string]any, manual bool) error {
	n := t.Node()
	if !manual && c.skipAutomatedClean(n) {
		t.Log().Info("Automated cleaning is disabled, skipping it")
		return t.ProcessEventAndRelease(ctx, finishEvent(t), "")
	}
	d, err := t.Driver()
	if err != nil {
		return err
	}
	if err := d.Power.Validate(ctx, t); err != nil {
		return c.cleaningFailed(ctx, t, fmt.Sprintf("Failed to validate power driver interface for node %s. Error: %s", n.UUID, err), false)
	}
	ensureInfo(n)
	// A new clean's erase record replaces the last one's.
	delete(n.DriverInternalInfo, "erase_record")
	n.DriverInternalInfo[manualCleaningKey] = manual
	if manual {
		n.DriverInternalInfo["clean_steps"] = userSteps
	}
	result, err := d.Deploy.PrepareCleaning(ctx, t)
	if err != nil {
		return c.cleaningFailed(ctx, t, fmt.Sprintf("Failed to prepare node %s for cleaning: %s", n.UUID, err), true)
	}
	if result == driver.Wait {
		// Steps are known once the ramdisk is up; it resumes through
		// continue_node_clean.
		return t.ProcessEvent(ctx, states.EventWait, t.TargetProvisionState())
	}
	if err := c.setCleaningSteps(ctx, t, d, manual); err != nil {
		return c.cleaningFailed(ctx, t, fmt.Sprintf("Cannot clean node %s. Error: %s", n.UUID, errs.Message(err)), true)
	}
	return c.doNextCleanStep(ctx, t, 0)
}

// interfacePriority breaks ties between steps of equal priority.
var interfacePriority = map[string]int{"power": 5, "management": 4, "deploy": 3, "bios": 2, "raid": 1}

// setCleaningSteps stores the steps to run in driver_internal_info: the
// driver's enabled steps by priority for an automated clean, the user's
// list (checked against the driver's) for a manual one.
func (c *Conductor) setCleaningSteps(ctx context.Context, t *task.Task, d *driver.Driver, manual bool) error {
	n := t.Node()
	available, err := d.CleanSteps(ctx, t)
	if err != nil {
		return err
	}
	var steps []driver.CleanStep
	if manual {
		var user []driver.CleanStep
		if err := remarshal(n.DriverInternalInfo["clean_steps"], &user); err != nil {
			return errs.InvalidParameterValue("invalid clean steps: %s", err)
		}
		var problems []string
		for _, u := range user {
			found := false
			for _, s := range available {
				if s.Interface == u.Interface && s.Step == u.Step {
					u.Priority, u.Abortable, u.RebootRequested, found = s.Priority, s.Abortable, s.RebootRequested, true
					break
				}
			}
			if !found {
				problems = append(problems, fmt.Sprintf("node does not support this clean step: %s", jsonText(u)))
				continue
			}
			steps = append(steps, u)
		}
		if len(problems) > 0 {
			return errs.InvalidParameterValue("%s", strings.Join(problems, "; "))
		}
	} else {
		for _, s := range available {
			if s.Priority > 0 {
				steps = append(steps, s)
			}
		}
		sort.SliceStable(steps, func(i, j int) bool {
			if steps[i].Priority != steps[j].Priority {
				return steps[i].Priority > steps[j].Priority
			}
			return interfacePriority[steps[i].Interface] > interfacePriority[steps[j].Interface]
		})
	}
	var stored []any
	if err := remarshal(steps, &stored); err != nil {
		return err
	}
	if stored == nil {
		stored = []any{}
	}
	n.DriverInternalInfo["clean_steps"] = stored
	delete(n.DriverInternalInfo, "clean_step_index")
	return nil
}

func remarshal(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// doNextCleanStep runs the stored steps from index on, until one goes
// asynchronous or all are done.
func (c *Conductor) doNextCleanStep(ctx context.Context, t *task.Task, index int) error {
	n := t.Node()
	d, err := t.Driver()
	if err != nil {
		return err
	}
	var steps []driver.CleanStep
	if err := remarshal(n.DriverInternalInfo["clean_steps"], &steps); err != nil {
		return c.cleaningFailed(ctx, t, fmt.Sprintf("Node %s has invalid clean steps: %s", n.UUID, err), true)
	}
	for i := index; i < len(steps); i++ {
		step := steps[i]
		var stepObj model.JSONObject
		if err := remarshal(step, &stepObj); err != nil {
			return err
		}
		n.CleanStep = stepObj
		n.DriverInternalInfo["clean_step_index"] = i
		if err := t.Save(ctx); err != nil {
			return err
		}
		stepper, ok := driver.Lookup[driver.CleanStepper](d, hwcatalog.InterfaceType(step.Interface))
		if !ok {
			return c.cleaningFailed(ctx, t, fmt.Sprintf("Node %s failed step %s: the %s interface has no clean steps", n.UUID, jsonText(step), step.Interface), true)
		}
		result, err := stepper.ExecuteCleanStep(ctx, t, step)
		if err != nil {
			return c.cleaningFailed(ctx, t, fmt.Sprintf("Node %s failed step %s: %s", n.UUID, jsonText(step), err), true)
		}
		if result == driver.Wait {
			return t.ProcessEvent(ctx, states.EventWait, t.TargetProvisionState())
		}
	}
	clearCleaningInfo(n)
	if err := d.Deploy.TearDownCleaning(ctx, t); err != nil {
		return c.cleaningFailed(ctx, t, fmt.Sprintf("Failed to tear down from cleaning for node %s, reason: %s", n.UUID, err), false)
	}
	// The clean's last write: every caller returns right after.
	return t.ProcessEventAndRelease(ctx, finishEvent(t), "")
}

// cleaningFailed puts the node into clean failed and maintenance. The
// cleaning environment is torn down first when it may have been set up.
func (c *Conductor) cleaningFailed(ctx context.Context, t *task.Task, msg string, tearDown bool) error {
	if tearDown {
		if d, err := t.Driver(); err == nil {
			if err := d.Deploy.TearDownCleaning(ctx, t); err != nil {
				t.Log().WithError(err).Error("Tearing down cleaning after a failure failed")
			}
		}
	}
	cleanFailure(t.Node(), msg)
	state := t.ProvisionState()
	if state == states.Cleaning || state == states.CleanWait {
		return t.FailKeepingTarget(ctx, msg)
	}
	t.Log().Error(msg)
	return t.Save(ctx)
}

// ContinueNodeClean resumes cleaning after the ramdisk finished a step.
func (c *Conductor) ContinueNodeClean(ctx context.Context, args rpc.NodeArgs) error {
	t, err := c.tasks.Acquire(ctx, args.NodeID, "continue node cleaning")
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	n := t.Node()
	if t.ProvisionState() != states.CleanWait {
		return errs.New(errs.KindInvalidStateRequested,
			"Cannot continue cleaning on %s, node is in %s state, should be %s", n.UUID, t.ProvisionState(), states.CleanWait)
	}
	next, abortAfter := nextCleanStep(n)
	if abortAfter != "" {
		return t.ProcessEventAsync(ctx, states.EventAbort, t.TargetProvisionState(), task.Work{Name: "do_node_clean_abort",
			Run: func(ctx context.Context, t *task.Task) error { return c.doNodeCleanAbort(ctx, t, abortAfter) }})
	}
	return t.ProcessEventAsync(ctx, states.EventResume, t.TargetProvisionState(), task.Work{Name: "do_next_clean_step",
		Run: func(ctx context.Context, t *task.Task) error { return c.doNextCleanStep(ctx, t, next) }})
}

// nextCleanStep is the index of the step to run next (the current one
// again when skip_current_clean_step is false), and the name of the
// current step when the clean must be aborted after it.
func nextCleanStep(n *model.Node) (next int, abortAfter string) {
	ensureInfo(n)
	if idx, ok := n.DriverInternalInfo["clean_step_index"].(float64); ok {
		next = int(idx) + 1
		if skip, ok := n.DriverInternalInfo["skip_current_clean_step"].(bool); ok && !skip {
			next = int(idx)
		}
	}
	delete(n.DriverInternalInfo, "skip_current_clean_step")
	if after, _ := n.CleanStep["abort_after"].(bool); after {
		var steps []any
		_ = remarshal(n.DriverInternalInfo["clean_steps"], &steps)
		if next < len(steps) {
			abortAfter, _ = n.CleanStep["step"].(string)
		}
	}
	return next, abortAfter
}

// manualCleaningKey tells a manual clean from an automated one; both may
// end in manageable (a retired node's automated clean does).
const manualCleaningKey = "cleaning_manual"

// cleaner is the conductor's task.Cleaner: a deploy interface moves a
// clean on through it when its ramdisk calls back, in the worker holding
// the lock.
type cleaner struct{ c *Conductor }

// SetCleanSteps computes the steps of the clean from the driver's current
// ones (manual: checks the user's against them).
func (cl cleaner) SetCleanSteps(ctx context.Context, t *task.Task) error {
	d, err := t.Driver()
	if err != nil {
		return err
	}
	manual, _ := t.Node().DriverInternalInfo[manualCleaningKey].(bool)
	return cl.c.setCleaningSteps(ctx, t, d, manual)
}

// ContinueCleaning is continue_node_clean run in this worker: the lock is
// already held, so no RPC round trip can lose the step to a race.
func (cl cleaner) ContinueCleaning(ctx context.Context, t *task.Task, rerunCurrent bool) error {
	n := t.Node()
	ensureInfo(n)
	if rerunCurrent {
		n.DriverInternalInfo["skip_current_clean_step"] = false
	}
	next, abortAfter := nextCleanStep(n)
	if abortAfter != "" {
		if err := t.ProcessEvent(ctx, states.EventAbort, t.TargetProvisionState()); err != nil {
			return err
		}
		return cl.c.doNodeCleanAbort(ctx, t, abortAfter)
	}
	n.LastError = nil
	if err := t.ProcessEvent(ctx, states.EventResume, t.TargetProvisionState()); err != nil {
		return err
	}
	return cl.c.doNextCleanStep(ctx, t, next)
}

// FailCleaning ends the clean in clean failed, tearing cleaning down.
func (cl cleaner) FailCleaning(ctx context.Context, t *task.Task, msg string) error {
	return cl.c.cleaningFailed(ctx, t, msg, true)
}

// abortCleaning aborts a clean waiting for its ramdisk. A step that cannot
// be interrupted is marked to abort once it completes.
func (c *Conductor) abortCleaning(ctx context.Context, t *task.Task) error {
	n := t.Node()
	if len(n.CleanStep) > 0 {
		if abortable, _ := n.CleanStep["abortable"].(bool); !abortable {
			n.CleanStep["abort_after"] = true
			t.Log().Info("The current clean step is not abortable; cleaning will be aborted after it completes")
			return t.Save(ctx)
		}
	}
	return t.ProcessEventAsync(ctx, states.EventAbort, t.TargetProvisionState(), task.Work{Name: "do_node_clean_abort",
		Run: func(ctx context.Context, t *task.Task) error { return c.doNodeCleanAbort(ctx, t, "") }})
}

func (c *Conductor) doNodeCleanAbort(ctx context.Context, t *task.Task, afterStep string) error {
	n := t.Node()
	d, err := t.Driver()
	if err != nil {
		return err
	}
	if err := d.Deploy.TearDownCleaning(ctx, t); err != nil {
		cleanFailure(n, fmt.Sprintf("Failed to tear down cleaning after aborting the operation. Error: %s", err))
		return t.Save(ctx)
	}
	msg := "By request, the clean operation was aborted"
	if afterStep != "" {
		msg += fmt.Sprintf(" after the completion of step \"%s\"", afterStep)
	}
	n.LastError = &msg
	clearCleaningInfo(n)
	return t.Save(ctx)
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
