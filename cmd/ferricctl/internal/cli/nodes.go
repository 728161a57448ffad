package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/spf13/cobra"

	"github.com/ferricbm/ferric/client/nextlink"
	"github.com/ferricbm/ferric/cmd/ferricctl/internal/output"
)

// Nodes are shown from the API's JSON as received, so every field of the
// negotiated version appears, secrets masked by the server, without this
// client having to know them all.
type nodeJSON = map[string]any

// nodeLinkFields are sub-resource links, not node data.
var nodeLinkFields = []string{"links", "ports", "portgroups", "states", "volume"}

var nodeListDefault = []string{"uuid", "name", "instance_uuid", "power_state", "provision_state", "maintenance"}

var nodeLabels = map[string]string{"provision_state": "Provisioning State", "target_provision_state": "Target Provisioning State"}

// nodeLabel is a field's list heading: "instance_uuid" -> "Instance UUID".
func nodeLabel(field string) string {
	if l, ok := nodeLabels[field]; ok {
		return l
	}
	words := strings.Split(field, "_")
	for i, w := range words {
		switch w {
		case "uuid", "id", "raid", "bios":
			words[i] = strings.ToUpper(w)
		default:
			if w != "" {
				words[i] = strings.ToUpper(w[:1]) + w[1:]
			}
		}
	}
	return strings.Join(words, " ")
}

