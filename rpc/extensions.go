package rpc

import (
	"context"

	"github.com/ferricbm/ferric/pkg/model"
)

// RAID, console, NMI, vendor method discovery, driver-level vendor passthru,
// agent lookup and VIF methods.
const (
	MethodSetTargetRAIDConfig            = "set_target_raid_config"
	MethodGetRAIDLogicalDiskProperties   = "get_raid_logical_disk_properties"
	MethodGetDriverProperties            = "get_driver_properties"
	MethodSetConsoleMode                 = "set_console_mode"
	MethodGetConsoleInformation          = "get_console_information"
	MethodInjectNMI                      = "inject_nmi"
	MethodGetNodeVendorPassthruMethods   = "get_node_vendor_passthru_methods"
	MethodGetDriverVendorPassthruMethods = "get_driver_vendor_passthru_methods"
	MethodDriverVendorPassthru           = "driver_vendor_passthru"
	MethodGetNodeWithToken               = "get_node_with_token"
	MethodVIFList                        = "vif_list"
	MethodVIFAttach                      = "vif_attach"
	MethodVIFDetach                      = "vif_detach"
)

// DriverArgs names a hardware type.
type DriverArgs struct {
	DriverName string `json:"driver_name"`
}

type SetTargetRAIDConfigArgs struct {
	NodeID string `json:"node_id"`
	// Config is the whole target RAID configuration; empty clears it.
	Config map[string]any `json:"target_raid_config"`
}

type SetConsoleModeArgs struct {
	NodeID  string `json:"node_id"`
	Enabled bool   `json:"enabled"`
}

// VendorMethodInfo describes a vendor passthru method as
// GET .../vendor_passthru/methods shows it. RequireExclusiveLock is only
// set for node methods.
type VendorMethodInfo struct {
	HTTPMethods          []string `json:"http_methods"`
	Async                bool     `json:"async"`
	Description          string   `json:"description"`
	Attach               bool     `json:"attach"`
	RequireExclusiveLock *bool    `json:"require_exclusive_lock,omitempty"`
}

type DriverVendorPassthruArgs struct {
	DriverName string         `json:"driver_name"`
	Method     string         `json:"driver_method"`
	HTTPMethod string         `json:"http_method"`
	Info       map[string]any `json:"info"`
}

// VIF is one tenant VIF attached to a node.
type VIF struct {
	ID string `json:"id"`
}

type VIFAttachArgs struct {
	NodeID string `json:"node_id"`
	VIF    VIF    `json:"vif_info"`
}

type VIFDetachArgs struct {
	NodeID string `json:"node_id"`
	VIFID  string `json:"vif_id"`
}

// NodeWithToken is a node as the agent lookup serves it. AgentToken is the
// token issued to the ramdisk by this call, or "******" when one had
// already been issued (it is never handed out twice).
type NodeWithToken struct {
	Node       model.Node `json:"node"`
	AgentToken string     `json:"agent_token"`
}

func (cc conductorClient) SetTargetRAIDConfig(ctx context.Context, args SetTargetRAIDConfigArgs) error {
	return cc.call(ctx, MethodSetTargetRAIDConfig, args, nil)
}

func (cc conductorClient) GetRAIDLogicalDiskProperties(ctx context.Context, args DriverArgs) (map[string]string, error) {
	var r map[string]string
	err := cc.call(ctx, MethodGetRAIDLogicalDiskProperties, args, &r)
	return r, err
}

func (cc conductorClient) GetDriverProperties(ctx context.Context, args DriverArgs) (map[string]string, error) {
	var r map[string]string
	err := cc.call(ctx, MethodGetDriverProperties, args, &r)
	return r, err
}

func (cc conductorClient) SetConsoleMode(ctx context.Context, args SetConsoleModeArgs) error {
	return cc.call(ctx, MethodSetConsoleMode, args, nil)
}

func (cc conductorClient) GetConsoleInformation(ctx context.Context, args NodeArgs) (map[string]any, error) {
	var r map[string]any
	err := cc.call(ctx, MethodGetConsoleInformation, args, &r)
	return r, err
}

func (cc conductorClient) InjectNMI(ctx context.Context, args NodeArgs) error {
	return cc.call(ctx, MethodInjectNMI, args, nil)
}

func (cc conductorClient) GetNodeVendorPassthruMethods(ctx context.Context, args NodeArgs) (map[string]VendorMethodInfo, error) {
	var r map[string]VendorMethodInfo
	err := cc.call(ctx, MethodGetNodeVendorPassthruMethods, args, &r)
	return r, err
}

func (cc conductorClient) GetDriverVendorPassthruMethods(ctx context.Context, args DriverArgs) (map[string]VendorMethodInfo, error) {
	var r map[string]VendorMethodInfo
	err := cc.call(ctx, MethodGetDriverVendorPassthruMethods, args, &r)
	return r, err
}

func (cc conductorClient) DriverVendorPassthru(ctx context.Context, args DriverVendorPassthruArgs) (VendorPassthruResult, error) {
	var r VendorPassthruResult
	err := cc.call(ctx, MethodDriverVendorPassthru, args, &r)
	return r, err
}

func (cc conductorClient) GetNodeWithToken(ctx context.Context, args NodeArgs) (NodeWithToken, error) {
	var r NodeWithToken
	err := cc.call(ctx, MethodGetNodeWithToken, args, &r)
	return r, err
}

func (cc conductorClient) VIFList(ctx context.Context, args NodeArgs) ([]VIF, error) {
	var r []VIF
	err := cc.call(ctx, MethodVIFList, args, &r)
	return r, err
}

func (cc conductorClient) VIFAttach(ctx context.Context, args VIFAttachArgs) error {
	return cc.call(ctx, MethodVIFAttach, args, nil)
}

func (cc conductorClient) VIFDetach(ctx context.Context, args VIFDetachArgs) error {
	return cc.call(ctx, MethodVIFDetach, args, nil)
}
