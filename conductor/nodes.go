package conductor

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/allocations"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/nodes"
	"github.com/ferricbm/ferric/pkg/resource/ports"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// interfaceUpdateStates are the provision states in which a node's
// interfaces (and a set resource class) may change outside maintenance:
// nothing is running on the machine that depends on them.
var interfaceUpdateStates = []states.State{states.Enroll, states.Inspecting, states.InspectWait,
	states.Manageable, states.Available}

// UpdateNode applies the API's patch, or maintenance change, to the node
// read under the lock (the 1.0 form: copies the user-editable fields of
// the API's copy onto it). Everything else, and every field the change
// does not touch, keeps the stored value, so neither a concurrent update
// nor a transition the conductor made meanwhile is undone by a stale copy
// in the API.
func (c *Conductor) UpdateNode(ctx context.Context, args rpc.UpdateNodeArgs) (model.Node, error) {
	id := args.NodeID
	if id == "" {
		id = args.Node.UUID
	}
	var v microversion.Version
	patching := args.NodeID != "" && args.Maintenance == nil
	if patching {
		var err error
		if v, err = patchVersion(args.APIVersion, "node "+id); err != nil {
			return model.Node{}, err
		}
	}
	t, err := c.tasks.Acquire(ctx, id, "node update")
	if err != nil {
		return model.Node{}, err
	}
	defer t.Release(ctx)
	cur := t.Node()
	upd := *cur
	switch {
	case args.Maintenance != nil:
		upd.Maintenance, upd.MaintenanceReason = args.Maintenance.Enabled, args.Maintenance.Reason
	case patching:
		patched, err := nodes.Patch(cur, args.Patch, v)
		if err != nil {
			return model.Node{}, err
		}
		upd = *patched
	default:
		copyUserFields(&upd, &args.Node)
	}

	if cur.Maintenance && !upd.Maintenance {
		upd.MaintenanceReason, upd.Fault = nil, nil
	}
	if !upd.Protected {
		upd.ProtectedReason = nil
	}
	if upd.Protected && !cur.Protected && cur.State() != states.Active {
		return model.Node{}, errs.New(errs.KindInvalidState,
			"Node %s can only be protected while it is in provision state \"%s\", not \"%s\".", cur.UUID, states.Active, cur.State())
	}
	if !upd.Retired {
		upd.RetiredReason = nil
	}
	state := cur.State()
	updatable := slices.Contains(interfaceUpdateStates, state) || upd.Maintenance
	driverChanged := upd.Driver != cur.Driver
	ifaceChanged := false
	for _, it := range hwcatalog.InterfaceTypes {
		newName, oldName := hwcatalog.Field(&upd, it), hwcatalog.Field(cur, it)
		if reflect.DeepEqual(*newName, *oldName) {
			if driverChanged && args.ResetInterfaces {
				*newName = nil
			}
			continue
		}
		ifaceChanged = true
		if !updatable {
			return model.Node{}, updateRefused(cur.UUID, string(it)+"_interface")
		}
	}
	if driverChanged || ifaceChanged {
		if err := c.drivers.ResolveInterfaces(&upd); err != nil {
			return model.Node{}, err
		}
	}
	if !reflect.DeepEqual(upd.InstanceUUID, cur.InstanceUUID) && upd.InstanceUUID != nil && cur.InstanceUUID != nil {
		return model.Node{}, errs.New(errs.KindNodeAssociated, "Node %s is associated with instance %s.", cur.UUID, *cur.InstanceUUID)
	}
	if !reflect.DeepEqual(upd.ResourceClass, cur.ResourceClass) && cur.ResourceClass != nil && !updatable {
		return model.Node{}, updateRefused(cur.UUID, "resource_class")
	}
	// Removing the instance_uuid an allocation set removes the allocation.
	deallocate := cur.AllocationID != nil && cur.InstanceUUID != nil && upd.InstanceUUID == nil
	if deallocate {
		if err := allocations.VerifyDeallocation(cur, *cur.InstanceUUID); err != nil {
			return model.Node{}, err
		}
	}
	*cur = upd
	if deallocate {
		if err := c.releaseAllocation(ctx, cur); err != nil {
			return model.Node{}, err
		}
	}
	if err := t.Save(ctx); err != nil {
		return model.Node{}, err
	}
	out := *cur
	out.Reservation = nil
	return out, nil
}

// patchVersion reads the Bare Metal API microversion a patch of what was
// sent at.
func patchVersion(s, what string) (microversion.Version, error) {
	v, perr := microversion.Parse(s)
	if perr != nil {
		return microversion.Version{}, errs.InvalidParameterValue("Invalid API version %q for the update of %s.", s, what)
	}
	return v, nil
}

