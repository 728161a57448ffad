package targets

import (
	"context"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/ferricbm/ferric/client/volume/internal/resource"
)

// ListOptsBuilder renders the query of a list request; ListOpts is the
// usual implementation.
type ListOptsBuilder interface {
	ToVolumeTargetListQuery() (string, error)
	ToVolumeTargetListDetailQuery() (string, error)
}

// ListOpts filters, shapes and pages a target list.
type ListOpts struct {
	// Node restricts the list to one node (UUID or name). ListByNode
	// takes the node from its path instead.
	Node string `q:"node"`

	// Fields limits each target to these fields (links always come
	// along). It cannot be combined with Detail.
	Fields []string `q:"fields" format:"comma-separated"`

	// Detail returns every field of each target.
	Detail bool `q:"detail"`

	// Limit is the page size; the server caps it at its max_limit.
	Limit int `q:"limit"`

	// Marker is the UUID of the last target already seen.
	Marker string `q:"marker"`

	// SortKey is a field to sort by (default id); SortDir is asc or desc.
	SortKey string `q:"sort_key"`
	SortDir string `q:"sort_dir"`
}

// ToVolumeTargetListQuery formats a ListOpts into a query string.
func (opts ListOpts) ToVolumeTargetListQuery() (string, error) {
	return resource.ListQuery("volume targets", opts, opts.Detail, opts.Fields)
}

// ToVolumeTargetListDetailQuery formats a ListOpts into the query of
// ListDetail, which returns every field: Fields is refused and Detail
// is not sent.
func (opts ListOpts) ToVolumeTargetListDetailQuery() (string, error) {
	opts.Detail = false
	return resource.ListDetailQuery("volume targets", opts, opts.Fields)
}

// List pages through GET /v1/volume/targets.
func List(client *gophercloud.ServiceClient, opts ListOptsBuilder) pagination.Pager {
	return list(client, rootURL(client), opts, ListOptsBuilder.ToVolumeTargetListQuery)
}

// ListDetail pages through GET /v1/volume/targets/detail: every field
// of each target.
func ListDetail(client *gophercloud.ServiceClient, opts ListOptsBuilder) pagination.Pager {
	return list(client, detailURL(client), opts, ListOptsBuilder.ToVolumeTargetListDetailQuery)
}

// ListByNode pages through GET /v1/nodes/{node}/volume/targets; node is
// a UUID or name.
func ListByNode(client *gophercloud.ServiceClient, node string, opts ListOptsBuilder) pagination.Pager {
	return list(client, nodeURL(client, node), opts, ListOptsBuilder.ToVolumeTargetListQuery)
}

func list(client *gophercloud.ServiceClient, url string, opts ListOptsBuilder, render func(ListOptsBuilder) (string, error)) pagination.Pager {
	url, err := resource.WithQuery(url, opts, render)
	if err != nil {
		return pagination.Pager{Err: err}
	}
	return pagination.NewPager(client, url, func(r pagination.PageResult) pagination.Page {
		return TargetPage{pagination.LinkedPageBase{PageResult: r}}
	})
}

// GetOptsBuilder renders the query of a Get request.
type GetOptsBuilder interface {
	ToVolumeTargetGetQuery() (string, error)
}

// GetOpts shapes the target Get returns.
type GetOpts struct {
	// Fields limits the target to these fields (links always come
	// along).
	Fields []string `q:"fields" format:"comma-separated"`
}

// ToVolumeTargetGetQuery formats a GetOpts into a query string.
func (opts GetOpts) ToVolumeTargetGetQuery() (string, error) {
	return resource.Query(opts)
}

// Get reads one target by UUID; opts may be nil.
func Get(ctx context.Context, client *gophercloud.ServiceClient, id string, opts GetOptsBuilder) (r GetResult) {
	url, err := resource.WithQuery(resourceURL(client, id), opts, GetOptsBuilder.ToVolumeTargetGetQuery)
	if err != nil {
		r.Err = err
		return
	}
	resource.Get(ctx, client, url, &r.Result)
	return
}

// CreateOptsBuilder renders the body of a Create request.
type CreateOptsBuilder interface {
	ToVolumeTargetCreateMap() (map[string]any, error)
}

// CreateOpts is a new target.
type CreateOpts struct {
	// NodeUUID is the owning node; the server accepts a UUID only.
	NodeUUID string `json:"node_uuid" required:"true"`

	// VolumeType is the kind of volume, e.g. iscsi or fibre_channel.
	VolumeType string `json:"volume_type" required:"true"`

	// BootIndex orders the node's volumes; 0 is the boot volume. It is
	// unique per node. Always sent, 0 included.
	BootIndex int `json:"boot_index"`

	// VolumeID is the storage service's id of the volume.
	VolumeID string `json:"volume_id" required:"true"`

	// Properties is the connection information (target_iqn,
	// target_portal, target_lun, auth_* ...).
	Properties map[string]any `json:"properties,omitempty"`

	// Extra is free-form metadata.
	Extra map[string]any `json:"extra,omitempty"`

	// UUID is the new target's UUID; the server generates one if empty.
	UUID string `json:"uuid,omitempty"`
}

// ToVolumeTargetCreateMap assembles the request body.
func (opts CreateOpts) ToVolumeTargetCreateMap() (map[string]any, error) {
	return gophercloud.BuildRequestBody(opts, "")
}

// Create sends POST /v1/volume/targets.
func Create(ctx context.Context, client *gophercloud.ServiceClient, opts CreateOptsBuilder) (r CreateResult) {
	resource.Create(ctx, client, rootURL(client), opts.ToVolumeTargetCreateMap, &r.Result)
	return
}

// UpdateOp is a JSON patch operation the server accepts.
type UpdateOp string

const (
	AddOp     UpdateOp = "add"
	ReplaceOp UpdateOp = "replace"
	RemoveOp  UpdateOp = "remove"
)

// Patch is one operation of an update.
type Patch interface {
	ToVolumeTargetUpdateMap() (map[string]any, error)
}

// UpdateOpts is the list of operations, applied in order; the server
// applies all of them or none.
type UpdateOpts []Patch

// UpdateOperation changes one path: /boot_index, /node_uuid,
// /volume_id, /volume_type, /properties[/<key>] or /extra[/<key>]. Value
// is ignored for RemoveOp.
type UpdateOperation struct {
	Op    UpdateOp
	Path  string
	Value any
}

// ToVolumeTargetUpdateMap renders the operation.
func (opts UpdateOperation) ToVolumeTargetUpdateMap() (map[string]any, error) {
	return resource.PatchMap(opts.Op, opts.Path, opts.Value)
}

// Update sends PATCH /v1/volume/targets/{id}. The server refuses it
// unless the owning node is powered off.
func Update(ctx context.Context, client *gophercloud.ServiceClient, id string, opts UpdateOpts) (r UpdateResult) {
	resource.Update(ctx, client, resourceURL(client, id), opts, Patch.ToVolumeTargetUpdateMap, &r.Result)
	return
}

// Delete sends DELETE /v1/volume/targets/{id}.
func Delete(ctx context.Context, client *gophercloud.ServiceClient, id string) (r DeleteResult) {
	resource.Delete(ctx, client, resourceURL(client, id), &r.Result)
	return
}
