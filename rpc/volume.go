package rpc

import (
	"encoding/json"

	"github.com/ferricbm/ferric/pkg/model"
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