func updateRefused(uuid, field string) *errs.Error {
	return errs.New(errs.KindInvalidState,
		"Node %s can not have %s updated unless it is in one of allowed (%s) states or in maintenance mode.",
		uuid, field, states.Join(interfaceUpdateStates, ", "))
}

// copyUserFields copies what the Bare Metal API lets a client change.
func copyUserFields(dst, src *model.Node) {
	dst.Name = src.Name
	dst.Driver = src.Driver
	dst.DriverInfo = src.DriverInfo
	dst.Properties = src.Properties
	dst.InstanceInfo = src.InstanceInfo
	dst.InstanceUUID = src.InstanceUUID
	dst.ChassisUUID = src.ChassisUUID
	dst.Extra = src.Extra
	dst.Maintenance = src.Maintenance
	dst.MaintenanceReason = src.MaintenanceReason
	dst.ConductorGroup = src.ConductorGroup
	dst.ResourceClass = src.ResourceClass
	dst.AutomatedClean = src.AutomatedClean
	dst.Protected = src.Protected
	dst.ProtectedReason = src.ProtectedReason
	dst.Owner = src.Owner
	dst.Lessee = src.Lessee
	dst.Description = src.Description
	dst.Retired = src.Retired
	dst.RetiredReason = src.RetiredReason
	for _, it := range hwcatalog.InterfaceTypes {
		*hwcatalog.Field(dst, it) = *hwcatalog.Field(src, it)
	}
}

// DestroyNode deletes a node and its children.
func (c *Conductor) DestroyNode(ctx context.Context, args rpc.NodeArgs) error {
	t, err := c.tasks.Acquire(ctx, args.NodeID, "node deletion")
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	n := t.Node()
	if n.InstanceUUID != nil {
		return errs.New(errs.KindNodeAssociated, "Node %s is associated with instance %s.", n.UUID, *n.InstanceUUID)
	}
	if n.Protected {
		return nodeProtected(n.UUID)
	}
	state := t.ProvisionState()
	if !states.DeleteAllowed(state, c.cfg.AllowDeletingAvailableNodes) && !n.Maintenance {
		valid := []states.State{states.Manageable, states.Enroll, states.AdoptFail}
		if c.cfg.AllowDeletingAvailableNodes {
			valid = append(valid, states.Available)
		}
		return errs.New(errs.KindInvalidState,
			"Can not delete node \"%s\" while it is in provision state \"%s\". Valid provision states to perform deletion are: \"%s\", or set the node into maintenance mode",
			n.UUID, state, states.Join(valid, ", "))
	}
	if err := c.store.DestroyNode(ctx, n.UUID); err != nil {
		return fmt.Errorf("destroy node %s: %w", n.UUID, err)
	}
	return nil
}

// readDriver loads a node without locking it, with its driver, for the
// calls that only read.
func (c *Conductor) readDriver(ctx context.Context, nodeID, purpose string) (*task.Task, *driver.Driver, error) {
	t, err := c.tasks.AcquireShared(ctx, nodeID, purpose)
	if err != nil {
		return nil, nil, err
	}
	d, err := t.Driver()
	if err != nil {
		return nil, nil, err
	}
	return t, d, nil
}

// ValidateDriverInterfaces checks every non-vendor interface of the node
// without locking it.
func (c *Conductor) ValidateDriverInterfaces(ctx context.Context, args rpc.NodeArgs) (map[string]rpc.ValidationResult, error) {
	t, d, err := c.readDriver(ctx, args.NodeID, "driver interfaces validation")
	if err != nil {
		return nil, err
	}
	out := make(map[string]rpc.ValidationResult, len(hwcatalog.InterfaceTypes))
	for _, it := range hwcatalog.InterfaceTypes {
		if it == hwcatalog.Vendor {
			continue
		}
		var r rpc.ValidationResult
		err := d.Interface(it).Validate(ctx, t)
		switch {
		case err == nil:
			r.Result = ptr(true)
		case errs.Is(err, errs.KindInvalidParameterValue, errs.KindMissingParameterValue, errs.KindUnsupportedDriverExtension):
			r.Result, r.Reason = ptr(false), errs.Message(err)
		default:
			t.Log().WithError(err).Errorf("Unexpected error validating the %s interface", it)
			r.Result = ptr(false)
			r.Reason = fmt.Sprintf("Unexpected exception, traceback saved into log by ferric conductor service that is running on %s: %s", c.host, err)
		}
		out[string(it)] = r
	}
	return out, nil
}

// SetBootDevice sets the node's next boot device through its BMC.
func (c *Conductor) SetBootDevice(ctx context.Context, args rpc.SetBootDeviceArgs) error {
	return c.onManagement(ctx, args.NodeID, "setting boot device", func(d *driver.Driver, t *task.Task) error {
		return d.Management.SetBootDevice(ctx, t, args.Device, args.Persistent)
	})
}

