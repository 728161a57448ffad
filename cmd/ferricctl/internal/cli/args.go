package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/spf13/cobra"
)

var errNothingToChange = errors.New("nothing to change: give at least one option")

// keyValues parses repeated KEY=VALUE arguments. A VALUE that is valid
// JSON is taken as such ("0" is a number, "true" a boolean, {"a":1} an
// object), anything else as a string, as the OpenStack CLI does.
func keyValues(flag string, pairs []string) (map[string]any, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s: %q is not KEY=VALUE", flag, p)
		}
		out[k] = jsonOrString(v)
	}
	return out, nil
}

func jsonOrString(v string) any {
	var decoded any
	if err := json.Unmarshal([]byte(v), &decoded); err == nil {
		return decoded
	}
	return v
}

// patchOp is one JSON patch operation, independent of the client package
// that sends it.
type patchOp struct {
	op    string
	path  string
	value any
}

// dictKeyOps adds one "add" operation per KEY=VALUE under /field.
func dictKeyOps(field string, pairs []string) ([]patchOp, error) {
	m, err := keyValues(strings.ReplaceAll(field, "_", "-"), pairs)
	if err != nil {
		return nil, err
	}
	keys := slices.Sorted(maps.Keys(m))
	ops := make([]patchOp, 0, len(keys))
	for _, k := range keys {
		ops = append(ops, patchOp{op: "add", path: "/" + field + "/" + k, value: m[k]})
	}
	return ops, nil
}

// replaceIfChanged replaces path with value when any of flags was given.
func replaceIfChanged(cmd *cobra.Command, path string, value any, flags ...string) []patchOp {
	if slices.ContainsFunc(flags, cmd.Flags().Changed) {
		return []patchOp{{op: "replace", path: path, value: value}}
	}
	return nil
}

// convertOps turns the operations into a client package's patch type.
func convertOps[P any](ops []patchOp, to func(patchOp) P) []P {
	out := make([]P, len(ops))
	for i, op := range ops {
		out[i] = to(op)
	}
	return out
}

// removeKeyOps removes each key under /field.
func removeKeyOps(field string, keys []string) []patchOp {
	ops := make([]patchOp, 0, len(keys))
	for _, k := range keys {
		ops = append(ops, patchOp{op: "remove", path: "/" + field + "/" + k})
	}
	return ops
}

// listOptions are the paging and shaping flags every list command has.
type listOptions struct {
	limit  int
	marker string
	sort   string
	long   bool
	fields []string
}

func (o *listOptions) register(cmd *cobra.Command, noun string, fields []string) {
	f := cmd.Flags()
	f.IntVar(&o.limit, "limit", -1, "maximum number of "+noun+"s to return; 0 for all of them (default: one page, the server's maximum)")
	f.StringVar(&o.marker, "marker", "", noun+" UUID after which to start (the last one of the previous list)")
	f.StringVar(&o.sort, "sort", "", "sort by KEY[:asc|desc]")
	f.BoolVar(&o.long, "long", false, "show every field")
	fieldsHelp := "show only these fields (repeatable or comma-separated)"
	if fields != nil {
		fieldsHelp += ": " + strings.Join(fields, ", ")
	}
	f.StringSliceVar(&o.fields, "fields", nil, fieldsHelp)
	cmd.MarkFlagsMutuallyExclusive("long", "fields")
}

// validate checks the options; known lists the fields --fields accepts
// (nil: the server judges them).
func (o listOptions) validate(known []string) error {
	if o.limit < -1 {
		return fmt.Errorf("--limit must be 0 or more, not %d", o.limit)
	}
	if _, _, err := o.sortKeyDir(); err != nil {
		return err
	}
	if known == nil {
		return nil
	}
	return checkFields(o.fields, known)
}

func (o listOptions) sortKeyDir() (key, dir string, err error) {
	if o.sort == "" {
		return "", "", nil
	}
	key, dir, _ = strings.Cut(o.sort, ":")
	if key == "" {
		return "", "", fmt.Errorf("--sort %q names no key", o.sort)
	}
	if dir != "" && dir != "asc" && dir != "desc" {
		return "", "", fmt.Errorf("--sort direction %q must be asc or desc", dir)
	}
	return key, dir, nil
}

// pageSize is the limit to ask the server for: none (its maximum) unless
// the user wants fewer.
func (o listOptions) pageSize() int {
	if o.limit > 0 {
		return o.limit
	}
	return 0
}

// more reports whether to fetch another page after got items.
func (o listOptions) more(got int) bool {
	switch {
	case o.limit == 0:
		return true
	case o.limit > 0:
		return got < o.limit
	default:
		return false
	}
}

// shown are the fields a list shows: every one (all) with --long, those
// of --fields, or else the default ones.
func (o listOptions) shown(defaults, all []string) []string {
	switch {
	case o.long:
		return all
	case len(o.fields) > 0:
		return o.fields
	default:
		return defaults
	}
}

// collect reads the pages the options ask for from pager, decoding each
// with extract, and returns at most --limit items.
func collect[T any](ctx context.Context, pager pagination.Pager, o listOptions, extract func(pagination.Page) ([]T, error)) ([]T, error) {
	var items []T
	err := pager.EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		page, err := extract(p)
		items = append(items, page...)
		return o.more(len(items)), err
	})
	if err != nil {
		return nil, err
	}
	if o.limit > 0 && len(items) > o.limit {
		items = items[:o.limit]
	}
	return items, nil
}

// deleteEach deletes every id, reporting each outcome, and fails if any
// deletion did.
func (s *session) deleteEach(noun string, ids []string, del func(string) error) error {
	failed := 0
	for _, id := range ids {
		if err := del(id); err != nil {
			failed++
			fmt.Fprintf(s.stderr, "Failed to delete %s %s: %s\n", noun, id, describe(err))
			continue
		}
		fmt.Fprintf(s.stdout, "Deleted %s %s\n", noun, id)
	}
	if failed > 0 {
		return fmt.Errorf("failed to delete %d of %d %ss", failed, len(ids), noun)
	}
	return nil
}

func checkFields(fields, known []string) error {
	for _, f := range fields {
		if !slices.Contains(known, f) {
			return fmt.Errorf("--fields: unknown field %q (want some of %s)", f, strings.Join(known, ", "))
		}
	}
	return nil
}

// timestamp shows a time as the API writes it: ISO 8601 with a numeric
// offset, and six fraction digits unless the microseconds are zero.
func timestamp(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	if t.Nanosecond()/1000 == 0 {
		return t.Format("2006-01-02T15:04:05-07:00")
	}
	return t.Format("2006-01-02T15:04:05.000000-07:00")
}

func optionalTimestamp(t *time.Time) any {
	if t == nil {
		return nil
	}
	return timestamp(*t)
}

// jsonObject keeps an absent object visible as {} rather than null.
func jsonObject(m map[string]any) any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// optional shows an empty string as null: gophercloud decodes the API's
// null strings as empty ones.
func optional(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// stringList keeps an absent list visible as [] rather than null.
func stringList(l []string) any {
	if l == nil {
		return []string{}
	}
	return l
}
