package conductor

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// DoNodeDeploy starts a deploy (or rebuild) of an available, active,
// failed or errored node.
//
// A config drive the API stored (args.ConfigDriveID) is this call's to
// keep or drop: a refused deploy deletes it, an accepted one replaces the
// node's earlier drives.
func (c *Conductor) DoNodeDeploy(ctx context.Context, args rpc.DeployArgs) error {
	referenced := false
	if args.ConfigDriveID != "" {
		defer func() {
			if referenced {
				return
			}
			if derr := c.store.DeleteConfigDrive(context.WithoutCancel(ctx), args.ConfigDriveID); derr != nil {
				logging.FromContext(ctx, c.log).WithError(derr).WithField("node", args.NodeID).Warn("Could not delete the config drive of a refused deploy")
			}
		}()
	}
	t, err := c.tasks.Acquire(ctx, args.NodeID, "node deployment")
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	n := t.Node()
	event := states.EventDeploy
	if args.Rebuild {
		event = states.EventRebuild
	}
	if n.Maintenance {
		return errs.NodeInMaintenance("provisioning", n.UUID)
	}
	if args.Rebuild && n.Protected {
		return nodeProtected(n.UUID)
	}
	if !states.Allowed(t.ProvisionState(), event) {
		return errs.InvalidStateRequested(string(event), n.UUID, string(t.ProvisionState()))
	}
	d, err := t.Driver()
	if err != nil {
		return err
	}
	for _, validate := range []func() error{
		func() error { return d.Power.Validate(ctx, t) },
		func() error { return d.Deploy.Validate(ctx, t) },
	} {
		if err := validate(); err != nil {
			return &errs.Error{Kind: errs.KindInstanceDeployFailure, Err: err,
				Message: fmt.Sprintf("Failed to validate deploy or power info for node %s. Errors: %s", n.UUID, errs.Message(err))}
		}
	}
	switch {
	case args.ConfigDriveID != "":
		ensureInfo(n)
		n.InstanceInfo["configdrive"] = model.StoredConfigDriveRef(args.ConfigDriveID)
		// From here the saved node may refer to the drive, even when
		// the deploy cannot start after all.
		referenced = true
	case args.ConfigDrive != nil:
		ensureInfo(n)
		n.InstanceInfo["configdrive"] = args.ConfigDrive
	}
	// The worker owns n once the event is processed.
	nodeID := n.ID
	if err := t.ProcessEventAsync(ctx, event, "", task.Work{Name: "do_node_deploy", Run: c.doNodeDeploy}); err != nil {
		return err
	}
	if args.ConfigDriveID != "" || args.ConfigDrive != nil {
		if derr := c.store.DeleteNodeConfigDrives(ctx, nodeID, args.ConfigDriveID); derr != nil {
			logging.FromContext(ctx, c.log).WithError(derr).WithField("node", args.NodeID).Warn("Could not delete the replaced config drives of a node")
		}
	}
	return nil
}

func (c *Conductor) doNodeDeploy(ctx context.Context, t *task.Task) error {
	d, err := t.Driver()
	if err != nil {
		return err
	}
	if err := d.Deploy.Prepare(ctx, t); err != nil {
		return t.Fail(ctx, fmt.Sprintf("Failed to prepare to deploy. Error: %s", err))
	}
	result, err := d.Deploy.Deploy(ctx, t)
	if err != nil {
		return t.Fail(ctx, fmt.Sprintf("Failed to deploy. Error: %s", err))
	}
	return c.deployStepDone(ctx, t, result)
}

// deployStepDone moves the node on after the deploy interface returned;
// it ends the worker's work on the node.
func (c *Conductor) deployStepDone(ctx context.Context, t *task.Task, result driver.Result) error {
	t.Node().ConductorAffinity = c.conductorID()
	return t.ProcessEventAndRelease(ctx, resultEvent(result), "")
}

// ContinueNodeDeploy resumes a deploy waiting for its ramdisk.
func (c *Conductor) ContinueNodeDeploy(ctx context.Context, args rpc.NodeArgs) error {
	t, err := c.tasks.Acquire(ctx, args.NodeID, "continue node deploy")
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	if t.ProvisionState() != states.DeployWait {
		return errs.New(errs.KindInvalidStateRequested,
			"Cannot continue deploying on %s. Node is in %s state; should be in %s state", t.Node().UUID, t.ProvisionState(), states.DeployWait)
	}
	return t.ProcessEventAsync(ctx, states.EventResume, t.TargetProvisionState(), task.Work{Name: "continue_node_deploy",
		Run: func(ctx context.Context, t *task.Task) error {
			d, err := t.Driver()
			if err != nil {
				return err
			}
			result, err := d.Deploy.ContinueDeploy(ctx, t)
			if err != nil {
				return t.Fail(ctx, fmt.Sprintf("Failed to deploy. Error: %s", err))
			}
			return c.deployStepDone(ctx, t, result)
		}})
}

