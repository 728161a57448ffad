package driver

import (
	"context"
	"fmt"
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// StorageImplementations are the storage interfaces every hardware type
// offers, noop (the default) first: storage is about the node's volume
// records, not about its hardware.
func StorageImplementations() []Implementation {
	return []Implementation{
		{Name: "noop", Impl: NoOp{}},
		{Name: "cinder", Impl: Cinder{}},
		{Name: "external", Impl: External{}},
	}
}

// External is the storage interface for volumes attached by something
// outside Ferric: the target records are trusted as they are.
type External struct{ NoOp }

// Volume types and connector types the cinder interface understands.
const (
	VolumeISCSI        = "iscsi"
	VolumeFibreChannel = "fibre_channel"
	ConnectorIQN       = "iqn"
	ConnectorWWPN      = "wwpn"
	ConnectorWWNN      = "wwnn"
)

// bootCapability names the node capability that says the hardware can boot
// from a volume of that type.
var bootCapability = map[string]string{
	VolumeISCSI:        "iscsi_boot",
	VolumeFibreChannel: "fibre_channel_boot",
}

// Cinder is the storage interface for volumes from a block storage
// service. Validation checks that the node's connectors can reach every
// target it has and that it can boot from its boot volume.
type Cinder struct{}

func (Cinder) Validate(ctx context.Context, t TaskContext) error {
	connectors, err := t.VolumeConnectors(ctx)
	if err != nil {
		return err
	}
	targets, err := t.VolumeTargets(ctx)
	if err != nil {
		return err
	}
	return validateCinder(t.Node(), connectors, targets)
}

func validateCinder(n *model.Node, connectors []model.VolumeConnector, targets []model.VolumeTarget) error {
	count := map[string]int{}
	for _, c := range connectors {
		if c.ConnectorID != "" {
			count[c.Type]++
		}
	}
	if count[ConnectorWWPN] != count[ConnectorWWNN] {
		return errs.InvalidParameterValue(
			"Storage interface cinder: node %s has %d wwpn and %d wwnn volume connectors; Fibre Channel needs them in pairs.",
			n.UUID, count[ConnectorWWPN], count[ConnectorWWNN])
	}
	reachable := map[string]bool{
		VolumeISCSI:        count[ConnectorIQN] > 0,
		VolumeFibreChannel: count[ConnectorWWPN] > 0,
	}
	caps := capabilities(n.Properties)
	for _, t := range targets {
		if t.VolumeID == "" {
			return errs.New(errs.KindMissingParameterValue,
				"Storage interface cinder: volume target %s of node %s has no volume_id.", t.UUID, n.UUID)
		}
		capName, known := bootCapability[t.VolumeType]
		if !known {
			return errs.InvalidParameterValue(
				"Storage interface cinder: volume target %s of node %s has volume_type %q; the supported types are %q and %q.",
				t.UUID, n.UUID, t.VolumeType, VolumeISCSI, VolumeFibreChannel)
		}
		if !reachable[t.VolumeType] {
			want := ConnectorIQN
			if t.VolumeType == VolumeFibreChannel {
				want = "wwpn and wwnn"
			}
			return errs.InvalidParameterValue(
				"Storage interface cinder: volume target %s of node %s is %s, but the node has no %s volume connector.",
				t.UUID, n.UUID, t.VolumeType, want)
		}
		if t.BootIndex == 0 && !strings.EqualFold(caps[capName], "true") {
			return errs.InvalidParameterValue(
				"Storage interface cinder: node %s boots from %s volume target %s, but its properties do not declare the capability %s:true.",
				n.UUID, t.VolumeType, t.UUID, capName)
		}
	}
	return nil
}

// capabilities reads properties.capabilities, given either as Ironic's
// "key:value,key:value" string or as an object.
func capabilities(props model.JSONObject) map[string]string {
	out := map[string]string{}
	switch c := props["capabilities"].(type) {
	case string:
		for _, item := range strings.Split(c, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(item), ":")
			if ok {
				out[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	case map[string]any:
		for k, v := range c {
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}
