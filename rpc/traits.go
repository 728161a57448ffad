package rpc

type NodeTraitsArgs struct {
	NodeID string   `json:"node_id"`
	Traits []string `json:"traits"`
	// Replace makes Traits the node's whole set (add_node_traits only).
	Replace bool `json:"replace,omitempty"`
}
