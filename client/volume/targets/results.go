package targets

import (
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/ferricbm/ferric/client/nextlink"
	"github.com/ferricbm/ferric/client/volume"
	"github.com/ferricbm/ferric/client/volume/internal/resource"
)

// VolumeTarget is a target as the API shows it. Fields not asked
// for (ListOpts.Fields, a list without Detail) keep their zero value.
type VolumeTarget struct {
	UUID       string         `json:"uuid"`
	NodeUUID   string         `json:"node_uuid"`
	VolumeType string         `json:"volume_type"`
	BootIndex  int            `json:"boot_index"`
	VolumeID   string         `json:"volume_id"`
	Properties map[string]any `json:"properties"`
	Extra      map[string]any `json:"extra"`
	CreatedAt  time.Time      `json:"created_at"`
	// UpdatedAt is nil until the first update.
	UpdatedAt *time.Time    `json:"updated_at"`
	Links     []volume.Link `json:"links"`
}

type commonResult struct {
	gophercloud.Result
}

// Extract interprets the result as a VolumeTarget.
func (r commonResult) Extract() (*VolumeTarget, error) {
	return resource.Extract[VolumeTarget](r.Result)
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

// TargetPage is one page of a target list.
type TargetPage struct {
	pagination.LinkedPageBase
}

// IsEmpty reports a page without targets; a full last page is followed
// by an empty one, which ends the iteration.
func (p TargetPage) IsEmpty() (bool, error) {
	return resource.IsEmpty[VolumeTarget](p.PageResult, p.ResourceKey())
}

// NextPageURL is this page's request again, after the marker of the
// server's "next" link (see package nextlink for why not the link itself).
func (p TargetPage) NextPageURL() (string, error) {
	return nextlink.NextURL(p.PageResult)
}

// ResourceKey names the list in the page body, for AllPages.
func (p TargetPage) ResourceKey() string { return "targets" }

// ExtractTargets interprets a page (or AllPages' result) as targets.
func ExtractTargets(p pagination.Page) ([]VolumeTarget, error) {
	page := p.(TargetPage)
	return resource.Items[VolumeTarget](page.Result, page.ResourceKey())
}
