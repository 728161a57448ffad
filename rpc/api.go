package rpc

import (
	"context"
	"encoding/json"

	"github.com/ferricbm/ferric/pkg/model"
)

// APIVersion is the version of the conductor RPC API this build speaks.
// Minor bumps add methods or optional arguments; a conductor refuses a
// message whose version is newer than its own with
// errs.KindUnsupportedRPCMethodVersion.
const APIVersion = "1.3"

// Method names on the wire. They are Ironic's names, so operators and
// external schedulers recognise them.
const (
	MethodUpdateNode               = "update_node"
	MethodDestroyNode              = "destroy_node"
	MethodChangeNodePowerState     = "change_node_power_state"
	MethodDoNodeDeploy             = "do_node_deploy"
	MethodDoNodeTearDown           = "do_node_tear_down"
	MethodDoNodeClean              = "do_node_clean"
	MethodDoProvisioningAction     = "do_provisioning_action"
	MethodContinueNodeClean        = "continue_node_clean"
	MethodContinueNodeDeploy       = "continue_node_deploy"
	MethodValidateDriverInterfaces = "validate_driver_interfaces"
	MethodSetBootDevice            = "set_boot_device"
	MethodGetBootDevice            = "get_boot_device"
	MethodGetSupportedBootDevices  = "get_supported_boot_devices"
	MethodUpdatePort               = "update_port"
	MethodDestroyPort              = "destroy_port"
	MethodHeartbeat                = "heartbeat"
	MethodVendorPassthru           = "vendor_passthru"
)

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

type HeartbeatArgs struct {
	NodeID       string `json:"node_id"`
	CallbackURL  string `json:"callback_url"`
	AgentVersion string `json:"agent_version,omitempty"`
	AgentToken   string `json:"agent_token,omitempty"`
	// AgentVerifyCA is the PEM certificate an agent serving HTTPS presents.
	AgentVerifyCA string `json:"agent_verify_ca,omitempty"`
}

type VendorPassthruArgs struct {
	NodeID     string         `json:"node_id"`
	Method     string         `json:"driver_method"`
	HTTPMethod string         `json:"http_method"`
	Info       map[string]any `json:"info"`
}

type VendorPassthruResult struct {
	Return any  `json:"return"`
	Async  bool `json:"async"`
	Attach bool `json:"attach"`
}

// ConductorAPI is what a conductor serves. The API service calls it through
// Client (over AMQP or in-process); the conductor implements it. Every error
// returned should be an *errs.Error so it crosses the wire with its kind and
// HTTP status. Methods documented "async" return once the work is accepted.
type ConductorAPI interface {
	UpdateNode(ctx context.Context, args UpdateNodeArgs) (model.Node, error)
	DestroyNode(ctx context.Context, args NodeArgs) error
	// ChangeNodePowerState is async.
	ChangeNodePowerState(ctx context.Context, args ChangePowerStateArgs) error
	// DoNodeDeploy is async.
	DoNodeDeploy(ctx context.Context, args DeployArgs) error
	// DoNodeTearDown is async.
	DoNodeTearDown(ctx context.Context, args NodeArgs) error
	// DoNodeClean is async.
	DoNodeClean(ctx context.Context, args CleanArgs) error
	// DoProvisioningAction (manage, provide, abort, adopt, inspect) is async.
	DoProvisioningAction(ctx context.Context, args ProvisioningActionArgs) error
	// ContinueNodeClean and ContinueNodeDeploy are sent as casts.
	ContinueNodeClean(ctx context.Context, args NodeArgs) error
	ContinueNodeDeploy(ctx context.Context, args NodeArgs) error
	ValidateDriverInterfaces(ctx context.Context, args NodeArgs) (map[string]ValidationResult, error)
	SetBootDevice(ctx context.Context, args SetBootDeviceArgs) error
	GetBootDevice(ctx context.Context, args NodeArgs) (BootDevice, error)
	GetSupportedBootDevices(ctx context.Context, args NodeArgs) ([]string, error)
	UpdatePort(ctx context.Context, args PortArgs) (model.Port, error)
	DestroyPort(ctx context.Context, args PortArgs) error
	// Heartbeat is async.
	Heartbeat(ctx context.Context, args HeartbeatArgs) error
	VendorPassthru(ctx context.Context, args VendorPassthruArgs) (VendorPassthruResult, error)
	SetTargetRAIDConfig(ctx context.Context, args SetTargetRAIDConfigArgs) error
	GetRAIDLogicalDiskProperties(ctx context.Context, args DriverArgs) (map[string]string, error)
	GetDriverProperties(ctx context.Context, args DriverArgs) (map[string]string, error)
	// SetConsoleMode is async.
	SetConsoleMode(ctx context.Context, args SetConsoleModeArgs) error
	GetConsoleInformation(ctx context.Context, args NodeArgs) (map[string]any, error)
	InjectNMI(ctx context.Context, args NodeArgs) error
	GetNodeVendorPassthruMethods(ctx context.Context, args NodeArgs) (map[string]VendorMethodInfo, error)
	GetDriverVendorPassthruMethods(ctx context.Context, args DriverArgs) (map[string]VendorMethodInfo, error)
	DriverVendorPassthru(ctx context.Context, args DriverVendorPassthruArgs) (VendorPassthruResult, error)
	// GetNodeWithToken issues the node's agent token on first use.
	GetNodeWithToken(ctx context.Context, args NodeArgs) (NodeWithToken, error)
	VIFList(ctx context.Context, args NodeArgs) ([]VIF, error)
	VIFAttach(ctx context.Context, args VIFAttachArgs) error
	VIFDetach(ctx context.Context, args VIFDetachArgs) error
	UpdateVolumeConnector(ctx context.Context, args VolumeConnectorArgs) (model.VolumeConnector, error)
	DestroyVolumeConnector(ctx context.Context, args VolumeConnectorArgs) error
	UpdateVolumeTarget(ctx context.Context, args VolumeTargetArgs) (model.VolumeTarget, error)
	DestroyVolumeTarget(ctx context.Context, args VolumeTargetArgs) error
	UpdatePortgroup(ctx context.Context, args PortgroupArgs) (model.Portgroup, error)
	DestroyPortgroup(ctx context.Context, args PortgroupArgs) error
	NodeFeatures
}