// nodeFields are the data fields of the given nodes, sorted.
func nodeFields(items []nodeJSON) []string {
	var out []string
	for _, n := range items {
		for k := range n {
			if !slices.Contains(nodeLinkFields, k) && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

func nodeList(items []nodeJSON, fields []string) output.List {
	l := output.List{Rows: make([][]any, len(items))}
	for _, f := range fields {
		l.Headings = append(l.Headings, nodeLabel(f))
	}
	for i, n := range items {
		row := make([]any, len(fields))
		for j, f := range fields {
			row[j] = n[f]
		}
		l.Rows[i] = row
	}
	return l
}

func nodeRecord(n nodeJSON, fields []string) output.Record {
	if len(fields) == 0 {
		fields = nodeFields([]nodeJSON{n})
	} else {
		fields = slices.Sorted(slices.Values(fields))
	}
	r := output.Record{Fields: fields, Values: make([]any, len(fields))}
	for i, f := range fields {
		r.Values[i] = n[f]
	}
	return r
}

// nodePage follows the server's next links correctly (see package
// nextlink); gophercloud's own NodePage would drop filters.
type nodePage struct {
	nodes.NodePage
}

func (p nodePage) NextPageURL() (string, error) { return nextlink.NextURL(p.PageResult) }

func nodeCommands(s *session) *cobra.Command {
	cmd := group("node", "Bare metal nodes")
	power := group("power", "Power a node on or off")
	power.AddCommand(nodePower(s, "on", nodes.PowerOn), nodePower(s, "off", nodes.PowerOff))
	cmd.AddCommand(nodeCreate(s), nodeListCmd(s), nodeShow(s), nodeSet(s), nodeDelete(s), power, nodeEraseRecord(s),
		nodeProvision(s, "manage", nodes.TargetManage, "Move a node from enroll to manageable, verifying its driver settings"),
		nodeProvision(s, "provide", nodes.TargetProvide, "Make a manageable node available (cleaning it first when configured)"),
		nodeProvision(s, "deploy", nodes.TargetActive, "Deploy an available node"),
		nodeProvision(s, "undeploy", nodes.TargetDeleted, "Tear down a deployed node (its volume targets are removed)"),
		nodeProvision(s, "inspect", nodes.TargetInspect, "Inspect a manageable node's hardware"),
		nodeProvision(s, "abort", nodes.TargetAbort, "Abort the cleaning, inspection or rescue a node is waiting in"),
		nodeClean(s), nodeMaintenance(s))
	return cmd
}

// interfaceFlags are the *_interface fields create and set accept.
var interfaceFlags = []string{"bios", "boot", "console", "deploy", "inspect", "management", "network", "power", "raid", "rescue", "storage", "vendor"}

// nodeScalars are the string flags shared by create and set, by field.
type nodeScalars map[string]*string

func registerNodeScalars(cmd *cobra.Command, v nodeScalars) {
	f := cmd.Flags()
	for _, field := range []string{"name", "driver", "resource_class", "conductor_group", "owner"} {
		v[field] = new(string)
		f.StringVar(v[field], strings.ReplaceAll(field, "_", "-"), "", "node "+strings.ReplaceAll(field, "_", " "))
	}
	for _, iface := range interfaceFlags {
		field := iface + "_interface"
		v[field] = new(string)
		f.StringVar(v[field], iface+"-interface", "", iface+" interface implementation")
	}
}

func nodeCreate(s *session) *cobra.Command {
	scalars := nodeScalars{}
	var uuid string
	var driverInfo, properties, extra []string
	cmd := &cobra.Command{
		Use:   "create --driver <driver>",
		Short: "Enroll a node",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := nodes.CreateOpts{UUID: uuid, Name: *scalars["name"], Driver: *scalars["driver"],
				ResourceClass: *scalars["resource_class"], ConductorGroup: *scalars["conductor_group"], Owner: *scalars["owner"],
				BIOSInterface: *scalars["bios_interface"], BootInterface: *scalars["boot_interface"],
				ConsoleInterface: *scalars["console_interface"], DeployInterface: *scalars["deploy_interface"],
				InspectInterface: *scalars["inspect_interface"], ManagementInterface: *scalars["management_interface"],
				NetworkInterface: *scalars["network_interface"], PowerInterface: *scalars["power_interface"],
				RAIDInterface: *scalars["raid_interface"], RescueInterface: *scalars["rescue_interface"],
				StorageInterface: *scalars["storage_interface"], VendorInterface: *scalars["vendor_interface"]}
			var err error
			if opts.DriverInfo, err = keyValues("driver-info", driverInfo); err != nil {
				return err
			}
			if opts.Properties, err = keyValues("property", properties); err != nil {
				return err
			}
			if opts.Extra, err = keyValues("extra", extra); err != nil {
				return err
			}
			c, err := s.baremetal(cmd.Context(), "")
			if err != nil {
				return err
			}
			r := nodes.Create(cmd.Context(), c, opts)
			if r.Err != nil {
				return r.Err
			}
			return s.writeNode(r.Result)
		},
	}
	registerNodeScalars(cmd, scalars)
	f := cmd.Flags()
	f.StringVar(&uuid, "uuid", "", "UUID of the new node")
	f.StringArrayVar(&driverInfo, "driver-info", nil, "driver_info KEY=VALUE (repeatable)")
	f.StringArrayVar(&properties, "property", nil, "properties KEY=VALUE (repeatable)")
	f.StringArrayVar(&extra, "extra", nil, "extra KEY=VALUE (repeatable)")
	_ = cmd.MarkFlagRequired("driver")
	return cmd
}

// writeNode prints a node response body as received.
func (s *session) writeNode(r gophercloud.Result) error {
	var n nodeJSON
	if err := r.ExtractInto(&n); err != nil {
		return err
	}
	return output.WriteRecord(s.stdout, s.out, nodeRecord(n, nil))
}

func nodeListCmd(s *session) *cobra.Command {
	var o listOptions
	var filter nodes.ListOpts
	var provisionState string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List nodes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(nil); err != nil {
				return err
			}
			c, err := s.baremetal(cmd.Context(), "")
			if err != nil {
				return err
			}
			opts := filter
			opts.ProvisionState = nodes.ProvisionState(provisionState)
			opts.Fields, opts.Limit, opts.Marker = o.fields, o.pageSize(), o.marker
			opts.SortKey, opts.SortDir, _ = o.sortKeyDir()
			pager := nodes.List(c, opts)
			if o.long {
				pager = nodes.ListDetail(c, opts)
			}
			pager = pager.WithPageCreator(func(r pagination.PageResult) pagination.Page {
				return nodePage{nodes.NodePage{LinkedPageBase: pagination.LinkedPageBase{PageResult: r}}}
			})
			items, err := collect(cmd.Context(), pager, o, func(p pagination.Page) ([]nodeJSON, error) {
				var page []nodeJSON
				err := p.(nodePage).ExtractIntoSlicePtr(&page, "nodes")
				return page, err
			})
			if err != nil {
				return err
			}
			return output.WriteList(s.stdout, s.out, nodeList(items, o.shown(nodeListDefault, nodeFields(items))))
		},
	}
	o.register(cmd, "node", nil)
	f := cmd.Flags()
	f.BoolVar(&filter.Maintenance, "maintenance", false, "only nodes in maintenance")
	f.BoolVar(&filter.Associated, "associated", false, "only nodes with an instance")
	f.StringVar(&provisionState, "provision-state", "", "only nodes in this provision state")
	f.StringVar(&filter.Driver, "driver", "", "only nodes of this driver")
	f.StringVar(&filter.ResourceClass, "resource-class", "", "only nodes of this resource class")
	f.StringVar(&filter.ConductorGroup, "conductor-group", "", "only nodes of this conductor group")
	f.StringVar(&filter.Owner, "owner", "", "only nodes of this owner")
	return cmd
}

