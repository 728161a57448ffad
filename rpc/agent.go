package rpc

import "github.com/ferricbm/ferric/pkg/model"

// LookupArgs is an agent's lookup of its node. SourceAddress (since 1.4)
// is the address the lookup came from, as the API saw its connection.
type LookupArgs struct {
	NodeID        string `json:"node_id"`
	SourceAddress string `json:"source_address,omitempty"`
}

type HeartbeatArgs struct {
	NodeID string `json:"node_id"`
	// SourceAddress (since 1.4) is the address the heartbeat came from.
	SourceAddress string `json:"source_address,omitempty"`
	CallbackURL   string `json:"callback_url"`
	AgentVersion  string `json:"agent_version,omitempty"`
	AgentToken    string `json:"agent_token,omitempty"`
	// AgentVerifyCA is the PEM certificate an agent serving HTTPS presents.
	AgentVerifyCA string `json:"agent_verify_ca,omitempty"`
}

// NodeWithToken is a node as the agent lookup serves it. AgentToken is the
// token issued to the ramdisk by this call, or "******" when one had
// already been issued (it is never handed out twice).
type NodeWithToken struct {
	Node       model.Node `json:"node"`
	AgentToken string     `json:"agent_token"`
}
