package rpc

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