func nodeShow(s *session) *cobra.Command {
	var fields []string
	cmd := &cobra.Command{
		Use:   "show <node>",
		Short: "Show a node (by UUID or name)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := s.getNode(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return output.WriteRecord(s.stdout, s.out, nodeRecord(n, fields))
		},
	}
	cmd.Flags().StringSliceVar(&fields, "fields", nil, "show only these fields (repeatable or comma-separated)")
	return cmd
}

// getNode reads a node, by UUID or name, as the API sent it.
func (s *session) getNode(ctx context.Context, id string) (nodeJSON, error) {
	c, err := s.baremetal(ctx, "")
	if err != nil {
		return nil, err
	}
	r := nodes.Get(ctx, c, id)
	if r.Err != nil {
		return nil, r.Err
	}
	// gophercloud's node results only decode into structs.
	var n nodeJSON
	if err := r.Result.ExtractInto(&n); err != nil {
		return nil, err
	}
	return n, nil
}

func nodeSet(s *session) *cobra.Command {
	scalars := nodeScalars{}
	var instanceUUID string
	dicts := map[string]*[]string{"driver_info": new([]string), "properties": new([]string), "extra": new([]string), "instance_info": new([]string)}
	cmd := &cobra.Command{
		Use:   "set <node>",
		Short: "Change node fields",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var patch nodes.UpdateOpts
			fields := make([]string, 0, len(scalars))
			for field := range scalars {
				fields = append(fields, field)
			}
			slices.Sort(fields)
			for _, field := range fields {
				if cmd.Flags().Changed(strings.ReplaceAll(field, "_", "-")) {
					patch = append(patch, nodes.UpdateOperation{Op: nodes.ReplaceOp, Path: "/" + field, Value: *scalars[field]})
				}
			}
			if cmd.Flags().Changed("instance-uuid") {
				patch = append(patch, nodes.UpdateOperation{Op: nodes.ReplaceOp, Path: "/instance_uuid", Value: instanceUUID})
			}
			for _, field := range []string{"driver_info", "properties", "extra", "instance_info"} {
				ops, err := dictKeyOps(field, *dicts[field])
				if err != nil {
					return err
				}
				for _, op := range ops {
					patch = append(patch, nodes.UpdateOperation{Op: nodes.UpdateOp(op.op), Path: op.path, Value: op.value})
				}
			}
			if len(patch) == 0 {
				return errNothingToChange
			}
			c, err := s.baremetal(cmd.Context(), "")
			if err != nil {
				return err
			}
			return nodes.Update(cmd.Context(), c, args[0], patch).Err
		},
	}
	registerNodeScalars(cmd, scalars)
	f := cmd.Flags()
	f.StringVar(&instanceUUID, "instance-uuid", "", "UUID of the instance on the node")
	f.StringArrayVar(dicts["driver_info"], "driver-info", nil, "set driver_info KEY=VALUE (repeatable)")
	f.StringArrayVar(dicts["properties"], "property", nil, "set properties KEY=VALUE (repeatable)")
	f.StringArrayVar(dicts["extra"], "extra", nil, "set extra KEY=VALUE (repeatable)")
	f.StringArrayVar(dicts["instance_info"], "instance-info", nil, "set instance_info KEY=VALUE (repeatable)")
	return cmd
}

func nodeDelete(s *session) *cobra.Command {
	return &cobra.Command{
		Use:   "delete <node> [<node> ...]",
		Short: "Delete nodes (by UUID or name)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := s.baremetal(cmd.Context(), "")
			if err != nil {
				return err
			}
			return s.deleteEach("node", args, func(id string) error {
				return nodes.Delete(cmd.Context(), c, id).ExtractErr()
			})
		},
	}
}

// provisionEnds is the state each provisioning verb's work ends in when it
// succeeds; an abort ends wherever the aborted work leaves the node.
var provisionEnds = map[nodes.TargetProvisionState]string{
	nodes.TargetManage: "manageable", nodes.TargetProvide: "available", nodes.TargetActive: "active",
	nodes.TargetDeleted: "available", nodes.TargetInspect: "manageable", nodes.TargetClean: "manageable", nodes.TargetAbort: "",
}

func nodeProvision(s *session, verb string, target nodes.TargetProvisionState, short string) *cobra.Command {
	var wait int
	cmd := &cobra.Command{
		Use:   verb + " <node>",
		Short: short,
		Args:  cobra.ExactArgs(1),
	}
	cmd.RunE = s.onNode(func(ctx context.Context, c *gophercloud.ServiceClient, node string) error {
		return s.provision(ctx, cmd, c, node, nodes.ProvisionStateOpts{Target: target}, wait)
	})
	waitFlag(cmd, "the node rests, showing its progress", &wait)
	return cmd
}

