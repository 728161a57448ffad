package volume

import (
	"slices"
	"strings"

	"github.com/ferricbm/ferric/api-service/jsonpatch"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
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
	// Patchable are the top-level attributes a PATCH may touch, sorted.
	Patchable []string
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
func (r Resource) Columns(fields []string) []string {
	if fields == nil {
		return nil
	}
	cols := []string{"uuid"}
	for _, f := range fields {
		if f != "uuid" && f != "links" {
			cols = append(cols, f)
		}
	}
	return cols
}

// decodeIDs validates a create body against s and reads its uuid (a new
// one when absent) and node_uuid.
func decodeIDs(s schema, body map[string]any) (uuid, nodeUUID string, err error) {
	if err := s.check(body); err != nil {
		return "", "", err
	}
	if uuid, err = uuidOf(body); err != nil {
		return "", "", err
	}
	nodeUUID, err = nodeUUIDOf(body, true)
	return uuid, nodeUUID, err
}

// applyPatch checks the ops' paths, applies them to doc, validates the
// result as a create document would be and returns the node_uuid it
// names.
func applyPatch(r Resource, s schema, doc map[string]any, ops []jsonpatch.Op) (string, error) {
	if err := jsonpatch.CheckFields(ops, r.Patchable); err != nil {
		return "", err
	}
	if err := jsonpatch.Apply(doc, ops); err != nil {
		return "", err
	}
	if err := s.check(doc); err != nil {
		return "", err
	}
	return nodeUUIDOf(doc, false)
}

func copyObject(o model.JSONObject) map[string]any {
	if o == nil {
		return map[string]any{}
	}
	return jsonpatch.DeepCopy(map[string]any(o)).(map[string]any)
}
