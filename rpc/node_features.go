package rpc

type NodeTraitsArgs struct {
	NodeID string   `json:"node_id"`
	Traits []string `json:"traits"`
	// Replace makes Traits the node's whole set (add_node_traits only).
	Replace bool `json:"replace,omitempty"`
}

type RescueArgs struct {
	NodeID string `json:"node_id"`
	// RescuePassword is the password the rescue ramdisk sets for its user;
	// the conductor keeps only its hash.
	RescuePassword string `json:"rescue_password"`
}

// BIOSSetting is one BIOS setting of a node as its bios interface reports it.
type BIOSSetting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}
