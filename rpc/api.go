package rpc

import (
	"encoding/json"

	"github.com/ferricbm/ferric/pkg/model"
)

// APIVersion is the version of the conductor RPC API this build speaks.
// Minor bumps add methods or optional arguments; a conductor refuses a
// message whose version is newer than its own with
// errs.KindUnsupportedRPCMethodVersion. README.md, "Versioning", says
// what each minor added.
const APIVersion = "1.5"

// NodeArgs names a node by UUID.
type NodeArgs struct {
	NodeID string `json:"node_id"`
}

// UpdateNodeArgs comes in three forms. Since 1.1 a caller sends NodeID,
// Patch and APIVersion, and since 1.2 NodeID and Maintenance: the
// conductor applies the change to the node it reads under the lock, so
// concurrent updates cannot undo each other. The 1.0 form, Node alone,
// replaces every user-editable field with the caller's copy, which may be
// stale.
type UpdateNodeArgs struct {
	NodeID string `json:"node_id,omitempty"`
	// Patch is the Bare Metal API's JSON patch document (RFC 6902 subset).
	Patch json.RawMessage `json:"patch,omitempty"`
	// APIVersion is the Bare Metal API microversion the patch is read at.
	APIVersion string `json:"api_version,omitempty"`
	// Maintenance, instead of Patch, only sets or clears maintenance mode.
	Maintenance *MaintenanceChange `json:"maintenance,omitempty"`
	// Node is the whole node as the API patched it (unsaved): the 1.0 form.
	Node            model.Node `json:"node,omitzero"`
	ResetInterfaces bool       `json:"reset_interfaces,omitempty"`
}

type ChangePowerStateArgs struct {
	NodeID   string `json:"node_id"`
	NewState string `json:"new_state"`
	// Timeout in seconds; 0 means the conductor's default.
	Timeout int `json:"timeout,omitempty"`
}

type DeployArgs struct {
	NodeID  string `json:"node_id"`
	Rebuild bool   `json:"rebuild,omitempty"`
	// ConfigDrive is a string (URL or gzip+base64) or an object.
	ConfigDrive any `json:"configdrive,omitempty"`
	// ConfigDriveID names a config drive the API stored for the node
	// (db node_configdrives) in place of ConfigDrive: a message carries
	// the reference, never the up to 64 MiB drive. The conductor owns the
	// stored drive once the call reaches it, accepted or not.
	ConfigDriveID string `json:"configdrive_id,omitempty"`
}

type CleanArgs struct {
	NodeID     string           `json:"node_id"`
	CleanSteps []map[string]any `json:"clean_steps"`
}

type ProvisioningActionArgs struct {
	NodeID string `json:"node_id"`
	Action string `json:"action"`
}

type SetBootDeviceArgs struct {
	NodeID     string `json:"node_id"`
	Device     string `json:"device"`
	Persistent bool   `json:"persistent"`
}

type BootDevice struct {
	BootDevice *string `json:"boot_device"`
	Persistent *bool   `json:"persistent"`
}

// ValidationResult is one interface's entry in validate_driver_interfaces.
type ValidationResult struct {
	Result *bool  `json:"result"`
	Reason string `json:"reason,omitempty"`
}

// MaintenanceChange is PUT or DELETE /v1/nodes/{id}/maintenance: a
// cleared maintenance mode also loses its reason and fault.
type MaintenanceChange struct {
	Enabled bool    `json:"enabled"`
	Reason  *string `json:"reason,omitempty"`
}

// PortArgs names the port to destroy by Port.UUID. An update since 1.2
// sends PortID, Patch and APIVersion, which the conductor applies to the
// port it reads under the node lock; the 1.0 form, Port alone, is the
// whole port as the caller patched it, whose every field is saved.
type PortArgs struct {
	PortID string `json:"port_id,omitempty"`
	// Patch is the Bare Metal API's JSON patch document of the port.
	Patch json.RawMessage `json:"patch,omitempty"`
	// APIVersion is the Bare Metal API microversion the patch is read at.
	APIVersion string     `json:"api_version,omitempty"`
	Port       model.Port `json:"port,omitzero"`
}

type RescueArgs struct {
	NodeID string `json:"node_id"`
	// RescuePassword is the password the rescue ramdisk sets for its user;
	// the conductor keeps only its hash.
	RescuePassword string `json:"rescue_password"`
}
