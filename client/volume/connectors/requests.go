package connectors

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// ListOptsBuilder renders the query of a list request; ListOpts is the
// usual implementation.
type ListOptsBuilder interface {
	ToVolumeConnectorListQuery() (string, error)
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
	if opts.Detail && len(opts.Fields) > 0 {
		return "", fmt.Errorf("list volume connectors: fields cannot be combined with detail")
	}
	q, err := gophercloud.BuildQueryString(opts)
	if err != nil {
		return "", err
	}
	return q.String(), nil
}

// List pages through GET /v1/volume/connectors.
func List(client *gophercloud.ServiceClient, opts ListOptsBuilder) pagination.Pager {
	return list(client, rootURL(client), opts)
}

// ListByNode pages through GET /v1/nodes/{node}/volume/connectors; node is
// a UUID or name.
func ListByNode(client *gophercloud.ServiceClient, node string, opts ListOptsBuilder) pagination.Pager {
	return list(client, nodeURL(client, node), opts)
}

func list(client *gophercloud.ServiceClient, url string, opts ListOptsBuilder) pagination.Pager {
	if opts != nil {
		query, err := opts.ToVolumeConnectorListQuery()
		if err != nil {
			return pagination.Pager{Err: err}
		}
		url += query
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
	q, err := gophercloud.BuildQueryString(opts)
	if err != nil {
		return "", err
	}
	return q.String(), nil
}

// Get reads one connector by UUID; opts may be nil.
func Get(ctx context.Context, client *gophercloud.ServiceClient, id string, opts GetOptsBuilder) (r GetResult) {
	url := resourceURL(client, id)
	if opts != nil {
		query, err := opts.ToVolumeConnectorGetQuery()
		if err != nil {
			r.Err = err
			return
		}
		url += query
	}
	resp, err := client.Get(ctx, url, &r.Body, &gophercloud.RequestOpts{OkCodes: []int{200}})
	_, r.Header, r.Err = gophercloud.ParseResponse(resp, err)
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

	// Type is the kind of initiator: iqn, ip, mac, wwnn, wwpn, port,
	// portgroup.
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
	body, err := opts.ToVolumeConnectorCreateMap()
	if err != nil {
		r.Err = err
		return
	}
	resp, err := client.Post(ctx, rootURL(client), body, &r.Body, &gophercloud.RequestOpts{OkCodes: []int{201}})
	_, r.Header, r.Err = gophercloud.ParseResponse(resp, err)
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
	return patchMap(opts.Op, opts.Path, opts.Value)
}

func patchMap(op UpdateOp, path string, value any) (map[string]any, error) {
	if path == "" || path[0] != '/' {
		return nil, fmt.Errorf("patch path %q must start with /", path)
	}
	switch op {
	case AddOp, ReplaceOp:
		return map[string]any{"op": op, "path": path, "value": value}, nil
	case RemoveOp:
		return map[string]any{"op": op, "path": path}, nil
	}
	return nil, fmt.Errorf("patch op %q is not add, replace or remove", op)
}

// Update sends PATCH /v1/volume/connectors/{id}. The server refuses it
// unless the owning node is powered off.
func Update(ctx context.Context, client *gophercloud.ServiceClient, id string, opts UpdateOpts) (r UpdateResult) {
	body := make([]map[string]any, len(opts))
	for i, p := range opts {
		m, err := p.ToVolumeConnectorUpdateMap()
		if err != nil {
			r.Err = err
			return
		}
		body[i] = m
	}
	resp, err := client.Patch(ctx, resourceURL(client, id), body, &r.Body, &gophercloud.RequestOpts{OkCodes: []int{200}})
	_, r.Header, r.Err = gophercloud.ParseResponse(resp, err)
	return
}

// Delete sends DELETE /v1/volume/connectors/{id}.
func Delete(ctx context.Context, client *gophercloud.ServiceClient, id string) (r DeleteResult) {
	resp, err := client.Delete(ctx, resourceURL(client, id), &gophercloud.RequestOpts{OkCodes: []int{204}})
	_, r.Header, r.Err = gophercloud.ParseResponse(resp, err)
	return
}
