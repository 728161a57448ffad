// Package portgroups holds the port group resource's API rules that do not
// need HTTP: the field catalogue, create body decoding, JSON-PATCH
// application and representation (/v1/portgroups, 1.23+).
package portgroups

import (
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/ident"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/present"
)

// Versions of the port group features.
var (
	// Since is when /v1/portgroups appeared.
	Since = microversion.Portgroups
	// SubResources is when a port group links its ports (and a node its
	// port groups), and ports show portgroup_uuid.
	SubResources = microversion.PortgroupLinks
	// ModeAndProperties is when mode and properties appeared.
	ModeAndProperties = microversion.V1(26)
)

// DefaultMode is the bonding mode of a port group created without one
// (Ironic's default_portgroup_mode).
const DefaultMode = "active-backup"

// Field is one top-level port group attribute.
type Field = catalogue.Field[model.Portgroup]

func obj(name string, ptr func(*model.Portgroup) *model.JSONObject) func(*model.Portgroup, any) error {
	return catalogue.Object("portgroup", name, ptr)
}

var setName = catalogue.Text("portgroup", "name", catalogue.TextRule{MaxLen: 255, Check: func(s string) (string, error) {
	if !ident.ValidNodeName(s, Since) {
		return "", errs.InvalidParameterValue("Cannot use invalid portgroup name '%s'", s)
	}
	return s, nil
}}, func(pg *model.Portgroup, s *string) { pg.Name = s })

var setAddress = catalogue.Text("portgroup", "address", catalogue.TextRule{Check: catalogue.MAC},
	func(pg *model.Portgroup, s *string) { pg.Address = s })

var setNodeUUID = catalogue.Text("portgroup", "node_uuid", catalogue.TextRule{Required: true, Check: catalogue.UUID("node_uuid")},
	func(pg *model.Portgroup, s *string) { pg.NodeUUID = *s })

var setStandalone = catalogue.Bool("portgroup", "standalone_ports_supported", true,
	func(pg *model.Portgroup) *bool { return &pg.StandalonePortsSupported })

var v1 = microversion.V1(1)

// Catalogue lists every port group attribute.
var Catalogue = []Field{
	{Name: "uuid", Since: v1, Create: true, Sortable: true, Get: func(pg *model.Portgroup) any { return pg.UUID }},
	{Name: "name", Since: v1, Create: true, Patch: true, Sortable: true,
		Get: func(pg *model.Portgroup) any { return present.Str(pg.Name) }, Set: setName},
	{Name: "address", Since: v1, Create: true, Patch: true, Sortable: true,
		Get: func(pg *model.Portgroup) any { return present.Str(pg.Address) }, Set: setAddress,
		Filters: []catalogue.Filter{{Query: catalogue.QueryMAC}}},
	{Name: "node_uuid", Since: v1, Create: true, Patch: true, Required: true,
		Get: func(pg *model.Portgroup) any { return pg.NodeUUID }, Set: setNodeUUID,
		Filters: []catalogue.Filter{{Param: "node", Query: catalogue.QueryNode, Column: "node_id"}}},
	{Name: "standalone_ports_supported", Since: v1, Create: true, Patch: true, Sortable: true,
		Get: func(pg *model.Portgroup) any { return pg.StandalonePortsSupported }, Set: setStandalone},
	{Name: "internal_info", Since: v1,
		Get:    func(pg *model.Portgroup) any { return present.Obj(pg.InternalInfo) },
		Object: func(pg *model.Portgroup) *model.JSONObject { return &pg.InternalInfo }},
	{Name: "extra", Since: v1, Create: true, Patch: true,
		Get:    func(pg *model.Portgroup) any { return present.Obj(pg.Extra) },
		Object: func(pg *model.Portgroup) *model.JSONObject { return &pg.Extra },
		Set:    obj("extra", func(pg *model.Portgroup) *model.JSONObject { return &pg.Extra })},
	{Name: "mode", Since: ModeAndProperties, Create: true, Patch: true, Sortable: true,
		Get: func(pg *model.Portgroup) any { return present.Str(pg.Mode) },
		Set: catalogue.String("portgroup", "mode", 255, func(pg *model.Portgroup) **string { return &pg.Mode })},
	{Name: "properties", Since: ModeAndProperties, Create: true, Patch: true,
		Get:    func(pg *model.Portgroup) any { return present.Obj(pg.Properties) },
		Object: func(pg *model.Portgroup) *model.JSONObject { return &pg.Properties },
		Set:    obj("properties", func(pg *model.Portgroup) *model.JSONObject { return &pg.Properties })},
	{Name: "created_at", Since: v1, Sortable: true, Get: func(pg *model.Portgroup) any { return present.Time(&pg.CreatedAt) }},
	{Name: "updated_at", Since: v1, Sortable: true, Get: func(pg *model.Portgroup) any { return present.Time(pg.UpdatedAt) }},
}

// Resource is the port group catalogue and representation.
var Resource = catalogue.New(&catalogue.Catalogue[model.Portgroup]{Resource: "portgroup", Fields: Catalogue,
	Defaults: []string{"uuid", "address", "name"},
	Path:     func(pg *model.Portgroup) string { return "portgroups/" + pg.UUID },
	UUID:     func(pg *model.Portgroup) string { return pg.UUID },
	NewUUID:  func(pg *model.Portgroup) *string { return &pg.UUID },
	SubLinks: []catalogue.SubLink{{Name: "ports", Since: SubResources}},
	SizeHint: 768,
})

// DefaultListFields is the short field set of a non-detail list.
var DefaultListFields = Resource.Defaults

// DecodeCreate turns a create body into an unsaved port group with
// NodeUUID set (the caller resolves it to the owning node).
func DecodeCreate(body map[string]any, v microversion.Version) (*model.Portgroup, error) {
	pg := &model.Portgroup{Extra: model.JSONObject{}, InternalInfo: model.JSONObject{},
		Properties: model.JSONObject{}, StandalonePortsSupported: true}
	if err := Resource.Decode(pg, body, v); err != nil {
		return nil, err
	}
	if pg.Mode == nil {
		// Absent or null, the mode is the default.
		mode := DefaultMode
		pg.Mode = &mode
	}
	return pg, nil
}

// Apply patches a copy of pg at version v and returns it; pg itself is
// not changed.
func Apply(pg *model.Portgroup, ops []jsonpatch.Op, v microversion.Version) (*model.Portgroup, error) {
	return Resource.Patch(pg, ops, v)
}
