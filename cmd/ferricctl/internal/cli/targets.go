package cli

import (
	"context"
	"slices"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/spf13/cobra"

	"github.com/ferricbm/ferric/client/volume"
	"github.com/ferricbm/ferric/client/volume/targets"
)

type target = targets.VolumeTarget

// Properties are shown as the API returns them: the server has already
// masked their credentials.
var targetResource = apiResource[target]{
	noun:       "target",
	title:      "volume target",
	minVersion: volume.MinMicroversion,
	deleteNote: "their nodes must be powered off",
	columns: columns[target]{
		{"uuid", "UUID", func(t target) any { return t.UUID }},
		{"node_uuid", "Node UUID", func(t target) any { return t.NodeUUID }},
		{"volume_type", "Driver Volume Type", func(t target) any { return t.VolumeType }},
		{"boot_index", "Boot Index", func(t target) any { return t.BootIndex }},
		{"volume_id", "Volume ID", func(t target) any { return t.VolumeID }},
		{"properties", "Properties", func(t target) any { return jsonObject(t.Properties) }},
		{"extra", "Extra", func(t target) any { return jsonObject(t.Extra) }},
		{"created_at", "Created At", func(t target) any { return timestamp(t.CreatedAt) }},
		{"updated_at", "Updated At", func(t target) any { return optionalTimestamp(t.UpdatedAt) }},
	},
	listDefault: []string{"uuid", "node_uuid", "volume_type", "boot_index", "volume_id"},
	dicts:       []dictFlag{{"properties", "property", "connection property"}, {"extra", "extra", "extra"}},
	filters:     []filterFlag{{"node", "only the targets of this node (UUID or name)"}},
	list: func(c *gophercloud.ServiceClient, filters map[string]string, o listOptions) pagination.Pager {
		key, dir, _ := o.sortKeyDir()
		return targets.List(c, targets.ListOpts{Node: filters["node"], Fields: o.fields, Detail: o.long,
			Limit: o.pageSize(), Marker: o.marker, SortKey: key, SortDir: dir})
	},
	extract: targets.ExtractTargets,
	get: func(ctx context.Context, c *gophercloud.ServiceClient, id string, fields []string) (*target, error) {
		return targets.Get(ctx, c, id, targets.GetOpts{Fields: fields}).Extract()
	},
	update: func(ctx context.Context, c *gophercloud.ServiceClient, id string, ops []patchOp) error {
		_, err := targets.Update(ctx, c, id, convertOps(ops, func(op patchOp) targets.Patch {
			return targets.UpdateOperation{Op: targets.UpdateOp(op.op), Path: op.path, Value: op.value}
		})).Extract()
		return err
	},
	delete: func(ctx context.Context, c *gophercloud.ServiceClient, id string) error {
		return targets.Delete(ctx, c, id).ExtractErr()
	},
}

func targetCommands(s *session) *cobra.Command {
	r := targetResource
	cmd := group("target", "Volume targets: the remote volumes a node boots from or uses")
	cmd.AddCommand(targetCreate(s), r.listCommand(s), r.showCommand(s), targetSet(s),
		r.unsetCommand(s, "Remove property or extra keys of a volume target"), r.deleteCommand(s))
	return cmd
}

// volumeTypeFlags binds --type and its alias --volume-type to one value.
func volumeTypeFlags(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVar(v, "type", "", "driver volume type, e.g. iscsi or fibre_channel")
	cmd.Flags().StringVar(v, "volume-type", "", "same as --type")
	cmd.MarkFlagsMutuallyExclusive("type", "volume-type")
}

func targetCreate(s *session) *cobra.Command {
	var opts targets.CreateOpts
	var properties, extra []string
	cmd := &cobra.Command{
		Use:   "create --node <uuid> --type <volume type> --boot-index <n> --volume-id <id>",
		Short: "Attach a volume target to a node",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opts.Properties, err = keyValues("property", properties); err != nil {
				return err
			}
			if opts.Extra, err = keyValues("extra", extra); err != nil {
				return err
			}
			return targetResource.create(cmd.Context(), s, func(c *gophercloud.ServiceClient) (*target, error) {
				return targets.Create(cmd.Context(), c, opts).Extract()
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.NodeUUID, "node", "", "UUID of the node the target belongs to")
	volumeTypeFlags(cmd, &opts.VolumeType)
	f.IntVar(&opts.BootIndex, "boot-index", 0, "boot order of the volume; 0 is the boot volume")
	f.StringVar(&opts.VolumeID, "volume-id", "", "the storage service's id of the volume")
	f.StringArrayVar(&properties, "property", nil, "connection property KEY=VALUE (repeatable)")
	f.StringArrayVar(&extra, "extra", nil, "extra KEY=VALUE (repeatable)")
	f.StringVar(&opts.UUID, "uuid", "", "UUID of the new target")
	for _, name := range []string{"node", "boot-index", "volume-id"} {
		_ = cmd.MarkFlagRequired(name)
	}
	cmd.MarkFlagsOneRequired("type", "volume-type")
	return cmd
}

func targetSet(s *session) *cobra.Command {
	var node, volumeType, volumeID string
	var bootIndex int
	cmd := targetResource.setCommand(s, "Change a volume target (its node must be powered off)", func(cmd *cobra.Command) []patchOp {
		return slices.Concat(replaceIfChanged(cmd, "/node_uuid", node, "node"),
			replaceIfChanged(cmd, "/volume_type", volumeType, "type", "volume-type"),
			replaceIfChanged(cmd, "/boot_index", bootIndex, "boot-index"),
			replaceIfChanged(cmd, "/volume_id", volumeID, "volume-id"))
	})
	f := cmd.Flags()
	f.StringVar(&node, "node", "", "move the target to this node (UUID)")
	volumeTypeFlags(cmd, &volumeType)
	f.IntVar(&bootIndex, "boot-index", 0, "new boot index")
	f.StringVar(&volumeID, "volume-id", "", "new volume id")
	return cmd
}
