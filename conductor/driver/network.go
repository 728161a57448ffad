package driver

import (
	"context"
	"slices"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// tenantVIFKey is where a port's bound tenant VIF is recorded in its
// internal_info; legacyVIFKey is the older place, in extra, still honoured.
const (
	tenantVIFKey = "tenant_vif_port_id"
	legacyVIFKey = "vif_port_id"
)

// PortVIF is the tenant VIF bound to a port, "" when it is free.
func PortVIF(p *model.Port) string {
	if s, ok := p.InternalInfo[tenantVIFKey].(string); ok && s != "" {
		return s
	}
	if s, ok := p.Extra[legacyVIFKey].(string); ok && s != "" {
		return s
	}
	return ""
}

// NoopNetwork leaves networking to someone else. Attach and detach accept
// and forget, as Ironic's noop does: a compute service always attaches its
// VIFs, and must not fail on nodes whose network is wired by hand.
type NoopNetwork struct{ NoOp }

func (NoopNetwork) VIFList(context.Context, PortTaskContext) ([]VIF, error) { return []VIF{}, nil }

func (NoopNetwork) VIFAttach(context.Context, PortTaskContext, VIF) error { return nil }

func (NoopNetwork) VIFDetach(context.Context, PortTaskContext, string) error { return nil }

// FlatNetwork puts every node on one shared provider network: attaching a
// VIF only records it on a free port, where the deploy and boot interfaces
// find the MAC to serve.
type FlatNetwork struct{ NoOp }

func (FlatNetwork) VIFList(ctx context.Context, t PortTaskContext) ([]VIF, error) {
	ports, err := t.Ports(ctx)
	if err != nil {
		return nil, err
	}
	out := []VIF{}
	for i := range ports {
		if v := PortVIF(&ports[i]); v != "" {
			out = append(out, VIF{ID: v})
		}
	}
	return out, nil
}

// VIFAttach binds the VIF to a free port, PXE-enabled ports first (they
// are the ones the node boots from), then in creation order.
func (FlatNetwork) VIFAttach(ctx context.Context, t PortTaskContext, vif VIF) error {
	ports, err := t.Ports(ctx)
	if err != nil {
		return err
	}
	var free []*model.Port
	for i := range ports {
		p := &ports[i]
		switch PortVIF(p) {
		case vif.ID:
			return errs.New(errs.KindConflict, "Unable to attach VIF because VIF %s is already attached to Ironic port %s", vif.ID, p.UUID)
		case "":
			free = append(free, p)
		}
	}
	slices.SortStableFunc(free, func(a, b *model.Port) int {
		switch {
		case a.PXEEnabled == b.PXEEnabled:
			return 0
		case a.PXEEnabled:
			return -1
		}
		return 1
	})
	if len(free) == 0 {
		return errs.New(errs.KindInvalid, "Unable to attach VIF %s, not enough free physical ports.", vif.ID)
	}
	p := free[0]
	if p.InternalInfo == nil {
		p.InternalInfo = model.JSONObject{}
	}
	p.InternalInfo[tenantVIFKey] = vif.ID
	return t.SavePort(ctx, p)
}

func (FlatNetwork) VIFDetach(ctx context.Context, t PortTaskContext, vifID string) error {
	ports, err := t.Ports(ctx)
	if err != nil {
		return err
	}
	for i := range ports {
		p := &ports[i]
		if PortVIF(p) != vifID {
			continue
		}
		delete(p.InternalInfo, tenantVIFKey)
		if s, _ := p.Extra[legacyVIFKey].(string); s == vifID {
			delete(p.Extra, legacyVIFKey)
		}
		return t.SavePort(ctx, p)
	}
	return errs.New(errs.KindInvalid, "Unable to detach VIF %s from node %s because it is not attached to it.", vifID, t.Node().UUID)
}
