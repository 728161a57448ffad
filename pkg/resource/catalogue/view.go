package catalogue

import (
	"slices"
	"strconv"
	"strings"

	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/present"
	"github.com/ferricbm/ferric/pkg/secrets"
)

// View says how one request sees a resource.
type View[M any] struct {
	Version microversion.Version
	// Base is the public URL prefix of links.
	Base string
	// Fields limits the output to these attributes (plus links); nil
	// renders the full object with its collection links.
	Fields []string
	// Computed supplies the value of a computed field; nil renders null.
	Computed func(name string, m *M) any
}

func (vw *View[M]) computed(name string, m *M) any {
	if vw.Computed == nil {
		return nil
	}
	return vw.Computed(name, m)
}

// value is what Render shows for f: dict fields are {} when empty, never
// null, and secrets are masked.
func (vw *View[M]) value(f *Field[M], m *M) any {
	switch {
	case f.Computed:
		return vw.computed(f.Name, m)
	case f.Show != nil:
		return f.Show(m, vw.Version)
	}
	v := f.Get(m)
	switch {
	case f.Masked:
		v = secrets.MaskValue(v)
	case f.Mask != nil:
		v = f.Mask(v)
	}
	if obj, ok := v.(map[string]any); ok {
		return present.Obj(obj)
	}
	return v
}

// Render is the JSON object of m as the view sees it: attributes newer
// than its version are left out.
func (c *Catalogue[M]) Render(vw View[M], m *M) map[string]any {
	obj := make(map[string]any, len(c.Fields)+len(c.SubLinks)+1)
	for i := range c.Fields {
		f := &c.Fields[i]
		if vw.Version.AtLeast(f.Since) && (f.Implemented() || f.Computed) {
			obj[f.Name] = vw.value(f, m)
		}
	}
	path := c.Path(m)
	obj["links"] = present.Links(vw.Base, path)
	if vw.Fields != nil {
		return present.Select(obj, vw.Fields)
	}
	for _, l := range c.SubLinks {
		if vw.Version.AtLeast(l.Since) {
			obj[l.Name] = present.Links(vw.Base, path+"/"+l.Name)
		}
	}
	return obj
}

// step is one key of an encoding plan.
type step struct {
	// key is `,"name":`; the first key of an object drops the comma.
	key   string
	field int // index in Fields; -1 for links
	sub   string
}

// plan is the keys a view writes, in encoding/json's order for a map
// (sorted), computed once per version and field selection so that
// encoding an object neither builds nor sorts a map.
type plan struct{ steps []step }

// maxPlans bounds the plan cache: field selections are the client's
// choice, and beyond this many each further one is planned per request.
const maxPlans = 512

// planKey names a plan; all is a full object (nil fields).
type planKey struct {
	v      microversion.Version
	fields string
	all    bool
}

func (c *Catalogue[M]) plan(v microversion.Version, fields []string) *plan {
	key := planKey{v: v, fields: strings.Join(fields, ","), all: fields == nil}
	c.mu.RLock()
	p, ok := c.plans[key]
	c.mu.RUnlock()
	if ok {
		return p
	}
	p = c.newPlan(v, fields)
	c.mu.Lock()
	if len(c.plans) < maxPlans {
		c.plans[key] = p
	}
	c.mu.Unlock()
	return p
}

func (c *Catalogue[M]) newPlan(v microversion.Version, fields []string) *plan {
	var steps []step
	for i := range c.Fields {
		f := &c.Fields[i]
		if !v.AtLeast(f.Since) || !(f.Implemented() || f.Computed) || (fields != nil && !slices.Contains(fields, f.Name)) {
			continue
		}
		steps = append(steps, step{key: `,"` + f.Name + `":`, field: i})
	}
	steps = append(steps, step{key: `,"links":`, field: -1})
	if fields == nil {
		for _, l := range c.SubLinks {
			if v.AtLeast(l.Since) {
				steps = append(steps, step{key: `,"` + l.Name + `":`, field: -1, sub: l.Name})
			}
		}
	}
	slices.SortFunc(steps, func(a, b step) int { return strings.Compare(a.key, b.key) })
	return &plan{steps: steps}
}

// Encoder writes the objects of one view; a list makes one per page.
type Encoder[M any] struct {
	c    *Catalogue[M]
	vw   View[M]
	plan *plan
}

// Encoder is the encoder of view vw.
func (c *Catalogue[M]) Encoder(vw *View[M]) Encoder[M] {
	return Encoder[M]{c: c, vw: *vw, plan: c.plan(vw.Version, vw.Fields)}
}

// AppendJSON appends the JSON encoding of c.Render(vw, m) to buf: byte
// for byte what encoding/json writes for that map, built without it.
func (c *Catalogue[M]) AppendJSON(buf []byte, vw *View[M], m *M) ([]byte, error) {
	return c.Encoder(vw).Append(buf, m)
}

// Append appends the JSON encoding of m to buf.
func (e Encoder[M]) Append(buf []byte, m *M) ([]byte, error) {
	c, p, vw := e.c, e.plan, &e.vw
	path := c.Path(m)
	buf = append(buf, '{')
	var err error
	for i := range p.steps {
		st := &p.steps[i]
		if i == 0 {
			buf = append(buf, st.key[1:]...)
		} else {
			buf = append(buf, st.key...)
		}
		switch {
		case st.field >= 0:
			buf, err = vw.appendField(buf, &c.Fields[st.field], m)
			if err != nil {
				return nil, err
			}
		case st.sub != "":
			buf = present.AppendLinks(buf, vw.Base, path+"/"+st.sub)
		default:
			buf = present.AppendLinks(buf, vw.Base, path)
		}
	}
	return append(buf, '}'), nil
}

func (vw *View[M]) appendField(buf []byte, f *Field[M], m *M) ([]byte, error) {
	if f.Text != nil && !f.Masked && f.Mask == nil && f.Show == nil {
		if s := f.Text(m); s != nil {
			return present.AppendString(buf, *s), nil
		}
		return append(buf, "null"...), nil
	}
	if f.Computed || f.Show != nil {
		return appendAny(buf, vw.value(f, m))
	}
	v := f.Get(m)
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			// Masked or not, an empty dict is {}.
			return append(buf, "{}"...), nil
		}
	case []string:
		if len(t) == 0 {
			return append(buf, "[]"...), nil
		}
	}
	switch {
	case f.Masked:
		return present.AppendMasked(buf, v)
	case f.Mask != nil:
		v = f.Mask(v)
	}
	return appendAny(buf, v)
}

// appendAny writes the scalar values of the rows directly and the rest
// as encoding/json does.
func appendAny(buf []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case string:
		return present.AppendString(buf, t), nil
	case bool:
		return strconv.AppendBool(buf, t), nil
	case int:
		return strconv.AppendInt(buf, int64(t), 10), nil
	}
	return present.AppendValue(buf, v)
}
