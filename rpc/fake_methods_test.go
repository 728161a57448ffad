package rpc

import (
	"context"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

func (f *fakeConductor) SetTargetRAIDConfig(ctx context.Context, args SetTargetRAIDConfigArgs) error {
	if _, ok := args.Config["logical_disks"]; !ok {
		return errs.InvalidParameterValue("no logical_disks for node %s", args.NodeID)
	}
	return nil
}

func (f *fakeConductor) GetDriverProperties(ctx context.Context, args DriverArgs) (map[string]string, error) {
	return map[string]string{"deploy_kernel": "kernel of " + args.DriverName}, nil
}

func (f *fakeConductor) GetRAIDLogicalDiskProperties(ctx context.Context, args DriverArgs) (map[string]string, error) {
	return map[string]string{"raid_level": "level of " + args.DriverName}, nil
}

func (f *fakeConductor) GetConsoleInformation(ctx context.Context, args NodeArgs) (map[string]any, error) {
	return map[string]any{"type": "fake", "url": "fake://" + args.NodeID}, nil
}

func (f *fakeConductor) InjectNMI(ctx context.Context, args NodeArgs) error {
	return errs.New(errs.KindUnsupportedDriverExtension, "Driver x does not support inject_nmi (disabled or not implemented).")
}

func (f *fakeConductor) GetNodeVendorPassthruMethods(ctx context.Context, args NodeArgs) (map[string]VendorMethodInfo, error) {
	yes := true
	return map[string]VendorMethodInfo{"m": {HTTPMethods: []string{"POST"}, Async: true, RequireExclusiveLock: &yes}}, nil
}

func (f *fakeConductor) GetDriverVendorPassthruMethods(ctx context.Context, args DriverArgs) (map[string]VendorMethodInfo, error) {
	return map[string]VendorMethodInfo{"d": {HTTPMethods: []string{"GET"}}}, nil
}

func (f *fakeConductor) DriverVendorPassthru(ctx context.Context, args DriverVendorPassthruArgs) (VendorPassthruResult, error) {
	return VendorPassthruResult{Return: args.Info}, nil
}

func (f *fakeConductor) GetNodeWithToken(ctx context.Context, args LookupArgs) (NodeWithToken, error) {
	return NodeWithToken{Node: model.Node{UUID: args.NodeID}, AgentToken: "tok-" + args.NodeID}, nil
}

func (f *fakeConductor) VIFList(ctx context.Context, args NodeArgs) ([]VIF, error) {
	return []VIF{{ID: "vif-" + args.NodeID}}, nil
}

func (f *fakeConductor) VIFAttach(ctx context.Context, args VIFAttachArgs) error {
	if args.VIF.ID == "" {
		return errs.New(errs.KindMissingParameterValue, "Missing VIF id")
	}
	return nil
}

func (f *fakeConductor) VIFDetach(ctx context.Context, args VIFDetachArgs) error {
	return errs.InvalidParameterValue("Unable to detach VIF %s from node %s because it is not attached to it.", args.VIFID, args.NodeID)
}

// The fake answers port group updates with the object it was sent, its
// updated_at set, and refuses deletions as for a group with ports.

func (f *fakeConductor) UpdatePortgroup(ctx context.Context, args PortgroupArgs) (model.Portgroup, error) {
	pg := args.Portgroup
	pg.UpdatedAt = savedNow()
	return pg, nil
}

func (f *fakeConductor) DestroyPortgroup(ctx context.Context, args PortgroupArgs) error {
	return errs.New(errs.KindInvalidState, "Cannot complete the requested action because portgroup %s contains ports.", args.Portgroup.UUID)
}

// The fake answers volume updates with the object it was sent, its
// updated_at set, and refuses deletions as a node powered on would.

func (f *fakeConductor) UpdateVolumeConnector(ctx context.Context, args VolumeConnectorArgs) (model.VolumeConnector, error) {
	c := args.Connector
	c.UpdatedAt = savedNow()
	return c, nil
}

func (f *fakeConductor) DestroyVolumeConnector(ctx context.Context, args VolumeConnectorArgs) error {
	return errs.InvalidStateRequested("volume connector deletion", args.Connector.NodeUUID, "power on")
}

func (f *fakeConductor) UpdateVolumeTarget(ctx context.Context, args VolumeTargetArgs) (model.VolumeTarget, error) {
	t := args.Target
	t.UpdatedAt = savedNow()
	return t, nil
}

func (f *fakeConductor) DestroyVolumeTarget(ctx context.Context, args VolumeTargetArgs) error {
	return errs.NodeLocked(args.Target.NodeUUID, "other-host")
}

// The fake refuses to remove a trait named "MISSING", rescues only with
// a password "good", and reports one BIOS setting.

func (f *fakeConductor) RemoveNodeTraits(ctx context.Context, args NodeTraitsArgs) error {
	for _, t := range args.Traits {
		if t == "MISSING" {
			return errs.New(errs.KindNotFound, "Node %s doesn't have a trait '%s'", args.NodeID, t)
		}
	}
	return nil
}

func (f *fakeConductor) DoNodeRescue(ctx context.Context, args RescueArgs) error {
	if args.RescuePassword != "good" {
		return errs.InvalidParameterValue("bad password")
	}
	return nil
}

func (f *fakeConductor) GetBIOSSettings(ctx context.Context, args NodeArgs) ([]BIOSSetting, error) {
	return []BIOSSetting{{Name: "BootMode", Value: "Uefi"}}, nil
}
