package rpc

// Arguments and results of a node's hardware interfaces beyond power and
// boot: RAID, BIOS and console.

type SetTargetRAIDConfigArgs struct {
	NodeID string `json:"node_id"`
	// Config is the whole target RAID configuration; empty clears it.
	Config map[string]any `json:"target_raid_config"`
}

type SetConsoleModeArgs struct {
	NodeID  string `json:"node_id"`
	Enabled bool   `json:"enabled"`
}

// BIOSSetting is one BIOS setting of a node as its bios interface reports it.
type BIOSSetting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}
