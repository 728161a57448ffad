package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/allocations"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/spf13/cobra"

	"github.com/ferricbm/ferric/client/nextlink"
)

// allocationVersion is the first microversion with allocations.
const allocationVersion = "1.52"

// allocation is the API's allocation. gophercloud's own type decodes
// extra values as strings only, and fails on any other.
type allocation struct {
	UUID           string         `json:"uuid"`
	Name           string         `json:"name"`
	ResourceClass  string         `json:"resource_class"`
	State          string         `json:"state"`
	NodeUUID       string         `json:"node_uuid"`
	LastError      string         `json:"last_error"`
	Traits         []string       `json:"traits"`
	CandidateNodes []string       `json:"candidate_nodes"`
	Extra          map[string]any `json:"extra"`
	CreatedAt      time.Time      `json:"created_at"`
	UpdatedAt      *time.Time     `json:"updated_at"`
}

// allocationCreateOpts sends extra values of any JSON type too.
type allocationCreateOpts struct {
	allocations.CreateOpts
	Extra map[string]any
}

func (o allocationCreateOpts) ToAllocationCreateMap() (map[string]any, error) {
	body, err := o.CreateOpts.ToAllocationCreateMap()
	if err == nil && o.Extra != nil {
		body["extra"] = o.Extra
	}
	return body, err
}

func getAllocation(ctx context.Context, c *gophercloud.ServiceClient, id string) (*allocation, error) {
	var a allocation
	err := allocations.Get(ctx, c, id).ExtractInto(&a)
	return &a, err
}

// allocationPage follows the server's next links (see package nextlink):
// gophercloud's looks for an "allocations_links" key that Ironic does not
// send.
type allocationPage struct {
	allocations.AllocationPage
}

func (p allocationPage) NextPageURL() (string, error) { return nextlink.NextURL(p.PageResult) }

// IsEmpty decodes with allocation: gophercloud's would fail on extra.
func (p allocationPage) IsEmpty() (bool, error) {
	items, err := p.allocations()
	return len(items) == 0, err
}

func (p allocationPage) allocations() ([]allocation, error) {
	var out []allocation
	err := p.ExtractIntoSlicePtr(&out, "allocations")
	return out, err
}

var allocationResource = apiResource[allocation]{
	noun:       "allocation",
	title:      "allocation",
	minVersion: allocationVersion,
	deleteNote: "freeing their nodes",
	columns: columns[allocation]{
		{"uuid", "UUID", func(a allocation) any { return a.UUID }},
		{"name", "Name", func(a allocation) any { return optional(a.Name) }},
		{"resource_class", "Resource Class", func(a allocation) any { return a.ResourceClass }},
		{"state", "State", func(a allocation) any { return a.State }},
		{"node_uuid", "Node UUID", func(a allocation) any { return optional(a.NodeUUID) }},
		{"last_error", "Last Error", func(a allocation) any { return optional(a.LastError) }},
		{"traits", "Traits", func(a allocation) any { return stringList(a.Traits) }},
		{"candidate_nodes", "Candidate Nodes", func(a allocation) any { return stringList(a.CandidateNodes) }},
		{"extra", "Extra", func(a allocation) any { return jsonObject(a.Extra) }},
		{"created_at", "Created At", func(a allocation) any { return timestamp(a.CreatedAt) }},
		{"updated_at", "Updated At", func(a allocation) any { return optionalTimestamp(a.UpdatedAt) }},
	},
	listDefault: []string{"uuid", "name", "resource_class", "state", "node_uuid"},
	filters: []filterFlag{
		{"node", "only the allocation of this node (UUID or name)"},
		{"resource-class", "only allocations asking for this resource class"},
		{"state", "only allocations in this state: allocating, active or error"},
	},
	// Allocations have no detailed list: every field is always sent.
	list: func(c *gophercloud.ServiceClient, filters map[string]string, o listOptions) pagination.Pager {
		key, dir, _ := o.sortKeyDir()
		return allocations.List(c, allocations.ListOpts{Node: filters["node"], ResourceClass: filters["resource-class"],
			State: allocations.AllocationState(filters["state"]), Fields: o.fields,
			Limit: o.pageSize(), Marker: o.marker, SortKey: key, SortDir: dir}).
			WithPageCreator(func(r pagination.PageResult) pagination.Page {
				return allocationPage{allocations.AllocationPage{LinkedPageBase: pagination.LinkedPageBase{PageResult: r}}}
			})
	},
	extract: func(p pagination.Page) ([]allocation, error) { return p.(allocationPage).allocations() },
	// gophercloud's Get asks for every field; show cuts them down.
	get: func(ctx context.Context, c *gophercloud.ServiceClient, id string, _ []string) (*allocation, error) {
		return getAllocation(ctx, c, id)
	},
	delete: func(ctx context.Context, c *gophercloud.ServiceClient, id string) error {
		return allocations.Delete(ctx, c, id).ExtractErr()
	},
}

func allocationCommands(s *session) *cobra.Command {
	r := allocationResource
	cmd := group("allocation", "Allocations: ask for any available node of a resource class (API 1.52+)")
	cmd.AddCommand(allocationCreateCommand(s), r.listCommand(s), r.showCommand(s), r.deleteCommand(s))
	return cmd
}

func allocationCreateCommand(s *session) *cobra.Command {
	var opts allocationCreateOpts
	var extra []string
	var wait int
	cmd := &cobra.Command{
		Use:   "create --resource-class <class>",
		Short: "Ask for an available node of a resource class (and traits), reserved by a conductor",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opts.Extra, err = keyValues("extra", extra); err != nil {
				return err
			}
			ctx := cmd.Context()
			return allocationResource.create(ctx, s, func(c *gophercloud.ServiceClient) (*allocation, error) {
				var a allocation
				if err := allocations.Create(ctx, c, opts).ExtractInto(&a); err != nil {
					return nil, err
				}
				if !waiting(cmd) {
					return &a, nil
				}
				return waitAllocation(ctx, c, a.UUID, wait)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.ResourceClass, "resource-class", "", "resource class the node must have")
	f.StringArrayVar(&opts.Traits, "trait", nil, "trait the node must have (repeatable)")
	f.StringArrayVar(&opts.CandidateNodes, "candidate-node", nil, "consider only this node, UUID or name (repeatable)")
	f.StringVar(&opts.Name, "name", "", "unique name of the allocation")
	f.StringVar(&opts.UUID, "uuid", "", "UUID of the new allocation")
	f.StringArrayVar(&extra, "extra", nil, "extra KEY=VALUE (repeatable)")
	waitFlag(cmd, "the allocation is active or failed", &wait)
	_ = cmd.MarkFlagRequired("resource-class")
	return cmd
}

// waitAllocation reads the allocation until it has left "allocating". A
// failed allocation is an error.
func waitAllocation(ctx context.Context, c *gophercloud.ServiceClient, id string, seconds int) (*allocation, error) {
	var a *allocation
	err := waitFor(ctx, seconds, "allocation "+id+" is still allocating", func(ctx context.Context) (bool, error) {
		var err error
		if a, err = getAllocation(ctx, c, id); err != nil {
			return false, err
		}
		if a.State == string(allocations.Error) {
			return false, fmt.Errorf("allocation %s failed: %s", id, a.LastError)
		}
		return a.State != string(allocations.Allocating), nil
	})
	return a, err
}
