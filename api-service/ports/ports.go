// Package ports holds the port resource's API rules that do not need HTTP:
// the field catalogue, create body decoding, MAC normalisation, JSON-PATCH
// application and representation (docs/api.md §4.4).
package ports

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	"github.com/ferricbm/ferric/api-service/ident"
	"github.com/ferricbm/ferric/api-service/jsonpatch"
	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/api-service/present"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// Field is one top-level port attribute; see nodes.Field.
type Field struct {
	Name          string
	Since         microversion.Version
	Create, Patch bool
	Sortable      bool
	Get           func(p *model.Port) any
	Set           func(p *model.Port, v any) error
}

// Implemented reports whether the field is backed by storage.
func (f Field) Implemented() bool { return f.Get != nil }

var v1 = microversion.V1(1)

func typeErr(name string, v any, want string) error {
	b, _ := json.Marshal(v)
	return errs.New(errs.KindInvalid, "Schema error for port: %s is not of type '%s' (field '%s')", b, want, name)
}

func obj(name string, ptr func(*model.Port) *model.JSONObject) func(*model.Port, any) error {
	return func(p *model.Port, v any) error {
		if v == nil {
			*ptr(p) = model.JSONObject{}
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return typeErr(name, v, "object")
		}
		*ptr(p) = model.JSONObject(m)
		return nil
	}
}

func unstored(name string, since int) Field {
	return Field{Name: name, Since: microversion.V1(since), Create: true, Patch: true}
}

// Catalogue lists every port attribute.
var Catalogue = []Field{
	{Name: "uuid", Since: v1, Create: true, Sortable: true, Get: func(p *model.Port) any { return p.UUID }},
	{Name: "address", Since: v1, Create: true, Patch: true, Sortable: true,
		Get: func(p *model.Port) any { return p.Address }, Set: setAddress},
	{Name: "node_uuid", Since: v1, Create: true, Patch: true,
		Get: func(p *model.Port) any { return p.NodeUUID }, Set: setNodeUUID},
	{Name: "extra", Since: v1, Create: true, Patch: true,
		Get: func(p *model.Port) any { return map[string]any(p.Extra) },
		Set: obj("extra", func(p *model.Port) *model.JSONObject { return &p.Extra })},
	{Name: "internal_info", Since: microversion.V1(18),
		Get: func(p *model.Port) any { return map[string]any(p.InternalInfo) }},
	{Name: "local_link_connection", Since: microversion.V1(19), Create: true, Patch: true,
		Get: func(p *model.Port) any { return map[string]any(p.LocalLinkConnection) }, Set: setLLC},
	{Name: "pxe_enabled", Since: microversion.V1(19), Create: true, Patch: true, Sortable: true,
		Get: func(p *model.Port) any { return p.PXEEnabled }, Set: setPXE},
	{Name: "physical_network", Since: microversion.V1(34), Create: true, Patch: true, Sortable: true,
		Get: func(p *model.Port) any { return present.Str(p.PhysicalNetwork) }, Set: setPhysnet},
	{Name: "created_at", Since: v1, Sortable: true, Get: func(p *model.Port) any { return present.Time(&p.CreatedAt) }},
	{Name: "updated_at", Since: v1, Sortable: true, Get: func(p *model.Port) any { return present.Time(p.UpdatedAt) }},

	{Name: "portgroup_uuid", Since: microversion.PortgroupLinks, Create: true, Patch: true,
		Get: func(p *model.Port) any { return present.Str(p.PortgroupUUID) }, Set: setPortgroupUUID},
	unstored("is_smartnic", 53),
	unstored("name", 88),
	unstored("node_ident", 94),
	unstored("description", 97),
	unstored("vendor", 100),
	unstored("category", 101),
	unstored("available_for_dynamic_portgroup", 111),
}

var byName = func() map[string]Field {
	m := map[string]Field{}
	for _, f := range Catalogue {
		m[f.Name] = f
	}
	return m
}()

// Lookup finds a catalogue field by name.
func Lookup(name string) (Field, bool) {
	f, ok := byName[name]
	return f, ok
}

// DefaultListFields is the short field set of a non-detail port list.
var DefaultListFields = []string{"uuid", "address"}

func setAddress(p *model.Port, v any) error {
	if v == nil {
		return errs.New(errs.KindInvalid, "Schema error for port: 'address' is a required property")
	}
	s, ok := v.(string)
	if !ok {
		return typeErr("address", v, "string")
	}
	mac, ok := ident.NormalizeMAC(s)
	if !ok {
		return errs.InvalidParameterValue("Expected a MAC address but received %s.", s)
	}
	p.Address = mac
	return nil
}

func setNodeUUID(p *model.Port, v any) error {
	if v == nil {
		return errs.New(errs.KindInvalid, "Schema error for port: 'node_uuid' is a required property")
	}
	s, ok := v.(string)
	if !ok {
		return typeErr("node_uuid", v, "string")
	}
	c, ok := ident.CanonicalUUID(s)
	if !ok {
		return errs.InvalidParameterValue("Expected a UUID for node_uuid but received %s.", s)
	}
	p.NodeUUID = c
	return nil
}

// setPortgroupUUID records the group a port joins by uuid; the caller
// resolves it and checks it belongs to the port's node.
func setPortgroupUUID(p *model.Port, v any) error {
	if v == nil {
		p.PortgroupUUID, p.PortgroupID = nil, nil
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return typeErr("portgroup_uuid", v, "string")
	}
	c, ok := ident.CanonicalUUID(s)
	if !ok {
		return errs.InvalidParameterValue("Expected a UUID for portgroup_uuid but received %s.", s)
	}
	p.PortgroupUUID = &c
	return nil
}

