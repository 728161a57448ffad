package volume

import (
	"context"
	"net/url"

	"github.com/gophercloud/gophercloud/v2"
)

// MinMicroversion is the first microversion with the volume API.
const MinMicroversion = "1.32"

// Link is one entry of a resource's links: rel "self" (versioned URL) or
// "bookmark" (unversioned).
type Link struct {
	Href string `json:"href"`
	Rel  string `json:"rel"`
}

// Volume is the root document of /v1/volume or /v1/nodes/{n}/volume:
// links to itself and to the connector and target collections.
type Volume struct {
	Links      []Link `json:"links"`
	Connectors []Link `json:"connectors"`
	Targets    []Link `json:"targets"`
}

// GetResult is the response of Get and GetByNode.
type GetResult struct {
	gophercloud.Result
}

// Extract interprets a GetResult as a Volume.
func (r GetResult) Extract() (*Volume, error) {
	var v Volume
	err := r.ExtractInto(&v)
	return &v, err
}

// Get reads GET /v1/volume.
func Get(ctx context.Context, client *gophercloud.ServiceClient) (r GetResult) {
	resp, err := client.Get(ctx, client.ServiceURL("volume"), &r.Body, &gophercloud.RequestOpts{OkCodes: []int{200}})
	_, r.Header, r.Err = gophercloud.ParseResponse(resp, err)
	return
}

// GetByNode reads GET /v1/nodes/{node}/volume; node is a UUID or name.
func GetByNode(ctx context.Context, client *gophercloud.ServiceClient, node string) (r GetResult) {
	resp, err := client.Get(ctx, client.ServiceURL("nodes", url.PathEscape(node), "volume"), &r.Body, &gophercloud.RequestOpts{OkCodes: []int{200}})
	_, r.Header, r.Err = gophercloud.ParseResponse(resp, err)
	return
}
