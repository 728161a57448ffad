package volume

import (
	"github.com/ferricbm/ferric/api-service/jsonpatch"
	"github.com/ferricbm/ferric/pkg/model"
)

var targetSchema = schema{name: "target", props: []prop{
	{name: "uuid", kind: kString, nullable: true, maxLen: 36},
	{name: "node_uuid", kind: kString, required: true, maxLen: 36},
	{name: "volume_type", kind: kString, required: true, maxLen: 64},
	{name: "boot_index", kind: kInteger, required: true, nonNegative: true},
	{name: "volume_id", kind: kString, required: true, maxLen: 36},
	{name: "properties", kind: kObject, nullable: true},
	{name: "extra", kind: kObject, nullable: true},
}}

// Targets describes the volume target resource.
var Targets = Resource{
	Singular:   "target",
	Collection: "targets",
	Path:       "volume/targets",
	Fields: []string{"boot_index", "created_at", "extra", "links", "node_uuid", "properties",
		"updated_at", "uuid", "volume_id", "volume_type"},
	DefaultFields: []string{"uuid", "node_uuid", "volume_type", "boot_index", "volume_id"},
	Patchable:     []string{"boot_index", "extra", "node_uuid", "properties", "volume_id", "volume_type"},
}

// DecodeTarget turns a create body into an unsaved target with NodeUUID
// set; the caller resolves the node.
func DecodeTarget(body map[string]any) (*model.VolumeTarget, error) {
	u, node, err := decodeIDs(targetSchema, body)
	if err != nil {
		return nil, err
	}
	idx, _ := integer(body["boot_index"])
	return &model.VolumeTarget{
		UUID:       u,
		NodeUUID:   node,
		VolumeType: body["volume_type"].(string),
		BootIndex:  idx,
		VolumeID:   body["volume_id"].(string),
		Properties: model.JSONObject(object(body["properties"])),
		Extra:      model.JSONObject(object(body["extra"])),
	}, nil
}

// ApplyTarget patches a copy of t and returns it.
func ApplyTarget(t *model.VolumeTarget, ops []jsonpatch.Op) (*model.VolumeTarget, error) {
	doc := map[string]any{
		"node_uuid":   t.NodeUUID,
		"volume_type": t.VolumeType,
		"boot_index":  t.BootIndex,
		"volume_id":   t.VolumeID,
		"properties":  copyObject(t.Properties),
		"extra":       copyObject(t.Extra),
	}
	node, err := applyPatch(Targets, targetSchema, doc, ops)
	if err != nil {
		return nil, err
	}
	out := *t
	out.NodeUUID = node
	out.VolumeType = doc["volume_type"].(string)
	out.BootIndex, _ = integer(doc["boot_index"])
	out.VolumeID = doc["volume_id"].(string)
	out.Properties = model.JSONObject(object(doc["properties"]))
	out.Extra = model.JSONObject(object(doc["extra"]))
	return &out, nil
}
