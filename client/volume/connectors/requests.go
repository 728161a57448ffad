package connectors

import (
	"context"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/ferricbm/ferric/client/volume/internal/resource"
)

// ListOptsBuilder renders the query of a list request; ListOpts is the
// usual implementation.
type ListOptsBuilder interface {
	ToVolumeConnectorListQuery() (string, error)
	ToVolumeConnectorListDetailQuery() (string, error)
}

// ListOpts filters, shapes and pages a connector list.
type ListOpts struct {
	// Node restricts the list to one node (UUID or name). ListByNode
	// takes the node from its path instead.
	Node string `q:"node"`

	// Fields limits each connector to these fields (links always come
	// along). It cannot be combined with Detail.
	Fields []string `q:"fields" format:"comma-separated"`

	// Detail returns every field of each connector.
	Detail bool `q:"detail"`

	// Limit is the page size; the server caps it at its max_limit.
	Limit int `q:"limit"`

	// Marker is the UUID of the last connector already seen.
	Marker string `q:"marker"`

	// SortKey is a field to sort by (default id); SortDir is asc or desc.
	SortKey string `q:"sort_key"`
	SortDir string `q:"sort_dir"`
}

// ToVolumeConnectorListQuery formats a ListOpts into a query string.
func (opts ListOpts) ToVolumeConnectorListQuery() (string, error) {
	return resource.ListQuery("volume connectors", opts, opts.Detail, opts.Fields)
}

// ToVolumeConnectorListDetailQuery formats a ListOpts into the query of
// ListDetail, which returns every field: Fields is refused and Detail
// is not sent.
func (opts ListOpts) ToVolumeConnectorListDetailQuery() (string, error) {
	opts.Detail = false
	return resource.ListDetailQuery("volume connectors", opts, opts.Fields)
}

// List pages through GET /v1/volume/connectors.
func List(client *gophercloud.ServiceClient, opts ListOptsBuilder) pagination.Pager {
	return list(client, rootURL(client), opts, ListOptsBuilder.ToVolumeConnectorListQuery)
}

// ListDetail pages through GET /v1/volume/connectors/detail: every field
// of each connector.
func ListDetail(client *gophercloud.ServiceClient, opts ListOptsBuilder) pagination.Pager {
	return list(client, detailURL(client), opts, ListOptsBuilder.ToVolumeConnectorListDetailQuery)
}

// ListByNode pages through GET /v1/nodes/{node}/volume/connectors; node is
// a UUID or name.
func ListByNode(client *gophercloud.ServiceClient, node string, opts ListOptsBuilder) pagination.Pager {
	return list(client, nodeURL(client, node), opts, ListOptsBuilder.ToVolumeConnectorListQuery)
}

func list(client *gophercloud.ServiceClient, url string, opts ListOptsBuilder, render func(ListOptsBuilder) (string, error)) pagination.Pager {
	url, err := resource.WithQuery(url, opts, render)
	if err != nil {
		return pagination.Pager{Err: err}
	}
	return pagination.NewPager(client, url, func(r pagination.PageResult) pagination.Page {
		return ConnectorPage{pagination.LinkedPageBase{PageResult: r}}
	})
}

// GetOptsBuilder renders the query of a Get request.
type GetOptsBuilder interface {
	ToVolumeConnectorGetQuery() (string, error)
}

// GetOpts shapes the connector Get returns.
type GetOpts struct {
	// Fields limits the connector to these fields (links always come
	// along).
	Fields []string `q:"fields" format:"comma-separated"`
}

// ToVolumeConnectorGetQuery formats a GetOpts into a query string.
func (opts GetOpts) ToVolumeConnectorGetQuery() (string, error) {
	return resource.Query(opts)
}

// Get reads one connector by UUID; opts may be nil.
func Get(ctx context.Context, client *gophercloud.ServiceClient, id string, opts GetOptsBuilder) (r GetResult) {
	url, err := resource.WithQuery(resourceURL(client, id), opts, GetOptsBuilder.ToVolumeConnectorGetQuery)
	if err != nil {
		r.Err = err
		return
	}
	resource.Get(ctx, client, url, &r.Result)
	return
}

// CreateOptsBuilder renders the body of a Create request.
type CreateOptsBuilder interface {
	ToVolumeConnectorCreateMap() (map[string]any, error)
}

// CreateOpts is a new connector.
type CreateOpts struct {
	// NodeUUID is the owning node; the server accepts a UUID only.
	NodeUUID string `json:"node_uuid" required:"true"`

	// Type is the kind of initiator: iqn, ip, mac, wwnn, wwpn, net-id,
	// port or portgroup; the server refuses any other.
	Type string `json:"type" required:"true"`

	// ConnectorID is the initiator's identity in Type's format. A (Type,
	// ConnectorID) pair is unique across all nodes.
	ConnectorID string `json:"connector_id" required:"true"`

	// Extra is free-form metadata.
	Extra map[string]any `json:"extra,omitempty"`

	// UUID is the new connector's UUID; the server generates one if empty.
	UUID string `json:"uuid,omitempty"`
}

// ToVolumeConnectorCreateMap assembles the request body.
func (opts CreateOpts) ToVolumeConnectorCreateMap() (map[string]any, error) {
	return gophercloud.BuildRequestBody(opts, "")
}

// Create sends POST /v1/volume/connectors.
func Create(ctx context.Context, client *gophercloud.ServiceClient, opts CreateOptsBuilder) (r CreateResult) {
	resource.Create(ctx, client, rootURL(client), opts.ToVolumeConnectorCreateMap, &r.Result)
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
	ToVolumeConnectorUpdateMap() (map[string]any, error)
}

// UpdateOpts is the list of operations, applied in order; the server
// applies all of them or none.
type UpdateOpts []Patch

// UpdateOperation changes one path: /connector_id, /type, /node_uuid,
// /extra or /extra/<key>. Value is ignored for RemoveOp.
type UpdateOperation struct {
	Op    UpdateOp
	Path  string
	Value any
}

// ToVolumeConnectorUpdateMap renders the operation.
func (opts UpdateOperation) ToVolumeConnectorUpdateMap() (map[string]any, error) {
	return resource.PatchMap(opts.Op, opts.Path, opts.Value)
}

// Update sends PATCH /v1/volume/connectors/{id}. The server refuses it
// unless the owning node is powered off.
func Update(ctx context.Context, client *gophercloud.ServiceClient, id string, opts UpdateOpts) (r UpdateResult) {
	resource.Update(ctx, client, resourceURL(client, id), opts, Patch.ToVolumeConnectorUpdateMap, &r.Result)
	return
}

// Delete sends DELETE /v1/volume/connectors/{id}.
func Delete(ctx context.Context, client *gophercloud.ServiceClient, id string) (r DeleteResult) {
	resource.Delete(ctx, client, resourceURL(client, id), &r.Result)
	return
}
