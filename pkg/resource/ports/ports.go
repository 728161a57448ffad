// Package ports holds the port resource's API rules that do not need HTTP:
// the field catalogue, create body decoding, MAC normalisation, JSON-PATCH
// application and representation (docs/api.md §4.4).
package ports

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/resource/ident"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/present"
)

// Field is one top-level port attribute.
type Field = catalogue.Field[model.Port]

var v1 = microversion.V1(1)

func obj(name string, ptr func(*model.Port) *model.JSONObject) func(*model.Port, any) error {
	return catalogue.Object("port", name, ptr)
}

func unstored(name string, since int) Field {
	return Field{Name: name, Since: microversion.V1(since), Create: true, Patch: true}
}

// Catalogue lists every port attribute.
var Catalogue = []Field{
	{Name: "uuid", Since: v1, Create: true, Sortable: true, Get: func(p *model.Port) any { return p.UUID }},
	{Name: "address", Since: v1, Create: true, Patch: true, Required: true, Sortable: true,
		Get: func(p *model.Port) any { return p.Address }, Set: setAddress,
		Filters: []catalogue.Filter{{Query: catalogue.QueryMAC}}},
	{Name: "node_uuid", Since: v1, Create: true, Patch: true, Required: true,
		Get: func(p *model.Port) any { return p.NodeUUID }, Set: setNodeUUID,
		Filters: []catalogue.Filter{{Param: "node", Query: catalogue.QueryNode, Column: "node_id"}, {Query: catalogue.QueryUUID}}},
	{Name: "extra", Since: v1, Create: true, Patch: true,
		Get:    func(p *model.Port) any { return map[string]any(p.Extra) },
		Object: func(p *model.Port) *model.JSONObject { return &p.Extra },
		Set:    obj("extra", func(p *model.Port) *model.JSONObject { return &p.Extra })},
	{Name: "internal_info", Since: microversion.V1(18),
		Get:    func(p *model.Port) any { return map[string]any(p.InternalInfo) },
		Object: func(p *model.Port) *model.JSONObject { return &p.InternalInfo }},
	{Name: "local_link_connection", Since: microversion.V1(19), Create: true, Patch: true,
		Get: func(p *model.Port) any { return map[string]any(p.LocalLinkConnection) }, Set: setLLC,
		Object: func(p *model.Port) *model.JSONObject { return &p.LocalLinkConnection }},
	{Name: "pxe_enabled", Since: microversion.V1(19), Create: true, Patch: true, Sortable: true,
		Get: func(p *model.Port) any { return p.PXEEnabled }, Set: setPXE},
	{Name: "physical_network", Since: microversion.V1(34), Create: true, Patch: true, Sortable: true,
		Get: func(p *model.Port) any { return present.Str(p.PhysicalNetwork) }, Set: setPhysnet},
	{Name: "created_at", Since: v1, Sortable: true, Get: func(p *model.Port) any { return present.Time(&p.CreatedAt) }},
	{Name: "updated_at", Since: v1, Sortable: true, Get: func(p *model.Port) any { return present.Time(p.UpdatedAt) }},

	{Name: "portgroup_uuid", Since: microversion.PortgroupLinks, Create: true, Patch: true,
		Get: func(p *model.Port) any { return present.Str(p.PortgroupUUID) }, Set: setPortgroupUUID,
		Filters: []catalogue.Filter{{Param: "portgroup", Query: catalogue.QueryPortgroup, Column: "portgroup_id"}}},
	{Name: "is_smartnic", Since: microversion.V1(53), Create: true, Patch: true, Sortable: true,
		Get: func(p *model.Port) any { return p.IsSmartNIC }, Set: setSmartNIC},
	unstored("name", 88),
	unstored("node_ident", 94),
	withFilters(unstored("description", 97), catalogue.Filter{Param: "description_contains", Op: filter.Contains}),
	unstored("vendor", 100),
	unstored("category", 101),
	unstored("available_for_dynamic_portgroup", 111),

	// Filters on the port's node, not attributes of the port.
	{Name: "shard", Since: microversion.V1(82), Filters: []catalogue.Filter{{}}},
	{Name: "conductor_groups", Since: microversion.V1(99), Filters: []catalogue.Filter{{}}},
}

// withFilters gives a row its list filters.
func withFilters(f Field, filters ...catalogue.Filter) Field {
	f.Filters = filters
	return f
}

// Resource is the port catalogue and representation.
var Resource = catalogue.New(&catalogue.Catalogue[model.Port]{Resource: "port", Fields: Catalogue,
	Defaults: []string{"uuid", "address"},
	Path:     func(p *model.Port) string { return "ports/" + p.UUID },
	UUID:     func(p *model.Port) string { return p.UUID },
	NewUUID:  func(p *model.Port) *string { return &p.UUID },
	SizeHint: 640,
})

// DefaultListFields is the short field set of a non-detail port list.
var DefaultListFields = Resource.Defaults

var setAddress = catalogue.Text("port", "address", catalogue.TextRule{Required: true, Check: catalogue.MAC},
	func(p *model.Port, s *string) { p.Address = *s })

