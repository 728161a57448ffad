package nodes

import (
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/present"
	"github.com/ferricbm/ferric/pkg/states"
)

// DefaultListFields is the short field set of a non-detail node list.
var DefaultListFields = Resource.Defaults

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

// Catalogue is the view as the catalogue's encoder takes it.
func (vw View) Catalogue() catalogue.View[model.Node] {
	cv := catalogue.View[model.Node]{Version: vw.Version, Base: vw.Base, Fields: vw.Fields}
	if vw.Conductor != nil {
		cv.Computed = func(_ string, n *model.Node) any { return present.Str(vw.Conductor(n)) }
	}
	return cv
}

// Render is the JSON object of n at the view's version: newer attributes
// are omitted, secrets masked, dict fields {} and state names as that
// version knew them.
func (vw View) Render(n *model.Node) map[string]any { return Resource.Render(vw.Catalogue(), n) }

// AppendJSON appends the JSON encoding of vw.Render(n) to buf.
func (vw View) AppendJSON(buf []byte, n *model.Node) ([]byte, error) {
	cv := vw.Catalogue()
	return Resource.AppendJSON(buf, &cv, n)
}

// ProvisionStateAt is the provision state as a client of version v knows
// it: "available" was null before 1.2, "inspect wait" was "inspecting"
// before 1.39.
func ProvisionStateAt(s *string, v microversion.Version) any {
	if s == nil {
		return nil
	}
	switch {
	case states.State(*s) == states.Available && !v.AtLeast(microversion.AvailableShown):
		return nil
	case states.State(*s) == states.InspectWait && !v.AtLeast(microversion.InspectWaitShown):
		return string(states.Inspecting)
	}
	return *s
}

// OutputFields is the selection catalogue for ?fields=.
func OutputFields() []present.Field { return Resource.OutputFields() }
