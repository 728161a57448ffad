// Package jsonpatch decodes and applies the RFC 6902 subset the Bare Metal
// API accepts on PATCH (docs/api.md §3.8): add, replace and remove, with paths of
// word characters and hyphens only.
package jsonpatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
)

// Op is one patch operation.
type Op struct {
	Op    string
	Path  string
	Value any
	// HasValue distinguishes an explicit "value": null from no value.
	HasValue bool
}

const (
	OpAdd     = "add"
	OpReplace = "replace"
	OpRemove  = "remove"
)

var pathPattern = regexp.MustCompile(`^(/[A-Za-z0-9_-]+)+$`)

// Decode parses a patch document. Any structural problem is a 400.
func Decode(body []byte) ([]Op, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, errs.New(errs.KindInvalid, "Invalid JSON in request body: %s", jsonReason(err))
	}
	if dec.More() {
		return nil, errs.New(errs.KindInvalid, "Invalid JSON in request body: trailing data after the patch document")
	}
	items, ok := raw.([]any)
	if !ok {
		return nil, errs.New(errs.KindInvalid, "Schema error for patch: the patch must be a JSON array of operations")
	}
	ops := make([]Op, 0, len(items))
	for i, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			return nil, errs.New(errs.KindInvalid, "Schema error for patch: item %d is not an object", i)
		}
		op, err := decodeOp(obj)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func decodeOp(obj map[string]any) (Op, error) {
	var extra []string
	for k := range obj {
		if k != "op" && k != "path" && k != "value" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return Op{}, errs.New(errs.KindInvalid, "Schema error for patch: Additional properties are not allowed ('%s' was unexpected)", strings.Join(extra, "', '"))
	}
	for _, k := range []string{"op", "path"} {
		if _, ok := obj[k]; !ok {
			return Op{}, errs.New(errs.KindInvalid, "Schema error for patch: '%s' is a required property", k)
		}
	}
	name, ok := obj["op"].(string)
	if !ok || (name != OpAdd && name != OpReplace && name != OpRemove) {
		return Op{}, errs.New(errs.KindInvalid, "Schema error for patch: %s is not one of ['add', 'replace', 'remove']", quote(obj["op"]))
	}
	path, ok := obj["path"].(string)
	if !ok || !pathPattern.MatchString(path) {
		return Op{}, errs.New(errs.KindInvalid, "Schema error for patch: %s does not match '^(/[\\\\w-]+)+$'", quote(obj["path"]))
	}
	value, has := obj["value"]
	op := Op{Op: name, Path: path, Value: value, HasValue: has}
	if name != OpRemove && !has {
		return Op{}, op.fail("The operation does not contain a 'value' member")
	}
	if name == OpRemove {
		op.Value, op.HasValue = nil, false
	}
	return op, nil
}

func quote(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "value"
	}
	return string(b)
}

func jsonReason(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at offset %d", se.Error(), se.Offset)
	}
	return err.Error()
}

// Segments are the path's components.
func (o Op) Segments() []string { return strings.Split(o.Path, "/")[1:] }

// Field is the top-level attribute the op touches.
func (o Op) Field() string { return o.Segments()[0] }

func (o Op) String() string {
	m := map[string]any{"op": o.Op, "path": o.Path}
	if o.HasValue {
		m["value"] = o.Value
	}
	return quote(m)
}

func (o Op) fail(format string, args ...any) *errs.Error {
	return errs.New(errs.KindPatchError, "Couldn't apply patch '%s'. Reason: %s", o, fmt.Sprintf(format, args...))
}

// Apply runs ops in order against doc (the resource as a JSON object) and
// changes doc in place. Removing a top-level attribute sets it to null: the
// resource then treats it as cleared. On error doc may be partly changed;
// callers apply to a copy.
func Apply(doc map[string]any, ops []Op) error {
	for _, op := range ops {
		if err := applyOne(doc, op); err != nil {
			return err
		}
	}
	return nil
}

func applyOne(doc map[string]any, op Op) error {
	segs := op.Segments()
	if len(segs) == 1 {
		key := segs[0]
		if _, ok := doc[key]; !ok {
			if op.Op == OpAdd {
				return op.fail("Adding a new attribute (/%s) to the root of the resource is not allowed", key)
			}
			return op.fail("can't remove or replace a non-existent object '%s'", key)
		}
		doc[key] = op.Value
		return nil
	}
	var parent any = doc
	for _, s := range segs[:len(segs)-1] {
		child, ok := lookup(parent, s)
		if !ok {
			return op.fail("member '%s' not found in %s", s, op.Path)
		}
		parent = child
	}
	last := segs[len(segs)-1]
	switch p := parent.(type) {
	case map[string]any:
		if _, ok := p[last]; !ok && op.Op != OpAdd {
			return op.fail("can't remove or replace a non-existent object '%s'", last)
		}
		if op.Op == OpRemove {
			delete(p, last)
		} else {
			p[last] = op.Value
		}
		return nil
	case []any:
		return applyList(doc, op, segs, p, last)
	default:
		return op.fail("the target of %s is not an object or a list", op.Path)
	}
}

// applyList edits a list in place; since Go slices cannot grow in place the
// new list is written back into its parent container.
func applyList(doc map[string]any, op Op, segs []string, list []any, last string) error {
	idx := len(list)
	if last != "-" || op.Op != OpAdd {
		n, err := strconv.Atoi(last)
		if err != nil || n < 0 || n > len(list) || (n == len(list) && op.Op != OpAdd) {
			return op.fail("list index %s out of range", last)
		}
		idx = n
	}
	var out []any
	switch op.Op {
	case OpAdd:
		out = append(append(append([]any{}, list[:idx]...), op.Value), list[idx:]...)
	case OpReplace:
		out = append([]any{}, list...)
		out[idx] = op.Value
	default:
		out = append(append([]any{}, list[:idx]...), list[idx+1:]...)
	}
	var holder any = doc
	for _, s := range segs[:len(segs)-2] {
		holder, _ = lookup(holder, s)
	}
	key := segs[len(segs)-2]
	switch h := holder.(type) {
	case map[string]any:
		h[key] = out
	case []any:
		i, _ := strconv.Atoi(key)
		h[i] = out
	}
	return nil
}

func lookup(container any, seg string) (any, bool) {
	switch c := container.(type) {
	case map[string]any:
		v, ok := c[seg]
		return v, ok
	case []any:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(c) {
			return nil, false
		}
		return c[i], true
	}
	return nil, false
}

// CheckFields enforces rule 3: every op's first segment must be one of
// allowed (given in display order).
func CheckFields(ops []Op, allowed []string) error {
	set := make(map[string]bool, len(allowed))
	for _, a := range allowed {
		set[a] = true
	}
	for _, op := range ops {
		if !set[op.Field()] {
			return errs.New(errs.KindInvalid, "Cannot patch %s. Only the following can be updated: %s", op.Path, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// DeepCopy copies a decoded JSON value so a patch can be tried on a copy.
func DeepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = DeepCopy(x)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, x := range t {
			l[i] = DeepCopy(x)
		}
		return l
	default:
		return v
	}
}
