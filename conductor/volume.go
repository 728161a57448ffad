package conductor

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
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
var volumeDeleteStates = []string{states.Manageable, states.Enroll, states.AdoptFail}

// bootFromVolumeKeys are the driver_internal_info entries that describe an
// instance booted from a volume; tear down removes them with the targets.
var bootFromVolumeKeys = []string{"boot_from_volume", "boot_from_volume_deploy"}

// ownerMoves bounds how often a volume record may change nodes between
// reading its owner and locking it before the RPC gives up.
const ownerMoves = 3

// volumeLocks holds the locks of the nodes a volume change touches.
type volumeLocks struct {
	tasks []*task.Task
	// owner is the task of the node the record belongs to afterwards.
	owner *task.Task
}

func (l *volumeLocks) release(ctx context.Context) {
	for _, t := range l.tasks {
		t.Release(ctx)
	}
}

// lockVolumeNodes locks the record's current node and, when it differs,
// the node it is moving to. Locks are taken in node id order, so two
// moves in opposite directions cannot each hold one lock and wait for the
// other. current re-reads the record's owner under the locks; if it moved
// meanwhile everything is released and tried again. A requested node that
// does not exist is the client's error.
func (c *Conductor) lockVolumeNodes(ctx context.Context, current func() (string, error), requested, purpose string) (*volumeLocks, error) {
	for range ownerMoves {
		ownerUUID, err := current()
		if err != nil {
			return nil, err
		}
		target := requested
		if target == "" {
			target = ownerUUID
		}
		owner, err := c.store.GetNode(ctx, ownerUUID)
		if err != nil {
			return nil, err
		}
		dest := owner
		if target != ownerUUID {
			if dest, err = c.store.GetNode(ctx, target); err != nil {
				if errs.Is(err, errs.KindNodeNotFound) {
					return nil, unknownVolumeNode(target)
				}
				return nil, err
			}
		}
		order := []*model.Node{owner}
		if dest.ID != owner.ID {
			order = append(order, dest)
			slices.SortFunc(order, func(a, b *model.Node) int { return cmp.Compare(a.ID, b.ID) })
		}
		locks := &volumeLocks{}
		for _, n := range order {
			t, err := c.tasks.Acquire(ctx, n.UUID, purpose)
			if err != nil {
				locks.release(ctx)
				if errs.Is(err, errs.KindNodeNotFound) && n.UUID == target && target != ownerUUID {
					return nil, unknownVolumeNode(target)
				}
				return nil, err
			}
			locks.tasks = append(locks.tasks, t)
			if n.ID == dest.ID {
				locks.owner = t
			}
		}
		now, err := current()
		if err == nil && now == ownerUUID {
			return locks, nil
		}
		locks.release(ctx)
		if err != nil {
			return nil, err
		}
	}
	return nil, errs.New(errs.KindConflict, "The volume record kept moving between nodes while %s waited for them; please retry.", purpose)
}

func unknownVolumeNode(uuid string) error {
	return errs.InvalidParameterValue("Unable to apply the requested node_uuid '%s'. Requested value was invalid.", uuid)
}

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

func (c *Conductor) connectorOwner(ctx context.Context, uuid string) func() (string, error) {
	return func() (string, error) {
		vc, err := c.store.GetVolumeConnector(ctx, uuid)
		if err != nil {
			return "", err
		}
		return vc.NodeUUID, nil
	}
}

func (c *Conductor) targetOwner(ctx context.Context, uuid string) func() (string, error) {
	return func() (string, error) {
		vt, err := c.store.GetVolumeTarget(ctx, uuid)
		if err != nil {
			return "", err
		}
		return vt.NodeUUID, nil
	}
}

// UpdateVolumeConnector saves the fields a client may change of the
// connector the API patched, under the locks of its old and new node.
func (c *Conductor) UpdateVolumeConnector(ctx context.Context, args rpc.VolumeConnectorArgs) (model.VolumeConnector, error) {
	in := args.Connector
	const action = "volume connector update"
	locks, err := c.lockVolumeNodes(ctx, c.connectorOwner(ctx, in.UUID), in.NodeUUID, action)
	if err != nil {
		return model.VolumeConnector{}, err
	}
	defer locks.release(ctx)
	if err := requirePowerOff(locks.owner, action); err != nil {
		return model.VolumeConnector{}, err
	}
	vc, err := c.store.GetVolumeConnector(ctx, in.UUID)
	if err != nil {
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
	locks, err := c.lockVolumeNodes(ctx, c.connectorOwner(ctx, args.Connector.UUID), "", action)
	if err != nil {
		return err
	}
	defer locks.release(ctx)
	if err := c.requireDeletable(locks.owner, action); err != nil {
		return err
	}
	return c.store.DestroyVolumeConnector(ctx, args.Connector.UUID)
}

// UpdateVolumeTarget saves the fields a client may change of the target
// the API patched, under the locks of its old and new node.
func (c *Conductor) UpdateVolumeTarget(ctx context.Context, args rpc.VolumeTargetArgs) (model.VolumeTarget, error) {
	in := args.Target
	const action = "volume target update"
	locks, err := c.lockVolumeNodes(ctx, c.targetOwner(ctx, in.UUID), in.NodeUUID, action)
	if err != nil {
		return model.VolumeTarget{}, err
	}
	defer locks.release(ctx)
	if err := requirePowerOff(locks.owner, action); err != nil {
		return model.VolumeTarget{}, err
	}
	vt, err := c.store.GetVolumeTarget(ctx, in.UUID)
	if err != nil {
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
	locks, err := c.lockVolumeNodes(ctx, c.targetOwner(ctx, args.Target.UUID), "", action)
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
