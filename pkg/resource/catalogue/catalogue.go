// Package catalogue is the one description of an API resource's top-level
// attributes (docs/api.md §3): for each, the microversion it appeared at,
// whether a create body or a PATCH may set it, whether lists sort by it,
// how it is read from and written to the model, and how it is shown
// (masked, computed). Create decoding, JSON-PATCH application, ?fields=
// checks, sort-key checks, the stored columns of a selection and both
// representations (a map and the fast encoder) are derived from the rows,
// so a resource package holds only its rows and its own rules.
package catalogue

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/ident"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/present"
)

// Field is one top-level attribute of a resource stored as M.
type Field[M any] struct {
	Name  string
	Since microversion.Version
	// Create and Patch say whether a create body / PATCH path may set it.
	Create, Patch bool
	// Required: a create body without it is refused.
	Required bool
	// Sortable: a stored column clients may sort by. Unsortable names in
	// Catalogue.Unsortable get Ironic's other wording.
	Sortable bool
	// Get and Set are nil for attributes of newer microversions that this
	// service does not store; those can never be negotiated (Max is below
	// them), but a body naming one gets 406 rather than 400.
	Get func(m *M) any
	Set func(m *M, v any) error
	// Text, set for string fields, reads the value without boxing it, so
	// the encoder writes it without an allocation; nil is null.
	Text func(m *M) *string
	// Show, if set, is the value a client of version v sees instead of
	// Get's (a state name as that version knew it).
	Show func(m *M, v microversion.Version) any
	// Masked: the value's secrets are hidden for output
	// (secrets.MaskValue, applied while it is written).
	Masked bool
	// Mask, if set, hides the secrets of a value by a rule of its own.
	Mask func(v any) any
	// Computed: not stored; the view's Computed function supplies the
	// value. Columns are the stored columns a computed field, or a field
	// Get derives from other columns, is read from.
	Computed bool
	Columns  []string
	// Object or List, set for a stored dict or list attribute, reaches its
	// value: such an attribute is never a sort key (Ironic words the
	// refusal differently), and a patch's copy deep-copies it.
	Object func(m *M) *model.JSONObject
	List   func(m *M) *model.StringList
	// Filters are the list query parameters on the attribute.
	Filters []Filter
}

// Implemented reports whether the field is backed by storage.
func (f Field[M]) Implemented() bool { return f.Get != nil }

// SubLink is a collection link a full (unselected) object carries.
type SubLink struct {
	Name  string
	Since microversion.Version
}

// Catalogue is a resource's rows and what its representation adds.
type Catalogue[M any] struct {
	// Resource names the resource in schema errors ("node").
	Resource string
	Fields   []Field[M]
	// Defaults are the fields of a list without ?fields or detail.
	Defaults []string
	// Path is an object's path below /v1, for its links.
	Path func(m *M) string
	// UUID identifies an object in a list's next link.
	UUID func(m *M) string
	// NilObjects: a patch's copy keeps a nil dict nil (nodes) rather than
	// making it {}.
	NilObjects bool
	// NewUUID, if set, is where Decode stores the uuid a create body
	// gives, or a new one.
	NewUUID  func(m *M) *string
	SubLinks []SubLink
	// Unsortable are the dict attributes of newer microversions, which no
	// row stores: refused as sort keys with the stored dicts' wording.
	Unsortable []string
	// SizeHint is about how many bytes a full object takes as JSON, so a
	// page's buffer is allocated once.
	SizeHint int
	// RequiredWhenNull: a null required value is missing too (the volume
	// schemas); required values are checked before any value is set.
	RequiredWhenNull bool
	// Unknown, if set, words the error for create keys the catalogue does
	// not take; it gets them sorted.
	Unknown func(names []string) error
	// CheckFields, if set, replaces the ?fields check.
	CheckFields func(fields []string, v microversion.Version) error

	byName     map[string]int
	filters    []Filter
	unsortable []string
	// plans caches the encoder's plans; a map under a lock rather than a
	// sync.Map, whose interface keys would cost an allocation a lookup.
	mu    sync.RWMutex
	plans map[planKey]*plan
}

// New indexes a catalogue; call it once, at package initialisation.
func New[M any](c *Catalogue[M]) *Catalogue[M] {
	c.byName = make(map[string]int, len(c.Fields))
	c.unsortable = slices.Clone(c.Unsortable)
	for i, f := range c.Fields {
		c.byName[f.Name] = i
		c.filters = append(c.filters, f.resolvedFilters()...)
		if f.Object != nil || f.List != nil {
			c.unsortable = append(c.unsortable, f.Name)
		}
	}
	c.plans = map[planKey]*plan{}
	return c
}

