package volume

import (
	"github.com/ferricbm/ferric/api-service/jsonpatch"
	"github.com/ferricbm/ferric/pkg/model"
)

var connectorSchema = schema{name: "connector", props: []prop{
	{name: "uuid", kind: kString, nullable: true, maxLen: 36},
	{name: "node_uuid", kind: kString, required: true, maxLen: 36},
	{name: "type", kind: kString, required: true, maxLen: 32, enum: ConnectorTypes},
	{name: "connector_id", kind: kString, required: true, maxLen: 255},
	{name: "extra", kind: kObject, nullable: true},
}}

// ConnectorTypes are the connector types a storage interface understands:
// initiator identities (iSCSI IQN, IP and MAC addresses, Fibre Channel
// WWNN and WWPN, a network id) and Ironic's own ports and port groups. Any
// other type could never be used, so it is refused when written.
var ConnectorTypes = []string{"iqn", "ip", "mac", "wwnn", "wwpn", "net-id", "port", "portgroup"}

// Connectors describes the volume connector resource.
var Connectors = Resource{
	Singular:   "connector",
	Collection: "connectors",
	Path:       "volume/connectors",
	// The order is Ironic's: the field list of the error for an unknown
	// ?fields= name and of a non-patchable path.
	Fields:        []string{"connector_id", "created_at", "extra", "links", "node_uuid", "type", "updated_at", "uuid"},
	DefaultFields: []string{"uuid", "node_uuid", "type", "connector_id"},
	Patchable:     []string{"connector_id", "extra", "node_uuid", "type"},
}

// DecodeConnector turns a create body into an unsaved connector with
// NodeUUID set; the caller resolves the node.
func DecodeConnector(body map[string]any) (*model.VolumeConnector, error) {
	u, node, err := decodeIDs(connectorSchema, body)
	if err != nil {
		return nil, err
	}
	return &model.VolumeConnector{
		UUID:        u,
		NodeUUID:    node,
		Type:        body["type"].(string),
		ConnectorID: body["connector_id"].(string),
		Extra:       model.JSONObject(object(body["extra"])),
	}, nil
}

// ApplyConnector patches a copy of c and returns it; NodeUUID may have
// changed (the caller checks the new node exists).
func ApplyConnector(c *model.VolumeConnector, ops []jsonpatch.Op) (*model.VolumeConnector, error) {
	doc := map[string]any{
		"node_uuid":    c.NodeUUID,
		"type":         c.Type,
		"connector_id": c.ConnectorID,
		"extra":        copyObject(c.Extra),
	}
	node, err := applyPatch(Connectors, connectorSchema, doc, ops)
	if err != nil {
		return nil, err
	}
	out := *c
	out.NodeUUID = node
	out.Type = doc["type"].(string)
	out.ConnectorID = doc["connector_id"].(string)
	out.Extra = model.JSONObject(object(doc["extra"]))
	return &out, nil
}
