package cli

import (
	"context"
	"slices"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/spf13/cobra"

	"github.com/ferricbm/ferric/client/volume"
	"github.com/ferricbm/ferric/client/volume/connectors"
)

type connector = connectors.VolumeConnector

var connectorResource = apiResource[connector]{
	noun:       "connector",
	title:      "volume connector",
	minVersion: volume.MinMicroversion,
	deleteNote: "their nodes must be powered off",
	columns: columns[connector]{
		{"uuid", "UUID", func(c connector) any { return c.UUID }},
		{"node_uuid", "Node UUID", func(c connector) any { return c.NodeUUID }},
		{"type", "Type", func(c connector) any { return c.Type }},
		{"connector_id", "Connector ID", func(c connector) any { return c.ConnectorID }},
		{"extra", "Extra", func(c connector) any { return jsonObject(c.Extra) }},
		{"created_at", "Created At", func(c connector) any { return timestamp(c.CreatedAt) }},
		{"updated_at", "Updated At", func(c connector) any { return optionalTimestamp(c.UpdatedAt) }},
	},
	listDefault: []string{"uuid", "node_uuid", "type", "connector_id"},
	dicts:       []dictFlag{{"extra", "extra", "extra"}},
	filters:     []filterFlag{{"node", "only the connectors of this node (UUID or name)"}},
	list: func(c *gophercloud.ServiceClient, filters map[string]string, o listOptions) pagination.Pager {
		key, dir, _ := o.sortKeyDir()
		return connectors.List(c, connectors.ListOpts{Node: filters["node"], Fields: o.fields, Detail: o.long,
			Limit: o.pageSize(), Marker: o.marker, SortKey: key, SortDir: dir})
	},
	extract: connectors.ExtractConnectors,
	get: func(ctx context.Context, c *gophercloud.ServiceClient, id string, fields []string) (*connector, error) {
		return connectors.Get(ctx, c, id, connectors.GetOpts{Fields: fields}).Extract()
	},
	update: func(ctx context.Context, c *gophercloud.ServiceClient, id string, ops []patchOp) error {
		_, err := connectors.Update(ctx, c, id, convertOps(ops, func(op patchOp) connectors.Patch {
			return connectors.UpdateOperation{Op: connectors.UpdateOp(op.op), Path: op.path, Value: op.value}
		})).Extract()
		return err
	},
	delete: func(ctx context.Context, c *gophercloud.ServiceClient, id string) error {
		return connectors.Delete(ctx, c, id).ExtractErr()
	},
}

func connectorCommands(s *session) *cobra.Command {
	r := connectorResource
	cmd := group("connector", "Volume connectors: a node's storage initiator identities")
	cmd.AddCommand(connectorCreate(s), r.listCommand(s), r.showCommand(s), connectorSet(s),
		r.unsetCommand(s, "Remove extra keys of a volume connector"), r.deleteCommand(s))
	return cmd
}

func connectorCreate(s *session) *cobra.Command {
	var opts connectors.CreateOpts
	var extra []string
	cmd := &cobra.Command{
		Use:   "create --node <uuid> --type <type> --connector-id <id>",
		Short: "Register a volume connector of a node",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opts.Extra, err = keyValues("extra", extra); err != nil {
				return err
			}
			return connectorResource.create(cmd.Context(), s, func(c *gophercloud.ServiceClient) (*connector, error) {
				return connectors.Create(cmd.Context(), c, opts).Extract()
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.NodeUUID, "node", "", "UUID of the node the connector belongs to")
	f.StringVar(&opts.Type, "type", "", "connector type: iqn, ip, mac, wwnn, wwpn, net-id, port, portgroup")
	f.StringVar(&opts.ConnectorID, "connector-id", "", "the connector's identity, in its type's format")
	f.StringArrayVar(&extra, "extra", nil, "extra KEY=VALUE (repeatable)")
	f.StringVar(&opts.UUID, "uuid", "", "UUID of the new connector")
	for _, name := range []string{"node", "type", "connector-id"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func connectorSet(s *session) *cobra.Command {
	var node, typ, connectorID string
	cmd := connectorResource.setCommand(s, "Change a volume connector (its node must be powered off)", func(cmd *cobra.Command) []patchOp {
		return slices.Concat(replaceIfChanged(cmd, "/node_uuid", node, "node"),
			replaceIfChanged(cmd, "/type", typ, "type"),
			replaceIfChanged(cmd, "/connector_id", connectorID, "connector-id"))
	})
	f := cmd.Flags()
	f.StringVar(&node, "node", "", "move the connector to this node (UUID)")
	f.StringVar(&typ, "type", "", "new connector type")
	f.StringVar(&connectorID, "connector-id", "", "new connector identity")
	return cmd
}
