package connectors

import (
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/ferricbm/ferric/client/nextlink"
	"github.com/ferricbm/ferric/client/volume"
	"github.com/ferricbm/ferric/client/volume/internal/resource"
)

// VolumeConnector is a connector as the API shows it. Fields not asked
// for (ListOpts.Fields, a list without Detail) keep their zero value.
type VolumeConnector struct {
	UUID        string         `json:"uuid"`
	NodeUUID    string         `json:"node_uuid"`
	Type        string         `json:"type"`
	ConnectorID string         `json:"connector_id"`
	Extra       map[string]any `json:"extra"`
	CreatedAt   time.Time      `json:"created_at"`
	// UpdatedAt is nil until the first update.
	UpdatedAt *time.Time    `json:"updated_at"`
	Links     []volume.Link `json:"links"`
}

type commonResult struct {
	gophercloud.Result
}

// Extract interprets the result as a VolumeConnector.
func (r commonResult) Extract() (*VolumeConnector, error) {
	return resource.Extract[VolumeConnector](r.Result)
}

// GetResult is the response of Get.
type GetResult struct{ commonResult }

// CreateResult is the response of Create.
type CreateResult struct{ commonResult }

// UpdateResult is the response of Update.
type UpdateResult struct{ commonResult }

// DeleteResult is the response of Delete; call ExtractErr.
type DeleteResult struct {
	gophercloud.ErrResult
}

// ConnectorPage is one page of a connector list.
type ConnectorPage struct {
	pagination.LinkedPageBase
}

// IsEmpty reports a page without connectors; a full last page is followed
// by an empty one, which ends the iteration.
func (p ConnectorPage) IsEmpty() (bool, error) {
	return resource.IsEmpty[VolumeConnector](p.PageResult, p.ResourceKey())
}

// NextPageURL is this page's request again, after the marker of the
// server's "next" link (see package nextlink for why not the link itself).
func (p ConnectorPage) NextPageURL() (string, error) {
	return nextlink.NextURL(p.PageResult)
}

// ResourceKey names the list in the page body, for AllPages.
func (p ConnectorPage) ResourceKey() string { return "connectors" }

// ExtractConnectors interprets a page (or AllPages' result) as connectors.
func ExtractConnectors(p pagination.Page) ([]VolumeConnector, error) {
	page := p.(ConnectorPage)
	return resource.Items[VolumeConnector](page.Result, page.ResourceKey())
}
