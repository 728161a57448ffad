// Package chassis holds the chassis resource's API rules that do not need
// HTTP: the field catalogue, create body decoding, JSON-PATCH application
// and representation.
package chassis

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/ferricbm/ferric/api-service/ident"
	"github.com/ferricbm/ferric/api-service/jsonpatch"
	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/api-service/present"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// Field is one top-level chassis attribute; every one exists since 1.1.
type Field struct {
	Name          string
	Create, Patch bool
	Sortable      bool
	Get           func(c *model.Chassis) any
	Set           func(c *model.Chassis, v any) error
}

// MaxDescription is the longest description a chassis may have.
const MaxDescription = 255

func typeErr(name string, v any, want string) error {
	b, _ := json.Marshal(v)
	return errs.New(errs.KindInvalid, "Schema error for chassis: %s is not of type '%s' (field '%s')", b, want, name)
}

func setDescription(c *model.Chassis, v any) error {
	if v == nil {
		c.Description = nil
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return typeErr("description", v, "string")
	}
	if len(s) > MaxDescription {
		return errs.New(errs.KindInvalid, "Schema error for chassis: 'description' is too long (maximum %d characters)", MaxDescription)
	}
	c.Description = &s
	return nil
}

func setExtra(c *model.Chassis, v any) error {
	if v == nil {
		c.Extra = model.JSONObject{}
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return typeErr("extra", v, "object")
	}
	c.Extra = model.JSONObject(m)
	return nil
}

// Catalogue lists every chassis attribute.
var Catalogue = []Field{
	{Name: "uuid", Create: true, Sortable: true, Get: func(c *model.Chassis) any { return c.UUID }},
	{Name: "description", Create: true, Patch: true, Sortable: true,
		Get: func(c *model.Chassis) any { return present.Str(c.Description) }, Set: setDescription},
	{Name: "extra", Create: true, Patch: true,
		Get: func(c *model.Chassis) any { return present.Obj(c.Extra) }, Set: setExtra},
	{Name: "created_at", Sortable: true, Get: func(c *model.Chassis) any { return present.Time(&c.CreatedAt) }},
	{Name: "updated_at", Sortable: true, Get: func(c *model.Chassis) any { return present.Time(c.UpdatedAt) }},
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

// DefaultListFields is the short field set of a non-detail chassis list.
var DefaultListFields = []string{"uuid", "description"}

// OutputFields is the selection catalogue for ?fields=.
func OutputFields() []present.Field {
	out := make([]present.Field, 0, len(Catalogue))
	for _, f := range Catalogue {
		out = append(out, present.Field{Name: f.Name, Since: microversion.Min})
	}
	return out
}

// DecodeCreate turns a create body into an unsaved chassis.
func DecodeCreate(body map[string]any) (*model.Chassis, error) {
	var unknown []string
	for k := range body {
		if f, ok := byName[k]; !ok || !f.Create {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, errs.New(errs.KindInvalid, "Schema error for chassis: Additional properties are not allowed ('%s' was unexpected)", strings.Join(unknown, "', '"))
	}
	c := &model.Chassis{UUID: ident.NewUUID(), Extra: model.JSONObject{}}
	for _, f := range Catalogue {
		if val, ok := body[f.Name]; ok && f.Set != nil {
			if err := f.Set(c, val); err != nil {
				return nil, err
			}
		}
	}
	u, err := ident.CreateUUID(body["uuid"], typeErr)
	if err != nil {
		return nil, err
	}
	c.UUID = u
	return c, nil
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

// Apply patches a copy of c and returns it; c itself is not changed.
func Apply(c *model.Chassis, ops []jsonpatch.Op) (*model.Chassis, error) {
	if err := jsonpatch.CheckFields(ops, PatchableNames()); err != nil {
		return nil, err
	}
	doc := map[string]any{}
	touched := map[string]bool{}
	for _, op := range ops {
		touched[op.Field()] = true
	}
	for name := range touched {
		doc[name] = jsonpatch.DeepCopy(byName[name].Get(c))
	}
	if err := jsonpatch.Apply(doc, ops); err != nil {
		return nil, err
	}
	out := *c
	out.Extra = model.JSONObject(jsonpatch.DeepCopy(map[string]any(present.Obj(c.Extra))).(map[string]any))
	for name := range touched {
		if err := byName[name].Set(&out, doc[name]); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// View says how to render chassis.
type View struct {
	Base string
	// Fields limits the output to these attributes (plus links); nil
	// renders the full object with its nodes link.
	Fields []string
}

// Render is the JSON object of c.
func (vw View) Render(c *model.Chassis) map[string]any {
	obj := make(map[string]any, len(Catalogue)+2)
	for _, f := range Catalogue {
		obj[f.Name] = f.Get(c)
	}
	obj["links"] = present.Links(vw.Base, "chassis/"+c.UUID)
	if vw.Fields != nil {
		return present.Select(obj, vw.Fields)
	}
	obj["nodes"] = present.Links(vw.Base, "chassis/"+c.UUID+"/nodes")
	return obj
}