// DoNodeTearDown undeploys a node; automated cleaning follows.
func (c *Conductor) DoNodeTearDown(ctx context.Context, args rpc.NodeArgs) error {
	t, err := c.tasks.Acquire(ctx, args.NodeID, "node tear down")
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	n := t.Node()
	if n.Protected {
		return nodeProtected(n.UUID)
	}
	if !states.Allowed(t.ProvisionState(), states.EventDelete) {
		return errs.InvalidStateRequested(string(states.EventDelete), n.UUID, string(t.ProvisionState()))
	}
	d, err := t.Driver()
	if err != nil {
		return err
	}
	if err := d.Power.Validate(ctx, t); err != nil {
		return &errs.Error{Kind: errs.KindInstanceDeployFailure, Err: err,
			Message: fmt.Sprintf("Failed to validate power driver interface. Can not delete instance. Error: %s", errs.Message(err))}
	}
	return t.ProcessEventAsync(ctx, states.EventDelete, "", task.Work{Name: "do_node_tear_down", Run: c.doNodeTearDown})
}

// instanceInfoKeys are the driver_internal_info entries that describe the
// deployed instance; they go with it.
var instanceInfoKeys = []string{"instance", "root_uuid_or_disk_id", "is_whole_disk_image",
	"deploy_boot_mode", "agent_url", "agent_secret_token", "agent_secret_token_pregenerated", "agent_lookup_address",
	"agent_cached_deploy_steps", "deploy_steps", "deploy_step_index"}

func (c *Conductor) doNodeTearDown(ctx context.Context, t *task.Task) error {
	n := t.Node()
	d, err := t.Driver()
	if err != nil {
		return err
	}
	if n.ConsoleEnabled {
		// Nobody may keep a console on a machine the next tenant gets.
		if ci, cerr := driver.Require[driver.ConsoleInterface](d, hwcatalog.Console); cerr != nil {
			t.Log().WithError(cerr).Warn("Cannot stop the console of a node being torn down")
		} else if cerr := ci.StopConsole(ctx, t); cerr != nil {
			t.Log().WithError(cerr).Error("Stopping the console of a node being torn down failed")
		} else {
			n.ConsoleEnabled = false
		}
	}
	err = d.Deploy.CleanUp(ctx, t)
	if err == nil {
		_, err = d.Deploy.TearDown(ctx, t)
	}
	if _, keeps := driver.Lookup[driver.StorageKeeper](d, hwcatalog.Deploy); err == nil && !keeps {
		err = c.tearDownStorage(ctx, t)
	}
	if err == nil {
		// The instance leaves the node, and so does its allocation.
		err = c.releaseAllocation(ctx, n)
	}
	// The instance is gone (or unusable) either way.
	n.InstanceInfo = model.JSONObject{}
	if derr := c.store.DeleteNodeConfigDrives(ctx, n.ID, ""); derr != nil {
		t.Log().WithError(derr).Warn("Could not delete the config drives of a node being torn down")
	}
	n.InstanceUUID = nil
	n.DeployStep = model.JSONObject{}
	for _, k := range instanceInfoKeys {
		delete(n.DriverInternalInfo, k)
	}
	if err != nil {
		msg := fmt.Sprintf("Failed to tear down. Error: %s", err)
		return t.Fail(ctx, msg)
	}
	var target states.State
	if n.Retired {
		// A retired machine must not go back into the available pool.
		target = states.Manageable
	}
	if err := t.ProcessEvent(ctx, states.EventClean, target); err != nil {
		return err
	}
	return c.doNodeClean(ctx, t, nil, false)
}

