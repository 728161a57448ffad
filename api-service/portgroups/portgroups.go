// Package portgroups holds the port group resource's API rules that do not
// need HTTP: the field catalogue, create body decoding, JSON-PATCH
// application and representation (/v1/portgroups, 1.23+).
package portgroups

import (
	"encoding/json"

	"github.com/ferricbm/ferric/api-service/catalogue"
	"github.com/ferricbm/ferric/api-service/ident"
	"github.com/ferricbm/ferric/api-service/jsonpatch"
	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/api-service/nodes"
	"github.com/ferricbm/ferric/api-service/present"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
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

func typeErr(name string, v any, want string) error {
	b, _ := json.Marshal(v)
	return errs.New(errs.KindInvalid, "Schema error for portgroup: %s is not of type '%s' (field '%s')", b, want, name)
}

func obj(name string, ptr func(*model.Portgroup) *model.JSONObject) func(*model.Portgroup, any) error {
	return func(pg *model.Portgroup, v any) error {
		if v == nil {
			*ptr(pg) = model.JSONObject{}
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return typeErr(name, v, "object")
		}
		*ptr(pg) = model.JSONObject(m)
		return nil
	}
}

func nullableString(name string, maxLen int, ptr func(*model.Portgroup) **string) func(*model.Portgroup, any) error {
	return func(pg *model.Portgroup, v any) error {
		if v == nil {
			*ptr(pg) = nil
			return nil
		}
		s, ok := v.(string)
		if !ok {
			return typeErr(name, v, "string")
		}
		if len(s) > maxLen {
			return errs.New(errs.KindInvalid, "Schema error for portgroup: '%s' is too long (maximum %d characters)", name, maxLen)
		}
		*ptr(pg) = &s
		return nil
	}
}

func setName(pg *model.Portgroup, v any) error {
	if err := nullableString("name", 255, func(pg *model.Portgroup) **string { return &pg.Name })(pg, v); err != nil {
		return err
	}
	if pg.Name != nil && !ident.ValidNodeName(*pg.Name, Since) {
		return errs.InvalidParameterValue("Cannot use invalid portgroup name '%s'", *pg.Name)
	}
	return nil
}

func setAddress(pg *model.Portgroup, v any) error {
	if v == nil {
		pg.Address = nil
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return typeErr("address", v, "string")
	}
	mac, ok := ident.NormalizeMAC(s)
	if !ok {
		return errs.InvalidParameterValue("Expected a MAC address but received %s.", s)
	}
	pg.Address = &mac
	return nil
}

func setNodeUUID(pg *model.Portgroup, v any) error {
	if v == nil {
		return errs.New(errs.KindInvalid, "Schema error for portgroup: 'node_uuid' is a required property")
	}
	s, ok := v.(string)
	if !ok {
		return typeErr("node_uuid", v, "string")
	}
	u, ok := ident.CanonicalUUID(s)
	if !ok {
		return errs.InvalidParameterValue("Expected a UUID for node_uuid but received %s.", s)
	}
	pg.NodeUUID = u
	return nil
}

func setStandalone(pg *model.Portgroup, v any) error {
	if v == nil {
		pg.StandalonePortsSupported = true
		return nil
	}
	b, err := nodes.AsBool("standalone_ports_supported", v)
	if err != nil {
		return typeErr("standalone_ports_supported", v, "boolean")
	}
	pg.StandalonePortsSupported = b
	return nil
}

var v1 = microversion.V1(1)

// Catalogue lists every port group attribute.
var Catalogue = []Field{
	{Name: "uuid", Since: v1, Create: true, Sortable: true, Get: func(pg *model.Portgroup) any { return pg.UUID }},
	{Name: "name", Since: v1, Create: true, Patch: true, Sortable: true,
		Get: func(pg *model.Portgroup) any { return present.Str(pg.Name) }, Set: setName},
	{Name: "address", Since: v1, Create: true, Patch: true, Sortable: true,
		Get: func(pg *model.Portgroup) any { return present.Str(pg.Address) }, Set: setAddress},
	{Name: "node_uuid", Since: v1, Create: true, Patch: true, Required: true,
		Get: func(pg *model.Portgroup) any { return pg.NodeUUID }, Set: setNodeUUID},
	{Name: "standalone_ports_supported", Since: v1, Create: true, Patch: true, Sortable: true,
		Get: func(pg *model.Portgroup) any { return pg.StandalonePortsSupported }, Set: setStandalone},
	{Name: "internal_info", Since: v1,
		Get: func(pg *model.Portgroup) any { return present.Obj(pg.InternalInfo) }},
	{Name: "extra", Since: v1, Create: true, Patch: true,
		Get: func(pg *model.Portgroup) any { return present.Obj(pg.Extra) },
		Set: obj("extra", func(pg *model.Portgroup) *model.JSONObject { return &pg.Extra })},
	{Name: "mode", Since: ModeAndProperties, Create: true, Patch: true, Sortable: true,
		Get: func(pg *model.Portgroup) any { return present.Str(pg.Mode) },
		Set: nullableString("mode", 255, func(pg *model.Portgroup) **string { return &pg.Mode })},
	{Name: "properties", Since: ModeAndProperties, Create: true, Patch: true,
		Get: func(pg *model.Portgroup) any { return present.Obj(pg.Properties) },
		Set: obj("properties", func(pg *model.Portgroup) *model.JSONObject { return &pg.Properties })},
	{Name: "created_at", Since: v1, Sortable: true, Get: func(pg *model.Portgroup) any { return present.Time(&pg.CreatedAt) }},
	{Name: "updated_at", Since: v1, Sortable: true, Get: func(pg *model.Portgroup) any { return present.Time(pg.UpdatedAt) }},
}

// Resource is the port group catalogue and representation.
var Resource = catalogue.New(&catalogue.Catalogue[model.Portgroup]{Resource: "portgroup", Fields: Catalogue,
	Defaults: []string{"uuid", "address", "name"},
	Path:     func(pg *model.Portgroup) string { return "portgroups/" + pg.UUID },
	UUID:     func(pg *model.Portgroup) string { return pg.UUID },
	SubLinks: []catalogue.SubLink{{Name: "ports", Since: SubResources}},
	// Dict columns are refused with Ironic's other wording.
	Unsortable: []string{"extra", "internal_info", "properties"},
	SizeHint:   768,
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
	u, err := ident.CreateUUID(body["uuid"], typeErr)
	if err != nil {
		return nil, err
	}
	pg.UUID = u
	return pg, nil
}

// Apply patches a copy of pg at version v and returns it; pg itself is
// not changed.
func Apply(pg *model.Portgroup, ops []jsonpatch.Op, v microversion.Version) (*model.Portgroup, error) {
	if err := Resource.CheckPatch(ops, v); err != nil {
		return nil, err
	}
	return Resource.Apply(pg, ops, func(pg *model.Portgroup) *model.Portgroup {
		out := *pg
		out.Extra = copyObj(pg.Extra)
		out.Properties = copyObj(pg.Properties)
		out.InternalInfo = copyObj(pg.InternalInfo)
		return &out
	})
}

func copyObj(o model.JSONObject) model.JSONObject {
	return model.JSONObject(jsonpatch.DeepCopy(map[string]any(present.Obj(o))).(map[string]any))
}

// View says how to render port groups.
type View struct {
	Version microversion.Version
	Base    string
	// Fields limits the output to these attributes (plus links); nil
	// renders the full object with its ports link (1.24+).
	Fields []string
}

// Render is the JSON object of pg at the view's version.
func (vw View) Render(pg *model.Portgroup) map[string]any {
	return Resource.Render(catalogue.View[model.Portgroup]{Version: vw.Version, Base: vw.Base, Fields: vw.Fields}, pg)
}