// provision asks for a provisioning change and, with --wait, follows it
// until the node rests.
func (s *session) provision(ctx context.Context, cmd *cobra.Command, c *gophercloud.ServiceClient, node string, opts nodes.ProvisionStateOpts, wait int) error {
	if err := nodes.ChangeProvisionState(ctx, c, node, opts).ExtractErr(); err != nil {
		return err
	}
	if !waiting(cmd) {
		return nil
	}
	return s.waitNode(ctx, node, provisionEnds[opts.Target], wait)
}

// onNode runs call on the node the command's argument names.
func (s *session) onNode(call func(ctx context.Context, c *gophercloud.ServiceClient, node string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := s.baremetal(cmd.Context(), "")
		if err != nil {
			return err
		}
		return call(cmd.Context(), c, args[0])
	}
}

func nodeClean(s *session) *cobra.Command {
	var steps string
	var wait int
	cmd := &cobra.Command{
		Use:   "clean <node> --clean-steps <json or @file>",
		Short: "Clean a manageable node with the given steps (manual cleaning)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := cleanSteps(steps)
			if err != nil {
				return err
			}
			return s.onNode(func(ctx context.Context, c *gophercloud.ServiceClient, node string) error {
				return s.provision(ctx, cmd, c, node, nodes.ProvisionStateOpts{Target: nodes.TargetClean, CleanSteps: list}, wait)
			})(cmd, args)
		},
	}
	waitFlag(cmd, "the clean ends, showing its progress", &wait)
	cmd.Flags().StringVar(&steps, "clean-steps", "",
		`the steps to run, in order, as a JSON list, e.g. '[{"interface": "deploy", "step": "erase_devices_metadata"}]', or @FILE holding that list`)
	_ = cmd.MarkFlagRequired("clean-steps")
	return cmd
}

// cleanSteps reads --clean-steps. Keys other than interface, step and args
// are refused here rather than dropped unseen; the server judges the rest.
func cleanSteps(arg string) ([]nodes.CleanStep, error) {
	data := []byte(arg)
	if name, ok := strings.CutPrefix(arg, "@"); ok {
		var err error
		if data, err = os.ReadFile(name); err != nil {
			return nil, fmt.Errorf("--clean-steps: %w", err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var steps []nodes.CleanStep
	if err := dec.Decode(&steps); err != nil {
		return nil, fmt.Errorf("--clean-steps: not a JSON list of steps (objects with interface, step and args): %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("--clean-steps: unexpected data after the JSON list")
	}
	if len(steps) == 0 {
		return nil, errors.New("--clean-steps: give at least one step")
	}
	return steps, nil
}

func nodeMaintenance(s *session) *cobra.Command {
	var reason string
	set := &cobra.Command{
		Use:   "set <node>",
		Short: "Put a node in maintenance",
		Args:  cobra.ExactArgs(1),
		RunE: s.onNode(func(ctx context.Context, c *gophercloud.ServiceClient, node string) error {
			return nodes.SetMaintenance(ctx, c, node, nodes.MaintenanceOpts{Reason: reason}).ExtractErr()
		}),
	}
	set.Flags().StringVar(&reason, "reason", "", "why, shown as the node's maintenance_reason")
	unset := &cobra.Command{
		Use:   "unset <node>",
		Short: "Take a node out of maintenance (clearing its fault)",
		Args:  cobra.ExactArgs(1),
		RunE: s.onNode(func(ctx context.Context, c *gophercloud.ServiceClient, node string) error {
			return nodes.UnsetMaintenance(ctx, c, node).ExtractErr()
		}),
	}
	cmd := group("maintenance", "Put a node in or out of maintenance")
	cmd.AddCommand(set, unset)
	return cmd
}

func nodePower(s *session, verb string, target nodes.TargetPowerState) *cobra.Command {
	var timeout int
	cmd := &cobra.Command{
		Use:   verb + " <node>",
		Short: "Power a node " + verb,
		Args:  cobra.ExactArgs(1),
		RunE: s.onNode(func(ctx context.Context, c *gophercloud.ServiceClient, node string) error {
			return nodes.ChangePowerState(ctx, c, node, nodes.PowerStateOpts{Target: target, Timeout: timeout}).ExtractErr()
		}),
	}
	cmd.Flags().IntVar(&timeout, "power-timeout", 0, "seconds to wait for the power state change (API 1.27+)")
	return cmd
}
