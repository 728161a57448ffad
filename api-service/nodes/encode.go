package nodes

import (
	"slices"
	"sort"

	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/api-service/present"
	"github.com/ferricbm/ferric/pkg/model"
)

// The collection links Render adds to a full (unselected) object, with the
// version each appears at.
var subLinks = []struct {
	name  string
	since microversion.Version
}{
	{"ports", microversion.Min},
	{"states", microversion.StatesLink},
	{"portgroups", microversion.PortgroupLinks},
	{"volume", microversion.VolumeAPI},
}

// outputKey is one key Render can emit: a catalogue field, "links", or a
// collection link.
type outputKey struct {
	name  string
	field *Field // nil for links
	since microversion.Version
	// sub: a collection link, only in full objects.
	sub bool
}

// outputKeys is every key Render can emit in the order encoding/json
// writes a map's keys (sorted), so AppendJSON can write the same bytes
// without building and sorting a map per node.
var outputKeys = func() []outputKey {
	var out []outputKey
	for i := range Catalogue {
		if Catalogue[i].Implemented() {
			out = append(out, outputKey{name: Catalogue[i].Name, field: &Catalogue[i], since: Catalogue[i].Since})
		}
	}
	out = append(out, outputKey{name: "links", since: microversion.Min})
	for _, l := range subLinks {
		out = append(out, outputKey{name: l.name, since: l.since, sub: true})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}()

// AppendJSON appends the JSON encoding of vw.Render(n) to buf: byte for
// byte what encoding/json writes for that map, built without the map.
func (vw View) AppendJSON(buf []byte, n *model.Node) ([]byte, error) {
	buf = append(buf, '{')
	first := true
	for i := range outputKeys {
		k := &outputKeys[i]
		if !vw.Version.AtLeast(k.since) {
			continue
		}
		if vw.Fields != nil && (k.sub || (k.field != nil && !slices.Contains(vw.Fields, k.name))) {
			continue
		}
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = present.AppendString(buf, k.name)
		buf = append(buf, ':')
		var err error
		if buf, err = vw.appendValue(buf, k, n); err != nil {
			return nil, err
		}
	}
	return append(buf, '}'), nil
}

func (vw View) appendValue(buf []byte, k *outputKey, n *model.Node) ([]byte, error) {
	if k.field == nil {
		path := "nodes/" + n.UUID
		if k.sub {
			path = "nodes/" + n.UUID + "/" + k.name
		}
		return present.AppendLinks(buf, vw.Base, path), nil
	}
	var v any
	switch k.name {
	case "provision_state":
		v = ProvisionStateAt(n.ProvisionState, vw.Version)
	case "conductor":
		v = vw.conductorOf(n)
	default:
		// last_error goes through renderValue, which masks it.
		if k.field.Text != nil && k.name != "last_error" {
			if p := k.field.Text(n); p != nil {
				return present.AppendString(buf, *p), nil
			}
			return append(buf, "null"...), nil
		}
		raw := k.field.Get(n)
		switch t := raw.(type) {
		case map[string]any:
			if len(t) == 0 {
				// Most dict fields: {} whatever the masking.
				return append(buf, "{}"...), nil
			}
		case []string:
			if len(t) == 0 {
				return append(buf, "[]"...), nil
			}
		}
		// The masking and {} rules are Render's own, applied to this one
		// value.
		v = renderValue(k.name, raw, n)
	}
	switch t := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case string:
		return present.AppendString(buf, t), nil
	case bool:
		if t {
			return append(buf, "true"...), nil
		}
		return append(buf, "false"...), nil
	}
	return present.AppendValue(buf, v)
}
