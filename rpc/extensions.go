package rpc

import (
	"github.com/ferricbm/ferric/pkg/model"
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
