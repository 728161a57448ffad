package conductor

import (
	"context"
	"fmt"
	"slices"

	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/volume"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// volumeStore is the part of the repository the volume RPCs use.
type volumeStore interface {
	GetVolumeConnector(ctx context.Context, uuid string) (*model.VolumeConnector, error)
	SaveVolumeConnector(ctx context.Context, c *model.VolumeConnector) error
	DestroyVolumeConnector(ctx context.Context, uuid string) error
	GetVolumeTarget(ctx context.Context, uuid string) (*model.VolumeTarget, error)
	SaveVolumeTarget(ctx context.Context, t *model.VolumeTarget) error
	DestroyVolumeTarget(ctx context.Context, uuid string) error
	DestroyVolumeTargetsOfNode(ctx context.Context, nodeID int64) error
	ListVolumeConnectors(ctx context.Context, f db.VolumeFilter, p db.Page, columns []string) ([]model.VolumeConnector, error)
	ListVolumeTargets(ctx context.Context, f db.VolumeFilter, p db.Page, columns []string) ([]model.VolumeTarget, error)
}

// volumeDeleteStates are the provision states in which a connector or
// target may be deleted from a node that is not powered off, when
// [conductor] allow_volume_delete_unless_powered_off opts into newer
// Ironic's exemption: nothing on the machine can be using them.
var volumeDeleteStates = []states.State{states.Manageable, states.Enroll, states.AdoptFail}

// bootFromVolumeKeys are the driver_internal_info entries that describe an
// instance booted from a volume; tear down removes them with the targets.
var bootFromVolumeKeys = []string{"boot_from_volume", "boot_from_volume_deploy"}

// requirePowerOff enforces the update rule: the driver may have configured
// the hardware from these records, so they only change while it is off.
func requirePowerOff(t *task.Task, action string) error {
	n := t.Node()
	if n.PowerState == nil || *n.PowerState != states.PowerOff {
		return errs.InvalidStateRequested(action, n.UUID, orNone(n.PowerState))
	}
	return nil
}

// requireDeletable is the delete rule: power off, as for updates, or, when
// the exemption is enabled, a provision state in which the machine cannot
// be using the volume.
func (c *Conductor) requireDeletable(t *task.Task, action string) error {
	if c.cfg.AllowVolumeDeleteUnlessOff && slices.Contains(volumeDeleteStates, t.ProvisionState()) {
		return nil
	}
	return requirePowerOff(t, action)
}

// connectorObject and targetObject carry the API's patch rules, which no
// microversion changes.
func connectorObject(c *Conductor) owned[model.VolumeConnector] {
	return owned[model.VolumeConnector]{what: "volume connector", get: c.store.GetVolumeConnector,
		apply: func(vc *model.VolumeConnector, ops []jsonpatch.Op, _ microversion.Version) (*model.VolumeConnector, error) {
			return volume.ApplyConnector(vc, ops)
		},
		node: func(vc *model.VolumeConnector) string { return vc.NodeUUID }}
}

func targetObject(c *Conductor) owned[model.VolumeTarget] {
	return owned[model.VolumeTarget]{what: "volume target", get: c.store.GetVolumeTarget,
		apply: func(vt *model.VolumeTarget, ops []jsonpatch.Op, _ microversion.Version) (*model.VolumeTarget, error) {
			return volume.ApplyTarget(vt, ops)
		},
		node: func(vt *model.VolumeTarget) string { return vt.NodeUUID }}
}

// UpdateVolumeConnector applies the API's patch to the connector read
// under the locks of its old and new node (the 1.0 form: saves the fields
// a client may change of the API's copy).
func (c *Conductor) UpdateVolumeConnector(ctx context.Context, args rpc.VolumeConnectorArgs) (model.VolumeConnector, error) {
	const action = "volume connector update"
	locks, vc, in, err := connectorObject(c).lockForUpdate(ctx, c, ownedUpdate[model.VolumeConnector]{uuid: args.Connector.UUID,
		id: args.VolumeConnectorID, sent: &args.Connector, patch: args.Patch, apiVersion: args.APIVersion, purpose: action})
	if err != nil {
		return model.VolumeConnector{}, err
	}
	defer locks.release(ctx)
	if err := requirePowerOff(locks.owner, action); err != nil {
		return model.VolumeConnector{}, err
	}
	vc.NodeID = locks.owner.Node().ID
	vc.Type, vc.ConnectorID, vc.Extra = in.Type, in.ConnectorID, in.Extra
	if err := c.store.SaveVolumeConnector(ctx, vc); err != nil {
		return model.VolumeConnector{}, err
	}
	return *vc, nil
}

// DestroyVolumeConnector deletes a connector under its node's lock.
func (c *Conductor) DestroyVolumeConnector(ctx context.Context, args rpc.VolumeConnectorArgs) error {
	const action = "volume connector deletion"
	locks, err := c.lockOwnerNodes(ctx, connectorObject(c).ownerOf(ctx, args.Connector.UUID), "", action)
	if err != nil {
		return err
	}
	defer locks.release(ctx)
	if err := c.requireDeletable(locks.owner, action); err != nil {
		return err
	}
	return c.store.DestroyVolumeConnector(ctx, args.Connector.UUID)
}

// UpdateVolumeTarget applies the API's patch to the target read under the
// locks of its old and new node (the 1.0 form: saves the fields a client
// may change of the API's copy).
func (c *Conductor) UpdateVolumeTarget(ctx context.Context, args rpc.VolumeTargetArgs) (model.VolumeTarget, error) {
	const action = "volume target update"
	locks, vt, in, err := targetObject(c).lockForUpdate(ctx, c, ownedUpdate[model.VolumeTarget]{uuid: args.Target.UUID,
		id: args.VolumeTargetID, sent: &args.Target, patch: args.Patch, apiVersion: args.APIVersion, purpose: action})
	if err != nil {
		return model.VolumeTarget{}, err
	}
	defer locks.release(ctx)
	if err := requirePowerOff(locks.owner, action); err != nil {
		return model.VolumeTarget{}, err
	}
	vt.NodeID = locks.owner.Node().ID
	vt.VolumeType, vt.BootIndex, vt.VolumeID = in.VolumeType, in.BootIndex, in.VolumeID
	vt.Properties, vt.Extra = in.Properties, in.Extra
	if err := c.store.SaveVolumeTarget(ctx, vt); err != nil {
		return model.VolumeTarget{}, err
	}
	return *vt, nil
}

// DestroyVolumeTarget deletes a target under its node's lock.
func (c *Conductor) DestroyVolumeTarget(ctx context.Context, args rpc.VolumeTargetArgs) error {
	const action = "volume target deletion"
	locks, err := c.lockOwnerNodes(ctx, targetObject(c).ownerOf(ctx, args.Target.UUID), "", action)
	if err != nil {
		return err
	}
	defer locks.release(ctx)
	if err := c.requireDeletable(locks.owner, action); err != nil {
		return err
	}
	return c.store.DestroyVolumeTarget(ctx, args.Target.UUID)
}

// tearDownStorage detaches the instance's volumes from a node being torn
// down: its targets go (connectors, the machine's identity, stay) and so
// does the boot-from-volume bookkeeping. The caller saves the node.
func (c *Conductor) tearDownStorage(ctx context.Context, t *task.Task) error {
	n := t.Node()
	if err := c.store.DestroyVolumeTargetsOfNode(ctx, n.ID); err != nil {
		return fmt.Errorf("tear down storage of node %s: %w", n.UUID, err)
	}
	for _, k := range bootFromVolumeKeys {
		delete(n.DriverInternalInfo, k)
	}
	return nil
}
