package volume

import (
	"slices"
	"sort"
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/present"
)

// Resource is what the connector and target endpoints share.
type Resource struct {
	// Singular names the resource in error texts ("connector").
	Singular string
	// Collection is the list key and URL segment ("connectors").
	Collection string
	// Path is the collection's path below /v1.
	Path string
	// Fields are the names ?fields= accepts, sorted.
	Fields []string
	// DefaultFields are those of a list without fields or detail.
	DefaultFields []string
	columns       func(fields []string) []string
}

// CheckFields validates a ?fields= list; an unknown name is a schema
// error listing the accepted ones.
func (r Resource) CheckFields(fields []string) error {
	for _, f := range fields {
		if !slices.Contains(r.Fields, f) {
			return errs.New(errs.KindInvalid, "Schema error for fields: '%s' is not one of ['%s']", f, strings.Join(r.Fields, "', '"))
		}
	}
	return nil
}

// Columns are the stored columns needed to render fields (nil: all).
// node_uuid is read by the store's join; links needs only the uuid.
func (r Resource) Columns(fields []string) []string { return r.columns(fields) }

// resourceOf is one volume resource: its catalogue and its endpoints.
type resourceOf[M any] struct {
	cat *catalogue.Catalogue[M]
	res Resource
}

// newResource completes the catalogue of a volume resource with what the two
// share: Ironic's wording for unknown keys and field names, the create
// schema's way of checking required values, links.
func newResource[M any](c *catalogue.Catalogue[M], collection string, uuid func(*M) string) resourceOf[M] {
	res := Resource{Singular: c.Resource, Collection: collection, Path: "volume/" + collection,
		Fields: []string{"links"}, DefaultFields: c.Defaults, columns: c.Columns}
	for _, f := range c.Fields {
		res.Fields = append(res.Fields, f.Name)
	}
	sort.Strings(res.Fields)
	c.UUID = uuid
	c.Path = func(m *M) string { return res.Path + "/" + uuid(m) }
	c.RequiredWhenNull = true
	c.Unknown = func(names []string) error {
		return schemaErr(c.Resource, "Additional properties are not allowed ('%s' %s unexpected)", strings.Join(names, "', '"), wasWere(len(names)))
	}
	c.CheckFields = func(fields []string, _ microversion.Version) error { return res.CheckFields(fields) }
	return resourceOf[M]{cat: catalogue.New(c), res: res}
}

// decode sets a create body on m and returns its uuid (a new one when
// absent) and node_uuid.
func decode[M any](c *catalogue.Catalogue[M], m *M, body map[string]any) (uuid, nodeUUID string, err error) {
	if err := c.Decode(m, body, microversion.VolumeAPI); err != nil {
		return "", "", err
	}
	if uuid, err = uuidOf(body); err != nil {
		return "", "", err
	}
	nodeUUID, err = nodeUUIDOf(body, true)
	return uuid, nodeUUID, err
}

// apply patches a copy of m, validates the result as
// a create document would be and returns it with the node_uuid it names.
func apply[M any](c *catalogue.Catalogue[M], m *M, ops []jsonpatch.Op, nodeUUID func(*M) *string) (*M, error) {
	out, err := c.ApplyWhole(m, ops)
	if err != nil {
		return nil, err
	}
	u, err := nodeUUIDOf(map[string]any{"node_uuid": *nodeUUID(out)}, false)
	if err != nil {
		return nil, err
	}
	*nodeUUID(out) = u
	return out, nil
}

// view is how a volume object is shown: volume objects do not change
// with the microversion.
func view[M any](base string, fields []string) catalogue.View[M] {
	return catalogue.View[M]{Version: microversion.VolumeAPI, Base: base, Fields: fields}
}

// str is the row of a string property stored at ptr.
func str[M any](resource string, p prop, ptr func(*M) *string) catalogue.Field[M] {
	f := row(resource, p, func(m *M) any { return *ptr(m) }, func(m *M, v any) { *ptr(m), _ = v.(string) })
	f.Text = ptr
	return f
}

// byNode gives the node_uuid row the list filter ?node=, a node's UUID or
// name.
func byNode[M any](f catalogue.Field[M]) catalogue.Field[M] {
	f.Filters = []catalogue.Filter{{Param: "node", Query: catalogue.QueryNode, Column: "node_id"}}
	return f
}

// obj is the row of an object property stored at ptr; null is {}.
func obj[M any](resource string, p prop, ptr func(*M) *model.JSONObject) catalogue.Field[M] {
	f := row(resource, p, func(m *M) any { return map[string]any(present.Obj(*ptr(m))) },
		func(m *M, v any) { *ptr(m) = model.JSONObject(object(v)) })
	f.Object = ptr
	return f
}

// row is the catalogue row of a schema property: Set checks a value as
// the schema does, then stores it.
func row[M any](resource string, p prop, get func(*M) any, set func(*M, any)) catalogue.Field[M] {
	return catalogue.Field[M]{Name: p.name, Since: microversion.VolumeAPI, Create: true, Patch: p.name != "uuid",
		Required: p.required, Sortable: true, Get: get,
		Set: func(m *M, v any) error {
			if v != nil {
				if err := checkValue(resource, p, v); err != nil {
					return err
				}
			}
			set(m, v)
			return nil
		}}
}

// times are the rows of the timestamps every volume object has.
func times[M any](created func(*M) any, updated func(*M) any) []catalogue.Field[M] {
	return []catalogue.Field[M]{
		{Name: "created_at", Since: microversion.VolumeAPI, Sortable: true, Get: created},
		{Name: "updated_at", Since: microversion.VolumeAPI, Sortable: true, Get: updated},
	}
}
