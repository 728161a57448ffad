package rpc

import (
	"context"
)

// Traits (1.37), rescue (1.38) and BIOS settings (1.40).
const (
	MethodAddNodeTraits    = "add_node_traits"
	MethodRemoveNodeTraits = "remove_node_traits"
	MethodDoNodeRescue     = "do_node_rescue"
	MethodDoNodeUnrescue   = "do_node_unrescue"
	MethodGetBIOSSettings  = "get_bios_settings"
)

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

// NodeFeatures are the conductor methods of the 1.37-1.40 node features.
type NodeFeatures interface {
	// AddNodeTraits adds (or with Replace sets) traits under the node lock.
	AddNodeTraits(ctx context.Context, args NodeTraitsArgs) error
	// RemoveNodeTraits removes the given traits, or all of them when
	// Traits is nil; an absent trait is NodeTraitNotFound.
	RemoveNodeTraits(ctx context.Context, args NodeTraitsArgs) error
	// DoNodeRescue and DoNodeUnrescue are async.
	DoNodeRescue(ctx context.Context, args RescueArgs) error
	DoNodeUnrescue(ctx context.Context, args NodeArgs) error
	GetBIOSSettings(ctx context.Context, args NodeArgs) ([]BIOSSetting, error)
}

func (cc conductorClient) AddNodeTraits(ctx context.Context, args NodeTraitsArgs) error {
	return cc.call(ctx, MethodAddNodeTraits, args, nil)
}

func (cc conductorClient) RemoveNodeTraits(ctx context.Context, args NodeTraitsArgs) error {
	return cc.call(ctx, MethodRemoveNodeTraits, args, nil)
}

func (cc conductorClient) DoNodeRescue(ctx context.Context, args RescueArgs) error {
	return cc.call(ctx, MethodDoNodeRescue, args, nil)
}

func (cc conductorClient) DoNodeUnrescue(ctx context.Context, args NodeArgs) error {
	return cc.call(ctx, MethodDoNodeUnrescue, args, nil)
}

func (cc conductorClient) GetBIOSSettings(ctx context.Context, args NodeArgs) ([]BIOSSetting, error) {
	var r []BIOSSetting
	err := cc.call(ctx, MethodGetBIOSSettings, args, &r)
	return r, err
}

func init() {
	methods[MethodAddNodeTraits] = errorOnly(ConductorAPI.AddNodeTraits)
	methods[MethodRemoveNodeTraits] = errorOnly(ConductorAPI.RemoveNodeTraits)
	methods[MethodDoNodeRescue] = errorOnly(ConductorAPI.DoNodeRescue)
	methods[MethodDoNodeUnrescue] = errorOnly(ConductorAPI.DoNodeUnrescue)
	methods[MethodGetBIOSSettings] = returning(ConductorAPI.GetBIOSSettings)
}