func setPXE(p *model.Port, v any) error {
	if v == nil {
		p.PXEEnabled = true
		return nil
	}
	switch t := v.(type) {
	case bool:
		p.PXEEnabled = t
		return nil
	case string:
		switch strings.ToLower(t) {
		case "true", "1", "t", "on", "y", "yes":
			p.PXEEnabled = true
			return nil
		case "false", "0", "f", "off", "n", "no":
			p.PXEEnabled = false
			return nil
		}
	}
	return typeErr("pxe_enabled", v, "boolean")
}

func setPhysnet(p *model.Port, v any) error {
	if v == nil {
		p.PhysicalNetwork = nil
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return typeErr("physical_network", v, "string")
	}
	if s == "" || len(s) > 64 {
		return errs.InvalidParameterValue("physical_network must be a non-empty string of at most 64 characters")
	}
	p.PhysicalNetwork = &s
	return nil
}

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
		if k != "switch_id" && k != "port_id" && k != "switch_info" {
			return errs.InvalidParameterValue("Invalid local_link_connection: unexpected key %s", k)
		}
		if _, ok := val.(string); !ok {
			return errs.InvalidParameterValue("Invalid local_link_connection: %s must be a string", k)
		}
	}
	for _, k := range []string{"switch_id", "port_id"} {
		if _, ok := llc[k]; !ok {
			return errs.InvalidParameterValue("Invalid local_link_connection: missing mandatory key %s", k)
		}
	}
	sw := llc["switch_id"].(string)
	if mac, ok := ident.NormalizeMAC(sw); ok {
		llc["switch_id"] = mac
	} else if !datapathID.MatchString(sw) {
		return errs.InvalidParameterValue("Expected a MAC address or OpenFlow datapath ID but received %s.", sw)
	}
	return nil
}

// DecodeCreate turns a create body into an unsaved port with NodeUUID set
// (the caller resolves it to the owning node).
func DecodeCreate(body map[string]any, v microversion.Version) (*model.Port, error) {
	var unknown []string
	for k := range body {
		if f, ok := byName[k]; !ok || !f.Create {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, errs.New(errs.KindInvalid, "Schema error for port: Additional properties are not allowed ('%s' was unexpected)", strings.Join(unknown, "', '"))
	}
	for k, val := range body {
		if f := byName[k]; val != nil && (!v.AtLeast(f.Since) || !f.Implemented()) {
			return nil, errs.NotAcceptable("")
		}
	}
	for _, k := range []string{"address", "node_uuid"} {
		if _, ok := body[k]; !ok {
			return nil, errs.New(errs.KindInvalid, "Schema error for port: '%s' is a required property", k)
		}
	}
	p := &model.Port{Extra: model.JSONObject{}, InternalInfo: model.JSONObject{},
		LocalLinkConnection: model.JSONObject{}, PXEEnabled: true}
	for _, f := range Catalogue {
		val, ok := body[f.Name]
		if !ok || f.Name == "uuid" || !f.Implemented() {
			continue
		}
		if err := f.Set(p, val); err != nil {
			return nil, err
		}
	}
	u, err := ident.CreateUUID(body["uuid"], typeErr)
	if err != nil {
		return nil, err
	}
	p.UUID = u
	return p, nil
}

// PatchableNames lists the patchable attributes, alphabetically.
func PatchableNames() []string {
	var out []string
	for _, f := range Catalogue {
		if f.Patch {
			out = append(out, f.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Apply patches a copy of p at version v and returns it.
func Apply(p *model.Port, ops []jsonpatch.Op, v microversion.Version) (*model.Port, error) {
	if err := jsonpatch.CheckFields(ops, PatchableNames()); err != nil {
		return nil, err
	}
	for _, op := range ops {
		if f := byName[op.Field()]; !v.AtLeast(f.Since) || !f.Implemented() {
			return nil, errs.NotAcceptable("")
		}
	}
	doc := map[string]any{}
	touched := map[string]bool{}
	for _, op := range ops {
		touched[op.Field()] = true
	}
	for name := range touched {
		doc[name] = jsonpatch.DeepCopy(byName[name].Get(p))
	}
	if err := jsonpatch.Apply(doc, ops); err != nil {
		return nil, err
	}
	out := *p
	out.Extra = copyObj(p.Extra)
	out.LocalLinkConnection = copyObj(p.LocalLinkConnection)
	out.InternalInfo = copyObj(p.InternalInfo)
	for name := range touched {
		if err := byName[name].Set(&out, doc[name]); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

func copyObj(o model.JSONObject) model.JSONObject {
	if o == nil {
		return model.JSONObject{}
	}
	return model.JSONObject(jsonpatch.DeepCopy(map[string]any(o)).(map[string]any))
}

// OutputFields is the selection catalogue for ?fields=.
func OutputFields() []present.Field {
	var out []present.Field
	for _, f := range Catalogue {
		if f.Implemented() {
			out = append(out, present.Field{Name: f.Name, Since: f.Since})
		}
	}
	return out
}

// View says how to render ports.
type View struct {
	Version microversion.Version
	Base    string
	Fields  []string
}

// Render is the JSON object of p at the view's version.
func (vw View) Render(p *model.Port) map[string]any {
	obj := map[string]any{}
	for _, f := range Catalogue {
		if f.Implemented() && vw.Version.AtLeast(f.Since) {
			obj[f.Name] = f.Get(p)
		}
	}
	for _, k := range []string{"extra", "internal_info", "local_link_connection"} {
		if m, ok := obj[k].(map[string]any); ok {
			obj[k] = present.Obj(m)
		}
	}
	obj["links"] = present.Links(vw.Base, "ports/"+p.UUID)
	if vw.Fields != nil {
		return present.Select(obj, vw.Fields)
	}
	return obj
}
