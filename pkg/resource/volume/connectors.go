package volume

import (
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/present"
)

type connector = model.VolumeConnector

// ConnectorTypes are the connector types a storage interface understands:
// initiator identities (iSCSI IQN, IP and MAC addresses, Fibre Channel
// WWNN and WWPN, a network id) and Ironic's own ports and port groups. Any
// other type could never be used, so it is refused when written.
var ConnectorTypes = []string{"iqn", "ip", "mac", "wwnn", "wwpn", "net-id", "port", "portgroup"}

var connectors = newResource(&catalogue.Catalogue[connector]{Resource: "connector",
	Fields: append([]catalogue.Field[connector]{
		str("connector", prop{name: "uuid", kind: kString, nullable: true, maxLen: 36}, func(c *connector) *string { return &c.UUID }),
		byNode(str("connector", prop{name: "node_uuid", kind: kString, required: true, maxLen: 36}, func(c *connector) *string { return &c.NodeUUID })),
		str("connector", prop{name: "type", kind: kString, required: true, maxLen: 32, enum: ConnectorTypes}, func(c *connector) *string { return &c.Type }),
		str("connector", prop{name: "connector_id", kind: kString, required: true, maxLen: 255}, func(c *connector) *string { return &c.ConnectorID }),
		obj("connector", prop{name: "extra", kind: kObject, nullable: true}, func(c *connector) *model.JSONObject { return &c.Extra }),
	}, times(func(c *connector) any { return present.Time(&c.CreatedAt) }, func(c *connector) any { return present.Time(c.UpdatedAt) })...),
	Defaults: []string{"uuid", "node_uuid", "type", "connector_id"},
	SizeHint: 512,
}, "connectors", func(c *connector) string { return c.UUID })

// ConnectorCatalogue lists every connector attribute.
var ConnectorCatalogue = connectors.cat

// Connectors describes the volume connector endpoints.
var Connectors = connectors.res

// DecodeConnector turns a create body into an unsaved connector with
// NodeUUID set; the caller resolves the node.
func DecodeConnector(body map[string]any) (*model.VolumeConnector, error) {
	c := &model.VolumeConnector{Extra: model.JSONObject{}}
	u, node, err := decode(ConnectorCatalogue, c, body)
	if err != nil {
		return nil, err
	}
	c.UUID, c.NodeUUID = u, node
	return c, nil
}

// ApplyConnector patches a copy of c and returns it; NodeUUID may have
// changed (the caller checks the new node exists).
func ApplyConnector(c *model.VolumeConnector, ops []jsonpatch.Op) (*model.VolumeConnector, error) {
	return apply(ConnectorCatalogue, c, ops, func(c *connector) *string { return &c.NodeUUID })
}

// RenderConnector is the JSON value of a connector: every field, or only
// fields (plus links) when fields is not nil.
func RenderConnector(base string, c *model.VolumeConnector, fields []string) any {
	return ConnectorCatalogue.Render(view[connector](base, fields), c)
}

// AppendConnector appends the JSON of RenderConnector(base, c, fields).
func AppendConnector(buf []byte, base string, c *model.VolumeConnector, fields []string) ([]byte, error) {
	vw := view[connector](base, fields)
	return ConnectorCatalogue.AppendJSON(buf, &vw, c)
}
