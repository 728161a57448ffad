// Package nextlink follows the "next" link of Bare Metal API list pages.
// The volume packages of this module use it; a gophercloud baremetal
// pager (nodes, ports, ...) can be made to use it with
// pagination.Pager.WithPageCreator and a page type whose NextPageURL
// calls NextURL.
//
// The server puts a full URL in "next" when a page is full. Taken as is,
// that URL is wrong in ways a client must not inherit: it is built from
// the server's configured public endpoint (which may not be the address
// the client reaches it on), upstream drops filters such as node=, and for
// node-scoped lists (/v1/nodes/{n}/volume/...) it points at the global
// collection, so following it verbatim lists other nodes' records. Only
// the marker in it is meaningful: the next page is the current request
// again, starting after that marker.
package nextlink

import (
	"fmt"
	"net/url"

	"github.com/gophercloud/gophercloud/v2/pagination"
)

// NextURL returns the URL of the page after current, or "" when current
// has no "next" link. It is current's own request URL with the marker
// replaced by the one in "next".
func NextURL(current pagination.PageResult) (string, error) {
	body, ok := current.Body.(map[string]any)
	if !ok {
		return "", fmt.Errorf("list page: unexpected body type %T", current.Body)
	}
	var raw string
	switch v := body["next"].(type) {
	case nil:
		return "", nil
	case string:
		raw = v
	default:
		return "", fmt.Errorf("list page: \"next\" is a %T, not a string", v)
	}
	if raw == "" {
		return "", nil
	}
	next, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("list page: malformed next link: %w", err)
	}
	marker := next.Query().Get("marker")
	if marker == "" {
		return "", fmt.Errorf("list page: next link %q carries no marker", raw)
	}
	u := current.URL
	q := u.Query()
	if q.Get("marker") == marker {
		// A server answering the same marker again would loop forever.
		return "", nil
	}
	q.Set("marker", marker)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