// onManagement runs fn under the node's lock once its management
// interface validates.
func (c *Conductor) onManagement(ctx context.Context, nodeID, purpose string, fn func(*driver.Driver, *task.Task) error) error {
	t, err := c.tasks.Acquire(ctx, nodeID, purpose)
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	d, err := t.Driver()
	if err != nil {
		return err
	}
	if err := d.Management.Validate(ctx, t); err != nil {
		return validationError(err)
	}
	return fn(d, t)
}

// GetBootDevice reads the node's next boot device.
func (c *Conductor) GetBootDevice(ctx context.Context, args rpc.NodeArgs) (rpc.BootDevice, error) {
	t, d, err := c.readDriver(ctx, args.NodeID, "getting boot device")
	if err != nil {
		return rpc.BootDevice{}, err
	}
	if err := d.Management.Validate(ctx, t); err != nil {
		return rpc.BootDevice{}, validationError(err)
	}
	b, err := d.Management.GetBootDevice(ctx, t)
	if err != nil {
		return rpc.BootDevice{}, err
	}
	return rpc.BootDevice{BootDevice: b.Device, Persistent: b.Persistent}, nil
}

// GetSupportedBootDevices lists the boot devices the node's BMC accepts.
func (c *Conductor) GetSupportedBootDevices(ctx context.Context, args rpc.NodeArgs) ([]string, error) {
	t, d, err := c.readDriver(ctx, args.NodeID, "getting supported boot devices")
	if err != nil {
		return nil, err
	}
	return d.Management.SupportedBootDevices(ctx, t)
}

// UpdatePort applies the API's patch to the port read under the locks of
// its node and of the node the patch moves it to (the 1.0 form: saves the
// user-editable fields of the API's copy). internal_info, which only the
// conductor writes (VIFs), always keeps its stored value.
func (c *Conductor) UpdatePort(ctx context.Context, args rpc.PortArgs) (model.Port, error) {
	locks, old, in, err := portObject(c).lockForUpdate(ctx, c, ownedUpdate[model.Port]{uuid: args.Port.UUID, id: args.PortID,
		sent: &args.Port, patch: args.Patch, apiVersion: args.APIVersion, purpose: "port update"})
	if err != nil {
		return model.Port{}, err
	}
	defer locks.release(ctx)
	n := locks.owner.Node()
	if in.Address != old.Address && deployed(n) {
		return model.Port{}, errs.New(errs.KindInvalidState,
			"Cannot update hardware address for port %s as node %s is active or has instance UUID assigned", old.UUID, n.UUID)
	}
	pgID, err := c.portMembership(ctx, in, old, n)
	if err != nil {
		return model.Port{}, err
	}
	p := *old
	p.Address = in.Address
	p.NodeID, p.NodeUUID = n.ID, n.UUID
	p.PortgroupID, p.PortgroupUUID = pgID, in.PortgroupUUID
	p.Extra = in.Extra
	p.LocalLinkConnection = in.LocalLinkConnection
	p.PXEEnabled = in.PXEEnabled
	p.PhysicalNetwork = in.PhysicalNetwork
	p.IsSmartNIC = in.IsSmartNIC
	if err := c.store.SavePort(ctx, &p); err != nil {
		return model.Port{}, err
	}
	return p, nil
}

func portObject(c *Conductor) owned[model.Port] {
	return owned[model.Port]{what: "port", get: c.store.GetPort, apply: ports.Apply,
		node: func(p *model.Port) string { return p.NodeUUID }}
}

// DestroyPort deletes a port unless a tenant network is still bound to it
// on a deployed node.
func (c *Conductor) DestroyPort(ctx context.Context, args rpc.PortArgs) error {
	stored, err := c.store.GetPort(ctx, args.Port.UUID)
	if err != nil {
		return err
	}
	t, err := c.tasks.Acquire(ctx, stored.NodeUUID, "port deletion")
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	n := t.Node()
	vif := driver.PortVIF(stored)
	if vif != "" && (t.ProvisionState() == states.Active || n.InstanceUUID != nil) && !n.Maintenance {
		return errs.New(errs.KindInvalidState,
			"Cannot delete port %s as node %s is active or has instance UUID assigned or port is bound to vif %s",
			stored.UUID, n.UUID, vif)
	}
	return c.store.DestroyPort(ctx, stored.UUID)
}

func nodeProtected(uuid string) *errs.Error {
	return errs.New(errs.KindNodeProtected, "Node %s is protected and cannot be undeployed, rebuilt or deleted", uuid)
}
