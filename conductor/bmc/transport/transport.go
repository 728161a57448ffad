// Package transport is the HTTPS plumbing the BMC clients share: a client
// that verifies the BMC's certificate unless told not to, and requests
// bounded by both a per-request timeout and the caller's own deadline, with
// timeouts reported as one typed error whatever layer noticed them.
package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// ErrTimeout is in the chain of every error caused by a request that ran
// out of time, per request or overall.
var ErrTimeout = errors.New("BMC request timed out")

// DefaultTimeout bounds one request when the caller sets none: Ironic's
// [ilo] client_timeout.
const DefaultTimeout = 60 * time.Second

// maxBody caps what is read from a BMC: its answers are a few kilobytes,
// and a misbehaving one must not exhaust the conductor's memory.
const maxBody = 8 << 20

// TLS says how the BMC's certificate is checked. The zero value verifies
// against the system roots; CAFile replaces them; Insecure turns checking
// off and must be asked for explicitly.
type TLS struct {
	CAFile   string
	Insecure bool
}

// NewHTTPClient is a client for one BMC. Timeouts are not set here: Do
// applies them per request so that the caller's context can cut them short.
func NewHTTPClient(t TLS) (*http.Client, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case t.Insecure:
		cfg.InsecureSkipVerify = true
	case t.CAFile != "":
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read BMC CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("BMC CA file %s holds no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	tr.Proxy = nil
	// BMCs serve few connections; a handful kept per BMC avoids a TLS
	// handshake per call, which costs an embedded controller most.
	tr.MaxIdleConnsPerHost = 2
	return &http.Client{
		Transport: tr,
		// Redirects would resend credentials to wherever the BMC points.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// Response is a BMC's answer, read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends req (which must not carry a context yet) within timeout and
// ctx's deadline and reads the whole answer. op names the call in errors;
// neither the error nor anything else here includes the request's headers
// or body, where credentials travel.
func Do(ctx context.Context, c *http.Client, req *http.Request, timeout time.Duration, op string) (*Response, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := c.Do(req.WithContext(rctx))
	if err != nil {
		return nil, wrap(ctx, rctx, op, timeout, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, wrap(ctx, rctx, op, timeout, err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// NewRequest builds a request with a body that can be resent.
func NewRequest(ctx context.Context, method, url string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, fmt.Errorf("build %s request: %w", method, err)
	}
	return req, nil
}

func wrap(parent, rctx context.Context, op string, timeout time.Duration, err error) error {
	switch {
	case parent.Err() != nil && errors.Is(parent.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s: %w: the operation's deadline passed", op, ErrTimeout)
	case parent.Err() != nil:
		return fmt.Errorf("%s: %w", op, parent.Err())
	case rctx.Err() != nil || isTimeout(err):
		return fmt.Errorf("%s: %w: no answer within %s", op, ErrTimeout, timeout)
	}
	return fmt.Errorf("%s: %w", op, err)
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
