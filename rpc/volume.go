package rpc

import (
	"context"

	"github.com/ferricbm/ferric/pkg/model"
)

// Volume connector and target methods. Creation needs no conductor (the
// API writes the row); updates and deletions take the node lock.
const (
	MethodUpdateVolumeConnector  = "update_volume_connector"
	MethodDestroyVolumeConnector = "destroy_volume_connector"
	MethodUpdateVolumeTarget     = "update_volume_target"
	MethodDestroyVolumeTarget    = "destroy_volume_target"
)

type VolumeConnectorArgs struct {
	// Connector is the whole connector as the API patched it (unsaved),
	// NodeUUID naming its (possibly new) node, for update; for destroy
	// only UUID is read.
	Connector model.VolumeConnector `json:"connector"`
}

type VolumeTargetArgs struct {
	// Target is as VolumeConnectorArgs.Connector. Its properties may hold
	// credentials: they travel to the conductor, never into a log.
	Target model.VolumeTarget `json:"target"`
}

func (cc conductorClient) UpdateVolumeConnector(ctx context.Context, args VolumeConnectorArgs) (model.VolumeConnector, error) {
	var r model.VolumeConnector
	err := cc.call(ctx, MethodUpdateVolumeConnector, args, &r)
	return r, err
}

func (cc conductorClient) DestroyVolumeConnector(ctx context.Context, args VolumeConnectorArgs) error {
	return cc.call(ctx, MethodDestroyVolumeConnector, args, nil)
}

func (cc conductorClient) UpdateVolumeTarget(ctx context.Context, args VolumeTargetArgs) (model.VolumeTarget, error) {
	var r model.VolumeTarget
	err := cc.call(ctx, MethodUpdateVolumeTarget, args, &r)
	return r, err
}

func (cc conductorClient) DestroyVolumeTarget(ctx context.Context, args VolumeTargetArgs) error {
	return cc.call(ctx, MethodDestroyVolumeTarget, args, nil)
}
