package rpc

import (
	"context"
	"encoding/json"

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

// VolumeConnectorArgs names the connector to destroy by Connector.UUID.
// An update since 1.3 sends VolumeConnectorID, Patch and APIVersion, which
// the conductor applies to the connector it reads under the node locks;
// the 1.0 form, Connector alone, is the whole connector as the caller
// patched it, NodeUUID naming its (possibly new) node.
type VolumeConnectorArgs struct {
	VolumeConnectorID string `json:"volume_connector_id,omitempty"`
	// Patch is the Bare Metal API's JSON patch document of the connector.
	Patch json.RawMessage `json:"patch,omitempty"`
	// APIVersion is the Bare Metal API microversion the patch is read at.
	APIVersion string                `json:"api_version,omitempty"`
	Connector  model.VolumeConnector `json:"connector,omitzero"`
}

// VolumeTargetArgs is VolumeConnectorArgs for a target, named by
// VolumeTargetID. Its patch and properties may hold credentials: they
// travel to the conductor, never into a log.
type VolumeTargetArgs struct {
	VolumeTargetID string             `json:"volume_target_id,omitempty"`
	Patch          json.RawMessage    `json:"patch,omitempty"`
	APIVersion     string             `json:"api_version,omitempty"`
	Target         model.VolumeTarget `json:"target,omitzero"`
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