var setNodeUUID = catalogue.Text("port", "node_uuid", catalogue.TextRule{Required: true, Check: catalogue.UUID("node_uuid")},
	func(p *model.Port, s *string) { p.NodeUUID = *s })

// setPortgroupUUID records the group a port joins by uuid; the caller
// resolves it and checks it belongs to the port's node.
var setPortgroupUUID = catalogue.Text("port", "portgroup_uuid", catalogue.TextRule{Check: catalogue.UUID("portgroup_uuid")},
	func(p *model.Port, s *string) {
		p.PortgroupUUID = s
		if s == nil {
			p.PortgroupID = nil
		}
	})

var setPXE = catalogue.Bool("port", "pxe_enabled", true, func(p *model.Port) *bool { return &p.PXEEnabled })

var setPhysnet = catalogue.Text("port", "physical_network", catalogue.TextRule{Check: func(s string) (string, error) {
	if s == "" || len(s) > 64 {
		return "", errs.InvalidParameterValue("physical_network must be a non-empty string of at most 64 characters")
	}
	return s, nil
}}, func(p *model.Port, s *string) { p.PhysicalNetwork = s })

var setSmartNIC = catalogue.Bool("port", "is_smartnic", false, func(p *model.Port) *bool { return &p.IsSmartNIC })

var datapathID = regexp.MustCompile(`^(0x)?[0-9a-fA-F]{16}$`)

func setLLC(p *model.Port, v any) error {
	if err := obj("local_link_connection", func(p *model.Port) *model.JSONObject { return &p.LocalLinkConnection })(p, v); err != nil {
		return err
	}
	llc := p.LocalLinkConnection
	if len(llc) == 0 {
		return nil
	}
	for k, val := range llc {
		if k != "switch_id" && k != "port_id" && k != "switch_info" && k != "hostname" {
			return errs.InvalidParameterValue("Invalid local_link_connection: unexpected key %s", k)
		}
		if _, ok := val.(string); !ok {
			return errs.InvalidParameterValue("Invalid local_link_connection: %s must be a string", k)
		}
	}
	_, port := llc["port_id"]
	_, sw := llc["switch_id"]
	_, host := llc["hostname"]
	if !port || (!sw && !host) {
		return errs.InvalidParameterValue("Invalid local_link_connection: it needs switch_id and port_id, or hostname and port_id on a Smart NIC")
	}
	if !sw {
		return nil
	}
	id := llc["switch_id"].(string)
	if mac, ok := ident.NormalizeMAC(id); ok {
		llc["switch_id"] = mac
	} else if !datapathID.MatchString(id) {
		return errs.InvalidParameterValue("Expected a MAC address or OpenFlow datapath ID but received %s.", id)
	}
	return nil
}

// checkSmartNIC refuses a Smart NIC port whose local link does not name
// the card: its hostname and port.
func checkSmartNIC(p *model.Port) error {
	if !p.IsSmartNIC {
		return nil
	}
	for _, k := range []string{"port_id", "hostname"} {
		if s, _ := p.LocalLinkConnection[k].(string); s == "" {
			return errs.New(errs.KindInvalid, "Smart NIC port must have port_id and hostname in local_link_connection")
		}
	}
	return nil
}

// CheckGroupPhysnet refuses port p as a member of port group group when
// the group's other ports are on another physical network: a bond spans
// one network. members are the group's ports, p among them or not.
func CheckGroupPhysnet(p *model.Port, group string, members []model.Port) error {
	nets := map[string]bool{}
	for _, m := range members {
		if m.UUID != p.UUID {
			nets[physnetName(m.PhysicalNetwork)] = true
		}
	}
	switch {
	case len(nets) == 0:
		return nil
	case len(nets) > 1:
		return errs.New(errs.KindConflict, "Port group %s has member ports with different physical networks (%s).",
			group, strings.Join(slices.Sorted(maps.Keys(nets)), ", "))
	case !nets[physnetName(p.PhysicalNetwork)]:
		return errs.New(errs.KindConflict,
			"Port with physical network %s cannot become a member of port group %s which has ports in physical network %s.",
			physnetName(p.PhysicalNetwork), group, slices.Collect(maps.Keys(nets))[0])
	}
	return nil
}

// physnetName writes a physical network as Ironic's messages do.
func physnetName(s *string) string {
	if s == nil {
		return "None"
	}
	return *s
}

// DecodeCreate turns a create body into an unsaved port with NodeUUID set
// (the caller resolves it to the owning node).
func DecodeCreate(body map[string]any, v microversion.Version) (*model.Port, error) {
	p := &model.Port{Extra: model.JSONObject{}, InternalInfo: model.JSONObject{},
		LocalLinkConnection: model.JSONObject{}, PXEEnabled: true}
	if err := Resource.Decode(p, body, v); err != nil {
		return nil, err
	}
	return p, checkSmartNIC(p)
}

// Apply patches a copy of p at version v and returns it.
func Apply(p *model.Port, ops []jsonpatch.Op, v microversion.Version) (*model.Port, error) {
	patched, err := Resource.Patch(p, ops, v)
	if err != nil {
		return nil, err
	}
	return patched, checkSmartNIC(patched)
}
