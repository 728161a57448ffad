package image

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrDestinationRefused is a download the conductor would not make: the
// server's address is one a node's owner must not reach through the
// conductor (its loopback, the cloud's metadata service, the management
// network).
var ErrDestinationRefused = errors.New("download destination refused")

// Destinations decides which addresses the conductor downloads images,
// kernels, ramdisks and config drives from. Public addresses are allowed;
// loopback, link-local, unspecified, multicast and private (RFC 1918,
// fc00::/7) ones only when one of the allowed networks holds them.
type Destinations struct {
	// Allowed are the networks the operator trusts as image sources
	// ([conductor] image_download_allowed_networks).
	Allowed []netip.Prefix
}

// Check refuses addr unless a download from it is allowed.
func (d Destinations) Check(addr netip.Addr) error {
	addr = addr.Unmap()
	for _, p := range d.Allowed {
		if p.Contains(addr) {
			return nil
		}
	}
	kind := ""
	switch {
	case addr.IsLoopback():
		kind = "a loopback"
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
		kind = "a link-local"
	case addr.IsUnspecified():
		kind = "an unspecified"
	case addr.IsMulticast():
		kind = "a multicast"
	case addr.IsPrivate():
		kind = "a private"
	default:
		return nil
	}
	return fmt.Errorf("%w: %s is %s address, not in [conductor] image_download_allowed_networks", ErrDestinationRefused, addr, kind)
}

// CheckURL refuses, before anything is dialed, a URL whose host is a
// literal address Check refuses, so a deploy fails at validation with a
// clear message. Names are left to the check at dial time, which is the
// guard: only it sees what a name resolves to.
func (d Destinations) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	addr, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil
	}
	return d.Check(addr)
}

// control checks the address a connection is about to be made to, after
// name resolution: a name resolving to a refused address, or a redirect to
// one, is caught as surely as a literal address.
func (d Destinations) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrDestinationRefused, address, err)
	}
	return d.Check(ap.Addr())
}

// Client is the HTTP client every conductor download goes through; timeout
// bounds a whole download (0: none, stalls are then the caller's to
// bound). It uses no proxy: the check applies to the address dialed, which
// for a proxied request would be the proxy's.
func (d Destinations) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: d.control}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   30 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		IdleConnTimeout:       90 * time.Second,
	}}
}
