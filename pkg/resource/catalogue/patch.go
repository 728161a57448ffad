package catalogue

import (
	"slices"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
)

// CheckPatch enforces the path-level rules of PATCH (docs/api.md §3.8):
// every op targets a patchable attribute known at version v.
func (c *Catalogue[M]) CheckPatch(ops []jsonpatch.Op, v microversion.Version) error {
	if err := jsonpatch.CheckFields(ops, c.PatchableNames()); err != nil {
		return err
	}
	for _, op := range ops {
		if f, _ := c.Lookup(op.Field()); !v.AtLeast(f.Since) || !f.Implemented() {
			return errs.NotAcceptable("")
		}
	}
	return nil
}

// Patch checks ops at version v and applies them as Apply does.
func (c *Catalogue[M]) Patch(m *M, ops []jsonpatch.Op, v microversion.Version) (*M, error) {
	if err := c.CheckPatch(ops, v); err != nil {
		return nil, err
	}
	return c.Apply(m, ops)
}

// Apply patches a copy of m and returns it; m itself
// is not changed. Each touched attribute is read into a document, the
// ops are applied to it and the results are set again, in catalogue
// order, with the create rules.
func (c *Catalogue[M]) Apply(m *M, ops []jsonpatch.Op) (*M, error) {
	doc := map[string]any{}
	for _, op := range ops {
		name := op.Field()
		if _, seen := doc[name]; !seen {
			f, _ := c.Lookup(name)
			doc[name] = jsonpatch.DeepCopy(f.Get(m))
		}
	}
	touched := make(map[string]bool, len(doc))
	for name := range doc {
		touched[name] = true
	}
	if err := jsonpatch.Apply(doc, ops); err != nil {
		return nil, err
	}
	out := c.copy(m)
	for i := range c.Fields {
		if f := &c.Fields[i]; touched[f.Name] {
			if err := f.Set(out, doc[f.Name]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// ApplyWhole applies ops to a document of every patchable attribute of m
// and sets all of it on a copy of m, as a create body would be
// set: a removed required attribute is missing. The volume API validates
// a patched object as a whole.
func (c *Catalogue[M]) ApplyWhole(m *M, ops []jsonpatch.Op) (*M, error) {
	if err := jsonpatch.CheckFields(ops, c.PatchableNames()); err != nil {
		return nil, err
	}
	doc := map[string]any{}
	for _, f := range c.Fields {
		if f.Patch && f.Implemented() {
			doc[f.Name] = jsonpatch.DeepCopy(f.Get(m))
		}
	}
	if err := jsonpatch.Apply(doc, ops); err != nil {
		return nil, err
	}
	out := c.copy(m)
	if err := c.set(out, doc); err != nil {
		return nil, err
	}
	return out, nil
}

// copy is the copy of m a patch writes into.
func (c *Catalogue[M]) copy(m *M) *M {
	out := *m
	for _, f := range c.Fields {
		switch {
		case f.Object != nil && (*f.Object(m) != nil || !c.NilObjects):
			*f.Object(&out) = CopyObject(*f.Object(m))
		case f.List != nil && *f.List(m) != nil:
			*f.List(&out) = slices.Clone(*f.List(m))
		}
	}
	return &out
}
