// Package resource holds the request plumbing and result decoding that
// the volume connectors and targets packages share: the two collections
// differ only in their paths, names and fields, so each package keeps its
// own typed API and delegates the HTTP work here.
package resource

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// Query renders opts' q-tagged fields as a query string ("" for none).
func Query(opts any) (string, error) {
	q, err := gophercloud.BuildQueryString(opts)
	if err != nil {
		return "", err
	}
	return q.String(), nil
}

// ListQuery is Query for list options, which cannot ask for both every
// field (detail) and chosen fields; collection names the list in the error.
func ListQuery(collection string, opts any, detail bool, fields []string) (string, error) {
	if detail && len(fields) > 0 {
		return "", fmt.Errorf("list %s: fields cannot be combined with detail", collection)
	}
	return Query(opts)
}

// ListDetailQuery is Query for the options of a /detail list, which
// returns every field and so takes no field selection.
func ListDetailQuery(collection string, opts any, fields []string) (string, error) {
	if len(fields) > 0 {
		return "", fmt.Errorf("list %s in detail: fields is not a valid option", collection)
	}
	return Query(opts)
}

// WithQuery appends the query render makes of opts to url; a nil opts
// (an unset builder interface) adds nothing.
func WithQuery[B any](url string, opts B, render func(B) (string, error)) (string, error) {
	if any(opts) == nil {
		return url, nil
	}
	query, err := render(opts)
	if err != nil {
		return "", err
	}
	return url + query, nil
}

// Get reads url into r.
func Get(ctx context.Context, client *gophercloud.ServiceClient, url string, r *gophercloud.Result) {
	//nolint:bodyclose // gophercloud reads and closes the body (no KeepResponseBody)
	resp, err := client.Get(ctx, url, &r.Body, &gophercloud.RequestOpts{OkCodes: []int{http.StatusOK}})
	_, r.Header, r.Err = gophercloud.ParseResponse(resp, err)
}

// Create posts the body render makes to url into r.
func Create(ctx context.Context, client *gophercloud.ServiceClient, url string, render func() (map[string]any, error), r *gophercloud.Result) {
	body, err := render()
	if err != nil {
		r.Err = err
		return
	}
	//nolint:bodyclose // gophercloud reads and closes the body (no KeepResponseBody)
	resp, err := client.Post(ctx, url, body, &r.Body, &gophercloud.RequestOpts{OkCodes: []int{http.StatusCreated}})
	_, r.Header, r.Err = gophercloud.ParseResponse(resp, err)
}

// Update sends the patch operations, each rendered by render, to url.
func Update[P any](ctx context.Context, client *gophercloud.ServiceClient, url string, ops []P, render func(P) (map[string]any, error), r *gophercloud.Result) {
	body := make([]map[string]any, len(ops))
	for i, op := range ops {
		m, err := render(op)
		if err != nil {
			r.Err = err
			return
		}
		body[i] = m
	}
	//nolint:bodyclose // gophercloud reads and closes the body (no KeepResponseBody)
	resp, err := client.Patch(ctx, url, body, &r.Body, &gophercloud.RequestOpts{OkCodes: []int{http.StatusOK}})
	_, r.Header, r.Err = gophercloud.ParseResponse(resp, err)
}

// Delete deletes url.
func Delete(ctx context.Context, client *gophercloud.ServiceClient, url string, r *gophercloud.Result) {
	//nolint:bodyclose // gophercloud reads and closes the body (no KeepResponseBody)
	resp, err := client.Delete(ctx, url, &gophercloud.RequestOpts{OkCodes: []int{http.StatusNoContent}})
	_, r.Header, r.Err = gophercloud.ParseResponse(resp, err)
}

// PatchMap renders one JSON patch operation; op is add, replace or
// remove (remove carries no value).
func PatchMap[Op ~string](op Op, path string, value any) (map[string]any, error) {
	if path == "" || path[0] != '/' {
		return nil, fmt.Errorf("patch path %q must start with /", path)
	}
	switch op {
	case "add", "replace":
		return map[string]any{"op": op, "path": path, "value": value}, nil
	case "remove":
		return map[string]any{"op": op, "path": path}, nil
	}
	return nil, fmt.Errorf("patch op %q is not add, replace or remove", op)
}

// Extract decodes a single-resource result.
func Extract[T any](r gophercloud.Result) (*T, error) {
	var v T
	err := r.ExtractInto(&v)
	return &v, err
}

// Items decodes the list named key of a page (or of AllPages' result).
func Items[T any](r gophercloud.Result, key string) ([]T, error) {
	var items []T
	err := r.ExtractIntoSlicePtr(&items, key)
	return items, err
}

// IsEmpty reports a page without items; a full last page is followed by
// an empty one, which ends the iteration.
func IsEmpty[T any](p pagination.PageResult, key string) (bool, error) {
	if p.StatusCode == http.StatusNoContent {
		return true, nil
	}
	items, err := Items[T](p.Result, key)
	return len(items) == 0, err
}
