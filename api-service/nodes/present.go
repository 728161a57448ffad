package nodes

import (
	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/api-service/present"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/secrets"
	"github.com/ferricbm/ferric/pkg/states"
)

// DefaultListFields is the short field set of a non-detail node list.
var DefaultListFields = []string{"instance_uuid", "maintenance", "power_state", "provision_state", "uuid", "name"}

// View says how to render nodes.
type View struct {
	Version microversion.Version
	// Base is the public URL prefix of links.
	Base string
	// Fields limits the output to these attributes (plus links); nil
	// renders the full object with its sub-collection links.
	Fields []string
	// Conductor names the conductor managing a node (the "conductor"
	// field); nil renders null.
	Conductor func(n *model.Node) *string
}

func (vw View) conductorOf(n *model.Node) any {
	if vw.Conductor == nil {
		return nil
	}
	return present.Str(vw.Conductor(n))
}

// OutputFields is the selection catalogue for ?fields=.
func OutputFields() []present.Field {
	out := make([]present.Field, 0, len(Catalogue))
	for _, f := range Catalogue {
		if f.Implemented() {
			out = append(out, present.Field{Name: f.Name, Since: f.Since})
		}
	}
	return out
}

// Render is the JSON object of n at the view's version: newer attributes
// are omitted, secrets masked, dict fields {} and state names as that
// version knew them.
func (vw View) Render(n *model.Node) map[string]any {
	obj := make(map[string]any, len(Catalogue)+4)
	for _, f := range Catalogue {
		if f.Implemented() && vw.Version.AtLeast(f.Since) {
			obj[f.Name] = renderValue(f.Name, f.Get(n), n)
		}
	}
	obj["provision_state"] = ProvisionStateAt(n.ProvisionState, vw.Version)
	if vw.Version.AtLeast(microversion.ConductorField) {
		obj["conductor"] = vw.conductorOf(n)
	}
	obj["links"] = present.Links(vw.Base, "nodes/"+n.UUID)
	if vw.Fields != nil {
		return present.Select(obj, vw.Fields)
	}
	obj["ports"] = present.Links(vw.Base, "nodes/"+n.UUID+"/ports")
	if vw.Version.AtLeast(microversion.StatesLink) {
		obj["states"] = present.Links(vw.Base, "nodes/"+n.UUID+"/states")
	}
	if vw.Version.AtLeast(microversion.PortgroupLinks) {
		obj["portgroups"] = present.Links(vw.Base, "nodes/"+n.UUID+"/portgroups")
	}
	if vw.Version.AtLeast(microversion.VolumeAPI) {
		obj["volume"] = present.Links(vw.Base, "nodes/"+n.UUID+"/volume")
	}
	return obj
}

// renderValue applies the representation rules to one field's value:
// dict fields are {} when empty, secrets masked.
func renderValue(name string, val any, n *model.Node) any {
	if m, ok := val.(map[string]any); ok {
		m = present.Obj(m)
		switch name {
		case "driver_info", "driver_internal_info":
			return secrets.Mask(m)
		case "instance_info":
			return secrets.MaskInstanceInfo(m)
		}
		return m
	}
	if name == "last_error" && n.LastError != nil {
		return secrets.MaskString(*n.LastError)
	}
	return val
}

// ProvisionStateAt is the provision state as a client of version v knows
// it: "available" was null before 1.2, "inspect wait" was "inspecting"
// before 1.39.
func ProvisionStateAt(s *string, v microversion.Version) any {
	if s == nil {
		return nil
	}
	switch {
	case *s == states.Available && !v.AtLeast(microversion.AvailableShown):
		return nil
	case *s == states.InspectWait && !v.AtLeast(microversion.InspectWaitShown):
		return states.Inspecting
	}
	return *s
}
