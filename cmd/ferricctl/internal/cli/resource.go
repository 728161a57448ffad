package cli

import (
	"context"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/spf13/cobra"

	"github.com/ferricbm/ferric/cmd/ferricctl/internal/output"
)

// apiResource is what sets one kind of API object apart for its
// commands (volume connectors and targets, allocations): the list, show,
// set, unset and delete commands themselves are the same for all.
type apiResource[T any] struct {
	noun string // "connector", "target", "allocation"
	// title names the kind in help and messages: "volume connector".
	title      string
	minVersion string
	// deleteNote, if set, is added to the delete command's help.
	deleteNote string
	columns    columns[T]
	// listDefault are the fields the API lists without detail.
	listDefault []string
	// dicts are the object fields set and unset change key by key.
	dicts []dictFlag

	// filters are the list command's filter flags, passed to list by
	// name (only those given).
	filters []filterFlag
	list    func(c *gophercloud.ServiceClient, filters map[string]string, o listOptions) pagination.Pager
	extract func(pagination.Page) ([]T, error)
	get     func(ctx context.Context, c *gophercloud.ServiceClient, id string, fields []string) (*T, error)
	update  func(ctx context.Context, c *gophercloud.ServiceClient, id string, ops []patchOp) error
	delete  func(ctx context.Context, c *gophercloud.ServiceClient, id string) error
}

// filterFlag is a list filter: a flag and its help.
type filterFlag struct {
	flag, help string
}

// dictFlag is an object field and the repeatable flag that names its keys.
type dictFlag struct {
	field, flag, what string
}

// create sends a new resource with send and shows what the server made.
func (r apiResource[T]) create(ctx context.Context, s *session, send func(*gophercloud.ServiceClient) (*T, error)) error {
	c, err := s.baremetal(ctx, r.minVersion)
	if err != nil {
		return err
	}
	created, err := send(c)
	if err != nil {
		return err
	}
	return output.WriteRecord(s.stdout, s.out, r.columns.record(*created, r.columns.names()))
}

func (r apiResource[T]) listCommand(s *session) *cobra.Command {
	var o listOptions
	values := make([]string, len(r.filters))
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List " + r.title + "s",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(r.columns.names()); err != nil {
				return err
			}
			c, err := s.baremetal(cmd.Context(), r.minVersion)
			if err != nil {
				return err
			}
			given := map[string]string{}
			for i, f := range r.filters {
				if cmd.Flags().Changed(f.flag) {
					given[f.flag] = values[i]
				}
			}
			items, err := collect(cmd.Context(), r.list(c, given, o), o, r.extract)
			if err != nil {
				return err
			}
			return output.WriteList(s.stdout, s.out, r.columns.list(items, o.shown(r.listDefault, r.columns.names())))
		},
	}
	o.register(cmd, r.noun, r.columns.names())
	for i, f := range r.filters {
		cmd.Flags().StringVar(&values[i], f.flag, "", f.help)
	}
	return cmd
}

func (r apiResource[T]) showCommand(s *session) *cobra.Command {
	var fields []string
	cmd := &cobra.Command{
		Use:   "show <" + r.noun + " uuid>",
		Short: "Show one " + r.title,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFields(fields, r.columns.names()); err != nil {
				return err
			}
			c, err := s.baremetal(cmd.Context(), r.minVersion)
			if err != nil {
				return err
			}
			got, err := r.get(cmd.Context(), c, args[0], fields)
			if err != nil {
				return err
			}
			names := r.columns.names()
			if len(fields) > 0 {
				names = fields
			}
			return output.WriteRecord(s.stdout, s.out, r.columns.record(*got, names))
		},
	}
	cmd.Flags().StringSliceVar(&fields, "fields", nil, "show only these fields (repeatable or comma-separated)")
	return cmd
}

// setCommand changes the fields scalar returns operations for (given the
// command, to see which flags were given) and the keys of r.dicts.
func (r apiResource[T]) setCommand(s *session, short string, scalar func(*cobra.Command) []patchOp) *cobra.Command {
	dicts := make([][]string, len(r.dicts))
	cmd := &cobra.Command{
		Use:   "set <" + r.noun + " uuid>",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ops := scalar(cmd)
			for i, d := range r.dicts {
				more, err := dictKeyOps(d.field, dicts[i])
				if err != nil {
					return err
				}
				ops = append(ops, more...)
			}
			return r.patch(cmd.Context(), s, args[0], ops)
		},
	}
	for i, d := range r.dicts {
		cmd.Flags().StringArrayVar(&dicts[i], d.flag, nil, "set "+d.what+" KEY=VALUE (repeatable)")
	}
	return cmd
}

func (r apiResource[T]) unsetCommand(s *session, short string) *cobra.Command {
	dicts := make([][]string, len(r.dicts))
	cmd := &cobra.Command{
		Use:   "unset <" + r.noun + " uuid>",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ops []patchOp
			for i, d := range r.dicts {
				ops = append(ops, removeKeyOps(d.field, dicts[i])...)
			}
			return r.patch(cmd.Context(), s, args[0], ops)
		},
	}
	for i, d := range r.dicts {
		cmd.Flags().StringArrayVar(&dicts[i], d.flag, nil, d.what+" KEY to remove (repeatable)")
	}
	return cmd
}

func (r apiResource[T]) patch(ctx context.Context, s *session, id string, ops []patchOp) error {
	if len(ops) == 0 {
		return errNothingToChange
	}
	c, err := s.baremetal(ctx, r.minVersion)
	if err != nil {
		return err
	}
	return r.update(ctx, c, id, ops)
}

func (r apiResource[T]) deleteCommand(s *session) *cobra.Command {
	short := "Delete " + r.title + "s"
	if r.deleteNote != "" {
		short += " (" + r.deleteNote + ")"
	}
	return &cobra.Command{
		Use:   "delete <" + r.noun + " uuid> [<" + r.noun + " uuid> ...]",
		Short: short,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := s.baremetal(cmd.Context(), r.minVersion)
			if err != nil {
				return err
			}
			return s.deleteEach(r.title, args, func(id string) error {
				return r.delete(cmd.Context(), c, id)
			})
		},
	}
}