// DoProvisioningAction runs manage, provide, adopt, inspect or abort.
func (c *Conductor) DoProvisioningAction(ctx context.Context, args rpc.ProvisioningActionArgs) error {
	// The RPC carries the API's string; from here on it is an event.
	action := states.Event(args.Action)
	if !slices.Contains([]states.Event{states.EventManage, states.EventProvide, states.EventAdopt, states.EventInspect, states.EventAbort}, action) {
		return errs.InvalidParameterValue("The provisioning action %q is not supported by this call.", args.Action)
	}
	t, err := c.tasks.Acquire(ctx, args.NodeID, "provision action "+args.Action)
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	n := t.Node()
	state := t.ProvisionState()
	switch {
	case action == states.EventProvide && state == states.Manageable:
		if n.Retired {
			return errs.New(errs.KindInvalid, "The providing operation can't be performed on node %s because it is retired.", n.UUID)
		}
		return t.ProcessEventAsync(ctx, states.EventProvide, "", task.Work{Name: "do_node_clean",
			Run: func(ctx context.Context, t *task.Task) error { return c.doNodeClean(ctx, t, nil, false) }})
	case action == states.EventManage && state == states.Enroll:
		return t.ProcessEventAsync(ctx, states.EventManage, "", task.Work{Name: "do_node_verify", Run: c.doNodeVerify})
	case action == states.EventAdopt && (state == states.Manageable || state == states.AdoptFail):
		return t.ProcessEventAsync(ctx, states.EventAdopt, "", task.Work{Name: "do_node_adoption", Run: c.doNodeAdoption})
	case action == states.EventInspect && (state == states.Manageable || state == states.InspectFail):
		d, err := t.Driver()
		if err != nil {
			return err
		}
		if err := d.Power.Validate(ctx, t); err != nil {
			return validationError(err)
		}
		if err := d.Inspect.Validate(ctx, t); err != nil {
			return validationError(err)
		}
		return t.ProcessEventAsync(ctx, states.EventInspect, "", task.Work{Name: "inspect_hardware", Run: c.doInspect})
	case action == states.EventAbort && state == states.CleanWait:
		return c.abortCleaning(ctx, t)
	case action == states.EventAbort && (state == states.InspectWait || state == states.RescueWait):
		return c.abortWait(ctx, t)
	case action == states.EventAbort:
		return errs.InvalidStateRequested(args.Action, n.UUID, string(state))
	}
	return t.ProcessEvent(ctx, action, "")
}

// doNodeVerify checks the power credentials of an enrolled node by reading
// its power state.
func (c *Conductor) doNodeVerify(ctx context.Context, t *task.Task) error {
	n := t.Node()
	d, err := t.Driver()
	if err != nil {
		return err
	}
	err = d.Power.Validate(ctx, t)
	var ps string
	if err == nil {
		ps, err = d.Power.GetPowerState(ctx, t)
	}
	if err != nil {
		msg := fmt.Sprintf("Failed to get power state for node %s. Error: %s", n.UUID, err)
		return t.Fail(ctx, msg)
	}
	n.PowerState = &ps
	return t.ProcessEventAndRelease(ctx, states.EventDone, "")
}

// doNodeAdoption takes an already deployed machine under management.
func (c *Conductor) doNodeAdoption(ctx context.Context, t *task.Task) error {
	if err := c.takeOver(ctx, t, true); err != nil {
		return t.Fail(ctx, fmt.Sprintf("Error while attempting to adopt node %s: %s.", t.Node().UUID, err))
	}
	return t.ProcessEvent(ctx, states.EventDone, "")
}

// takeOver makes this conductor the one serving an active node: the deploy
// interface rebuilds its local boot configuration.
func (c *Conductor) takeOver(ctx context.Context, t *task.Task, validate bool) error {
	d, err := t.Driver()
	if err != nil {
		return err
	}
	if validate {
		for _, v := range []func() error{
			func() error { return d.Power.Validate(ctx, t) },
			func() error { return d.Boot.Validate(ctx, t) },
			func() error { return d.Deploy.Validate(ctx, t) },
		} {
			if err := v(); err != nil {
				return err
			}
		}
	}
	if err := d.Deploy.Prepare(ctx, t); err != nil {
		return err
	}
	if err := d.Deploy.TakeOver(ctx, t); err != nil {
		return err
	}
	t.Node().ConductorAffinity = c.conductorID()
	return nil
}

func (c *Conductor) doInspect(ctx context.Context, t *task.Task) error {
	n := t.Node()
	d, err := t.Driver()
	if err != nil {
		return err
	}
	n.InspectionStartedAt, n.InspectionFinishedAt = ptr(time.Now().UTC()), nil
	result, err := d.Inspect.InspectHardware(ctx, t)
	if err != nil {
		return t.Fail(ctx, fmt.Sprintf("Failed to inspect hardware. Reason: %s", err))
	}
	if result == driver.Done {
		n.InspectionFinishedAt = ptr(time.Now().UTC())
	}
	return t.ProcessEvent(ctx, resultEvent(result), "")
}

// abortWait aborts an inspection or a rescue waiting for its ramdisk.
func (c *Conductor) abortWait(ctx context.Context, t *task.Task) error {
	n := t.Node()
	msg := "Inspection was aborted by request."
	if t.ProvisionState() == states.RescueWait {
		msg = fmt.Sprintf("Rescue operation was aborted for node %s.", n.UUID)
		delete(n.InstanceInfo, rescuePasswordKey)
	}
	n.LastError = &msg
	return t.ProcessEvent(ctx, states.EventAbort, "")
}