// Lookup finds a field by name.
func (c *Catalogue[M]) Lookup(name string) (*Field[M], bool) {
	i, ok := c.byName[name]
	if !ok {
		return nil, false
	}
	return &c.Fields[i], true
}

// PatchableNames lists the patchable attributes in the order Ironic's
// error message shows them (alphabetical).
func (c *Catalogue[M]) PatchableNames() []string {
	var out []string
	for _, f := range c.Fields {
		if f.Patch {
			out = append(out, f.Name)
		}
	}
	sort.Strings(out)
	return out
}

// OutputFields is the selection catalogue for ?fields=.
func (c *Catalogue[M]) OutputFields() []present.Field {
	out := make([]present.Field, 0, len(c.Fields))
	for _, f := range c.Fields {
		if f.Implemented() || f.Computed {
			out = append(out, present.Field{Name: f.Name, Since: f.Since})
		}
	}
	return out
}

// CheckOutputFields validates a ?fields= list at version v.
func (c *Catalogue[M]) CheckOutputFields(fields []string, v microversion.Version) error {
	if c.CheckFields != nil {
		return c.CheckFields(fields, v)
	}
	return present.CheckFields(fields, c.OutputFields(), v)
}

// CheckSortKey validates sort_key at version v; "id" is always allowed.
func (c *Catalogue[M]) CheckSortKey(key string, v microversion.Version) error {
	if key == "id" {
		return nil
	}
	if slices.Contains(c.unsortable, key) {
		return errs.InvalidParameterValue("The sort_key value %s is an invalid field for sorting", key)
	}
	f, known := c.Lookup(key)
	if !known || !f.Sortable || !f.Implemented() {
		return errs.InvalidParameterValue("The sort_key value \"%s\" is an invalid field for sorting", key)
	}
	if !v.AtLeast(f.Since) {
		return errs.NotAcceptable("")
	}
	return nil
}

// Columns are the stored columns needed to render fields (nil: all): the
// uuid, which links need, each stored field and what computed fields
// derive from.
func (c *Catalogue[M]) Columns(fields []string) []string {
	if fields == nil {
		return nil
	}
	cols := []string{"uuid"}
	add := func(col string) {
		if !slices.Contains(cols, col) {
			cols = append(cols, col)
		}
	}
	for _, name := range fields {
		f, ok := c.Lookup(name)
		switch {
		case !ok:
		case len(f.Columns) > 0:
			for _, col := range f.Columns {
				add(col)
			}
		default:
			add(name)
		}
	}
	return cols
}

func (c *Catalogue[M]) schemaErr(format string, args ...any) error {
	return errs.New(errs.KindInvalid, "Schema error for "+c.Resource+": "+format, args...)
}

// Decode checks a create body at version v and sets its values on m, in
// catalogue order: keys the catalogue does not take for creation are a
// 400, values of newer (or unstored) fields a 406, a missing required
// field a 400. Then the uuid is set if the catalogue says where.
func (c *Catalogue[M]) Decode(m *M, body map[string]any, v microversion.Version) error {
	var unknown []string
	for k := range body {
		if f, ok := c.Lookup(k); !ok || !f.Create {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		if c.Unknown != nil {
			return c.Unknown(unknown)
		}
		return c.schemaErr("Additional properties are not allowed ('%s' was unexpected)", strings.Join(unknown, "', '"))
	}
	for k, val := range body {
		if f, _ := c.Lookup(k); val != nil && (!v.AtLeast(f.Since) || !f.Implemented()) {
			return errs.NotAcceptable("")
		}
	}
	if err := c.set(m, body); err != nil {
		return err
	}
	if c.NewUUID == nil {
		return nil
	}
	u, err := ident.CreateUUID(body["uuid"], TypeErrors(c.Resource))
	if err != nil {
		return err
	}
	*c.NewUUID(m) = u
	return nil
}

// set checks that doc has every required value and sets its values on m
// in catalogue order.
func (c *Catalogue[M]) set(m *M, doc map[string]any) error {
	for _, f := range c.Fields {
		if val, ok := doc[f.Name]; f.Required && (!ok || (c.RequiredWhenNull && val == nil)) {
			return c.schemaErr("'%s' is a required property", f.Name)
		}
	}
	for _, f := range c.Fields {
		val, ok := doc[f.Name]
		if !ok || f.Set == nil {
			continue
		}
		if err := f.Set(m, val); err != nil {
			return err
		}
	}
	return nil
}
