package cli

import (
	"context"

	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/spf13/cobra"

	"github.com/ferricbm/ferric/client/volume"
	"github.com/ferricbm/ferric/client/volume/targets"
	"github.com/ferricbm/ferric/cmd/ferricctl/internal/output"
)

type target = targets.VolumeTarget

// Properties are shown as the API returns them: the server has already
// masked their credentials.
var targetColumns = columns[target]{
	{"uuid", "UUID", func(t target) any { return t.UUID }},
	{"node_uuid", "Node UUID", func(t target) any { return t.NodeUUID }},
	{"volume_type", "Driver Volume Type", func(t target) any { return t.VolumeType }},
	{"boot_index", "Boot Index", func(t target) any { return t.BootIndex }},
	{"volume_id", "Volume ID", func(t target) any { return t.VolumeID }},
	{"properties", "Properties", func(t target) any { return jsonObject(t.Properties) }},
	{"extra", "Extra", func(t target) any { return jsonObject(t.Extra) }},
	{"created_at", "Created At", func(t target) any { return timestamp(t.CreatedAt) }},
	{"updated_at", "Updated At", func(t target) any { return optionalTimestamp(t.UpdatedAt) }},
}

var targetListDefault = []string{"uuid", "node_uuid", "volume_type", "boot_index", "volume_id"}

func targetCommands(s *session) *cobra.Command {
	cmd := group("target", "Volume targets: the remote volumes a node boots from or uses")
	cmd.AddCommand(targetCreate(s), targetList(s), targetShow(s), targetSet(s), targetUnset(s), targetDelete(s))
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
			c, err := s.baremetal(cmd.Context(), volume.MinMicroversion)
			if err != nil {
				return err
			}
			created, err := targets.Create(cmd.Context(), c, opts).Extract()
			if err != nil {
				return err
			}
			return output.WriteRecord(s.stdout, s.out, targetColumns.record(*created, targetColumns.names()))
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

func targetList(s *session) *cobra.Command {
	var o listOptions
	var node string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List volume targets",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(targetColumns.names()); err != nil {
				return err
			}
			c, err := s.baremetal(cmd.Context(), volume.MinMicroversion)
			if err != nil {
				return err
			}
			key, dir, _ := o.sortKeyDir()
			pager := targets.List(c, targets.ListOpts{Node: node, Fields: o.fields, Detail: o.long,
				Limit: o.pageSize(), Marker: o.marker, SortKey: key, SortDir: dir})
			var items []target
			err = pager.EachPage(cmd.Context(), func(_ context.Context, p pagination.Page) (bool, error) {
				page, err := targets.ExtractTargets(p)
				items = append(items, page...)
				return o.more(len(items)), err
			})
			if err != nil {
				return err
			}
			if o.limit > 0 && len(items) > o.limit {
				items = items[:o.limit]
			}
			names := targetListDefault
			switch {
			case o.long:
				names = targetColumns.names()
			case len(o.fields) > 0:
				names = o.fields
			}
			return output.WriteList(s.stdout, s.out, targetColumns.list(items, names))
		},
	}
	o.register(cmd, "target", targetColumns.names())
	cmd.Flags().StringVar(&node, "node", "", "only the targets of this node (UUID or name)")
	return cmd
}

func targetShow(s *session) *cobra.Command {
	var fields []string
	cmd := &cobra.Command{
		Use:   "show <target uuid>",
		Short: "Show a volume target",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFields(fields, targetColumns.names()); err != nil {
				return err
			}
			c, err := s.baremetal(cmd.Context(), volume.MinMicroversion)
			if err != nil {
				return err
			}
			var opts targets.GetOptsBuilder
			names := targetColumns.names()
			if len(fields) > 0 {
				opts, names = targets.GetOpts{Fields: fields}, fields
			}
			got, err := targets.Get(cmd.Context(), c, args[0], opts).Extract()
			if err != nil {
				return err
			}
			return output.WriteRecord(s.stdout, s.out, targetColumns.record(*got, names))
		},
	}
	cmd.Flags().StringSliceVar(&fields, "fields", nil, "show only these fields (repeatable or comma-separated)")
	return cmd
}

func targetSet(s *session) *cobra.Command {
	var node, volumeType, volumeID string
	var bootIndex int
	var properties, extra []string
	cmd := &cobra.Command{
		Use:   "set <target uuid>",
		Short: "Change a volume target (its node must be powered off)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			changed := cmd.Flags().Changed
			var ops []patchOp
			if changed("node") {
				ops = append(ops, patchOp{op: "replace", path: "/node_uuid", value: node})
			}
			if changed("type") || changed("volume-type") {
				ops = append(ops, patchOp{op: "replace", path: "/volume_type", value: volumeType})
			}
			if changed("boot-index") {
				ops = append(ops, patchOp{op: "replace", path: "/boot_index", value: bootIndex})
			}
			if changed("volume-id") {
				ops = append(ops, patchOp{op: "replace", path: "/volume_id", value: volumeID})
			}
			for _, d := range []struct {
				field string
				pairs []string
			}{{"properties", properties}, {"extra", extra}} {
				more, err := dictKeyOps(d.field, d.pairs)
				if err != nil {
					return err
				}
				ops = append(ops, more...)
			}
			return s.updateTarget(cmd.Context(), args[0], ops)
		},
	}
	f := cmd.Flags()
	f.StringVar(&node, "node", "", "move the target to this node (UUID)")
	volumeTypeFlags(cmd, &volumeType)
	f.IntVar(&bootIndex, "boot-index", 0, "new boot index")
	f.StringVar(&volumeID, "volume-id", "", "new volume id")
	f.StringArrayVar(&properties, "property", nil, "set connection property KEY=VALUE (repeatable)")
	f.StringArrayVar(&extra, "extra", nil, "set extra KEY=VALUE (repeatable)")
	return cmd
}

func targetUnset(s *session) *cobra.Command {
	var properties, extra []string
	cmd := &cobra.Command{
		Use:   "unset <target uuid>",
		Short: "Remove property or extra keys of a volume target",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ops := append(removeKeyOps("properties", properties), removeKeyOps("extra", extra)...)
			return s.updateTarget(cmd.Context(), args[0], ops)
		},
	}
	cmd.Flags().StringArrayVar(&properties, "property", nil, "property KEY to remove (repeatable)")
	cmd.Flags().StringArrayVar(&extra, "extra", nil, "extra KEY to remove (repeatable)")
	return cmd
}

func (s *session) updateTarget(ctx context.Context, id string, ops []patchOp) error {
	if len(ops) == 0 {
		return errNothingToChange
	}
	c, err := s.baremetal(ctx, volume.MinMicroversion)
	if err != nil {
		return err
	}
	patch := make(targets.UpdateOpts, len(ops))
	for i, op := range ops {
		patch[i] = targets.UpdateOperation{Op: targets.UpdateOp(op.op), Path: op.path, Value: op.value}
	}
	_, err = targets.Update(ctx, c, id, patch).Extract()
	return err
}

func targetDelete(s *session) *cobra.Command {
	return &cobra.Command{
		Use:   "delete <target uuid> [<target uuid> ...]",
		Short: "Delete volume targets (their nodes must be powered off)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := s.baremetal(cmd.Context(), volume.MinMicroversion)
			if err != nil {
				return err
			}
			return s.deleteEach("volume target", args, func(id string) error {
				return targets.Delete(cmd.Context(), c, id).ExtractErr()
			})
		},
	}
}
