package conductor

import (
	"context"

	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/portgroups"
	"github.com/ferricbm/ferric/pkg/resource/ports"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// portgroupStore is the part of the repository the port group RPCs use.
type portgroupStore interface {
	GetPortgroup(ctx context.Context, uuid string) (*model.Portgroup, error)
	SavePortgroup(ctx context.Context, pg *model.Portgroup) error
	DestroyPortgroup(ctx context.Context, uuid string) error
}

func portgroupObject(c *Conductor) owned[model.Portgroup] {
	return owned[model.Portgroup]{what: "portgroup", get: c.store.GetPortgroup, apply: portgroups.Apply,
		node: func(pg *model.Portgroup) string { return pg.NodeUUID }}
}

// deployed reports a node whose network configuration is in use: its
// hardware addresses must not change under it.
func deployed(n *model.Node) bool {
	return (n.State() == states.Active || n.InstanceUUID != nil) && !n.Maintenance
}

// UpdatePortgroup applies the API's patch to the port group read under
// the locks of its old and new node (the 1.0 form: saves the fields a
// client may change of the API's copy). A group moves to another node
// only without member ports (they cannot follow it), and keeps its
// address while its node is deployed.
func (c *Conductor) UpdatePortgroup(ctx context.Context, args rpc.PortgroupArgs) (model.Portgroup, error) {
	locks, pg, in, err := portgroupObject(c).lockForUpdate(ctx, c, ownedUpdate[model.Portgroup]{uuid: args.Portgroup.UUID,
		id: args.PortgroupID, sent: &args.Portgroup, patch: args.Patch, apiVersion: args.APIVersion, purpose: "portgroup update"})
	if err != nil {
		return model.Portgroup{}, err
	}
	defer locks.release(ctx)
	owner := locks.owner.Node()
	if owner.ID != pg.NodeID {
		members, err := c.store.ListPorts(ctx, db.PortFilter{PortgroupID: &pg.ID}, db.Page{Limit: 1}, []string{"uuid"})
		if err != nil {
			return model.Portgroup{}, err
		}
		if len(members) > 0 {
			return model.Portgroup{}, errs.New(errs.KindInvalidState,
				"Cannot complete the requested action because portgroup %s contains ports.", pg.UUID)
		}
	}
	if deref(in.Address) != deref(pg.Address) && deployed(owner) {
		return model.Portgroup{}, errs.New(errs.KindInvalidState,
			"Cannot update hardware address for portgroup %s as node %s is active or has instance UUID assigned", pg.UUID, owner.UUID)
	}
	pg.NodeID = owner.ID
	pg.Name, pg.Address, pg.Extra = in.Name, in.Address, in.Extra
	pg.StandalonePortsSupported, pg.Mode, pg.Properties = in.StandalonePortsSupported, in.Mode, in.Properties
	if err := c.store.SavePortgroup(ctx, pg); err != nil {
		return model.Portgroup{}, err
	}
	return *pg, nil
}

// DestroyPortgroup deletes a port group without member ports under its
// node's lock.
func (c *Conductor) DestroyPortgroup(ctx context.Context, args rpc.PortgroupArgs) error {
	locks, err := c.lockOwnerNodes(ctx, portgroupObject(c).ownerOf(ctx, args.Portgroup.UUID), "", "portgroup deletion")
	if err != nil {
		return err
	}
	defer locks.release(ctx)
	return c.store.DestroyPortgroup(ctx, args.Portgroup.UUID)
}

// portMembership resolves the port group the updated port in names by
// uuid to its id. The group must belong to the port's node n, and a group
// without standalone ports takes no PXE-enabled port: joining it, or
// enabling PXE inside it, is a conflict.
func (c *Conductor) portMembership(ctx context.Context, in, old *model.Port, n *model.Node) (*int64, error) {
	if in.PortgroupUUID == nil {
		return nil, nil
	}
	pg, err := c.store.GetPortgroup(ctx, *in.PortgroupUUID)
	if err != nil {
		if errs.Is(err, errs.KindNotFound) {
			return nil, errs.InvalidParameterValue("Portgroup %s could not be found.", *in.PortgroupUUID)
		}
		return nil, err
	}
	if pg.NodeID != n.ID {
		return nil, errs.InvalidParameterValue("Port can not be added to a portgroup belonging to a different node.")
	}
	joined := old.PortgroupID == nil || *old.PortgroupID != pg.ID
	if in.PXEEnabled && !pg.StandalonePortsSupported && (joined || !old.PXEEnabled) {
		return nil, errs.New(errs.KindConflict,
			"Port group %s doesn't support standalone ports. This port %s cannot be a member of that port group because 'pxe_enabled' was set to True.",
			pg.UUID, in.UUID)
	}
	// A physical network is never empty: deref tells null from any.
	if joined || deref(in.PhysicalNetwork) != deref(old.PhysicalNetwork) {
		members, err := c.store.ListPorts(ctx, db.PortFilter{PortgroupID: &pg.ID}, db.Page{}, []string{"uuid", "physical_network"})
		if err != nil {
			return nil, err
		}
		if err := ports.CheckGroupPhysnet(in, pg.UUID, members); err != nil {
			return nil, err
		}
	}
	return &pg.ID, nil
}
