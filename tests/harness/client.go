package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
)

// NewClient is a gophercloud bare-metal client for a noauth Ferric API at
// baseURL (scheme://host:port), pinned to microversion (empty: none sent,
// which the server treats as 1.1).
func NewClient(baseURL, microversion string) (*gophercloud.ServiceClient, error) {
	c, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: strings.TrimRight(baseURL, "/") + "/v1/"})
	if err != nil {
		return nil, err
	}
	c.Microversion = microversion
	return c, nil
}

// MaxVersion reads the server's maximum microversion from GET /.
func MaxVersion(ctx context.Context, baseURL string) (string, error) {
	resp, err := Do(ctx, http.MethodGet, baseURL+"/", nil, nil)
	if err != nil {
		return "", err
	}
	if resp.Status != http.StatusOK {
		return "", fmt.Errorf("GET /: %d %s", resp.Status, resp.Body)
	}
	var doc struct {
		DefaultVersion struct {
			Version string `json:"version"`
		} `json:"default_version"`
	}
	if err := json.Unmarshal(resp.Body, &doc); err != nil {
		return "", fmt.Errorf("GET /: %w", err)
	}
	return doc.DefaultVersion.Version, nil
}

// Response is a raw HTTP exchange's outcome.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// httpClient keeps enough idle connections for the benchmark's concurrency
// and never goes through a proxy: everything here is loopback.
var httpClient = &http.Client{
	Timeout: 30 * time.Second,
	Transport: &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        128,
		MaxIdleConnsPerHost: 128,
		IdleConnTimeout:     90 * time.Second,
	},
}

// Do sends one request; body may be nil, []byte (sent as is) or any value
// (sent as JSON).
func Do(ctx context.Context, method, url string, body any, header map[string]string) (*Response, error) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// IronicError is the decoded error body. Ironic wraps a JSON document in the
// error_message string; Handler errors carry faultcode/faultstring/debuginfo,
// routing errors code/title/description.
type IronicError struct {
	// Wrapped is true for {"error_message": "<json>"}, false for the flat
	// {"faultcode", "faultstring"} body used for errors raised before the
	// application (oversized bodies).
	Wrapped     bool
	FaultCode   string
	FaultString string
	Code        int
	Title       string
	Description string
}

// Message is the human-readable part, whichever shape carried it.
func (e IronicError) Message() string {
	if e.FaultString != "" {
		return e.FaultString
	}
	if e.Description != "" {
		return e.Description
	}
	return e.Title
}

// ParseIronicError checks that body is one of Ironic's error shapes and
// decodes it.
func ParseIronicError(body []byte) (IronicError, error) {
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(body, &outer); err != nil {
		return IronicError{}, fmt.Errorf("error body is not a JSON object: %w: %s", err, body)
	}
	if raw, ok := outer["error_message"]; ok {
		if len(outer) != 1 {
			return IronicError{}, fmt.Errorf("error body has keys besides error_message: %s", body)
		}
		var inner string
		if err := json.Unmarshal(raw, &inner); err != nil {
			return IronicError{}, fmt.Errorf("error_message is not a string: %s", body)
		}
		e, err := parseInner([]byte(inner))
		e.Wrapped = true
		return e, err
	}
	return parseInner(body)
}

func parseInner(b []byte) (IronicError, error) {
	var doc struct {
		FaultCode   *string `json:"faultcode"`
		FaultString *string `json:"faultstring"`
		Code        *int    `json:"code"`
		Title       *string `json:"title"`
		Description *string `json:"description"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return IronicError{}, fmt.Errorf("error document is not JSON: %w: %s", err, b)
	}
	switch {
	case doc.FaultCode != nil && doc.FaultString != nil:
		return IronicError{FaultCode: *doc.FaultCode, FaultString: *doc.FaultString}, nil
	case doc.Code != nil && doc.Title != nil:
		e := IronicError{Code: *doc.Code, Title: *doc.Title}
		if doc.Description != nil {
			e.Description = *doc.Description
		}
		return e, nil
	}
	return IronicError{}, fmt.Errorf("error document has neither faultcode/faultstring nor code/title: %s", b)
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
