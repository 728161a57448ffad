package cli

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/spf13/cobra"

	"github.com/ferricbm/ferric/client/volume"
	"github.com/ferricbm/ferric/client/volume/connectors"
	"github.com/ferricbm/ferric/cmd/ferricctl/internal/output"
)

type connector = connectors.VolumeConnector

var connectorColumns = columns[connector]{
	{"uuid", "UUID", func(c connector) any { return c.UUID }},
	{"node_uuid", "Node UUID", func(c connector) any { return c.NodeUUID }},
	{"type", "Type", func(c connector) any { return c.Type }},
	{"connector_id", "Connector ID", func(c connector) any { return c.ConnectorID }},
	{"extra", "Extra", func(c connector) any { return jsonObject(c.Extra) }},
	{"created_at", "Created At", func(c connector) any { return timestamp(c.CreatedAt) }},
	{"updated_at", "Updated At", func(c connector) any { return optionalTimestamp(c.UpdatedAt) }},
}

// connectorListDefault are the fields the API lists without detail.
var connectorListDefault = []string{"uuid", "node_uuid", "type", "connector_id"}

func connectorCommands(s *session) *cobra.Command {
	cmd := group("connector", "Volume connectors: a node's storage initiator identities")
	cmd.AddCommand(connectorCreate(s), connectorList(s), connectorShow(s), connectorSet(s), connectorUnset(s), connectorDelete(s))
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
			c, err := s.baremetal(cmd.Context(), volume.MinMicroversion)
			if err != nil {
				return err
			}
			created, err := connectors.Create(cmd.Context(), c, opts).Extract()
			if err != nil {
				return err
			}
			return output.WriteRecord(s.stdout, s.out, connectorColumns.record(*created, connectorColumns.names()))
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.NodeUUID, "node", "", "UUID of the node the connector belongs to")
	f.StringVar(&opts.Type, "type", "", "connector type: iqn, ip, mac, wwnn, wwpn, port, portgroup")
	f.StringVar(&opts.ConnectorID, "connector-id", "", "the connector's identity, in its type's format")
	f.StringArrayVar(&extra, "extra", nil, "extra KEY=VALUE (repeatable)")
	f.StringVar(&opts.UUID, "uuid", "", "UUID of the new connector")
	for _, name := range []string{"node", "type", "connector-id"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func connectorList(s *session) *cobra.Command {
	var o listOptions
	var node string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List volume connectors",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(connectorColumns.names()); err != nil {
				return err
			}
			c, err := s.baremetal(cmd.Context(), volume.MinMicroversion)
			if err != nil {
				return err
			}
			key, dir, _ := o.sortKeyDir()
			pager := connectors.List(c, connectors.ListOpts{Node: node, Fields: o.fields, Detail: o.long,
				Limit: o.pageSize(), Marker: o.marker, SortKey: key, SortDir: dir})
			var items []connector
			err = pager.EachPage(cmd.Context(), func(_ context.Context, p pagination.Page) (bool, error) {
				page, err := connectors.ExtractConnectors(p)
				items = append(items, page...)
				return o.more(len(items)), err
			})
			if err != nil {
				return err
			}
			if o.limit > 0 && len(items) > o.limit {
				items = items[:o.limit]
			}
			names := connectorListDefault
			switch {
			case o.long:
				names = connectorColumns.names()
			case len(o.fields) > 0:
				names = o.fields
			}
			return output.WriteList(s.stdout, s.out, connectorColumns.list(items, names))
		},
	}
	o.register(cmd, "connector", connectorColumns.names())
	cmd.Flags().StringVar(&node, "node", "", "only the connectors of this node (UUID or name)")
	return cmd
}

func connectorShow(s *session) *cobra.Command {
	var fields []string
	cmd := &cobra.Command{
		Use:   "show <connector uuid>",
		Short: "Show a volume connector",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFields(fields, connectorColumns.names()); err != nil {
				return err
			}
			c, err := s.baremetal(cmd.Context(), volume.MinMicroversion)
			if err != nil {
				return err
			}
			var opts connectors.GetOptsBuilder
			names := connectorColumns.names()
			if len(fields) > 0 {
				opts, names = connectors.GetOpts{Fields: fields}, fields
			}
			got, err := connectors.Get(cmd.Context(), c, args[0], opts).Extract()
			if err != nil {
				return err
			}
			return output.WriteRecord(s.stdout, s.out, connectorColumns.record(*got, names))
		},
	}
	cmd.Flags().StringSliceVar(&fields, "fields", nil, "show only these fields (repeatable or comma-separated)")
	return cmd
}

func connectorSet(s *session) *cobra.Command {
	var node, typ, connectorID string
	var extra []string
	cmd := &cobra.Command{
		Use:   "set <connector uuid>",
		Short: "Change a volume connector (its node must be powered off)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ops []patchOp
			for _, p := range []struct{ flag, path, value string }{
				{"node", "/node_uuid", node}, {"type", "/type", typ}, {"connector-id", "/connector_id", connectorID},
			} {
				if cmd.Flags().Changed(p.flag) {
					ops = append(ops, patchOp{op: "replace", path: p.path, value: p.value})
				}
			}
			extraOps, err := dictKeyOps("extra", extra)
			if err != nil {
				return err
			}
			return s.updateConnector(cmd.Context(), args[0], append(ops, extraOps...))
		},
	}
	f := cmd.Flags()
	f.StringVar(&node, "node", "", "move the connector to this node (UUID)")
	f.StringVar(&typ, "type", "", "new connector type")
	f.StringVar(&connectorID, "connector-id", "", "new connector identity")
	f.StringArrayVar(&extra, "extra", nil, "set extra KEY=VALUE (repeatable)")
	return cmd
}

func connectorUnset(s *session) *cobra.Command {
	var extra []string
	cmd := &cobra.Command{
		Use:   "unset <connector uuid>",
		Short: "Remove extra keys of a volume connector",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return s.updateConnector(cmd.Context(), args[0], removeKeyOps("extra", extra))
		},
	}
	cmd.Flags().StringArrayVar(&extra, "extra", nil, "extra KEY to remove (repeatable)")
	return cmd
}

func (s *session) updateConnector(ctx context.Context, id string, ops []patchOp) error {
	if len(ops) == 0 {
		return errNothingToChange
	}
	c, err := s.baremetal(ctx, volume.MinMicroversion)
	if err != nil {
		return err
	}
	patch := make(connectors.UpdateOpts, len(ops))
	for i, op := range ops {
		patch[i] = connectors.UpdateOperation{Op: connectors.UpdateOp(op.op), Path: op.path, Value: op.value}
	}
	_, err = connectors.Update(ctx, c, id, patch).Extract()
	return err
}

func connectorDelete(s *session) *cobra.Command {
	return &cobra.Command{
		Use:   "delete <connector uuid> [<connector uuid> ...]",
		Short: "Delete volume connectors (their nodes must be powered off)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := s.baremetal(cmd.Context(), volume.MinMicroversion)
			if err != nil {
				return err
			}
			return s.deleteEach("volume connector", args, func(id string) error {
				return connectors.Delete(cmd.Context(), c, id).ExtractErr()
			})
		},
	}
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
