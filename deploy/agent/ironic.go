package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// API microversions the ramdisk sends: lookup and heartbeat exist from 1.22,
// and agent_version in a heartbeat is accepted from 1.36. Ferric takes
// agent_verify_ca at every version (Ironic from 1.68, above what Ferric
// serves).
const (
	lookupVersion    = "1.22"
	heartbeatVersion = "1.36"
)

// maskedToken is what a lookup returns in place of a token already handed out.
const maskedToken = "******"

// ironicClient calls the Bare Metal API endpoints meant for ramdisks.
type ironicClient struct {
	base string
	http *http.Client
}

// statusError is an unexpected HTTP status from the API.
type statusError struct {
	Op     string
	Status int
	Body   string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.Op, e.Status, e.Body)
}

// LookupResult is the part of GET /v1/lookup the agent uses.
type LookupResult struct {
	Node   map[string]any `json:"node"`
	Config struct {
		HeartbeatTimeout float64 `json:"heartbeat_timeout"`
		AgentToken       string  `json:"agent_token"`
	} `json:"config"`
}

// UUID is the looked-up node's UUID.
func (r LookupResult) UUID() string {
	u, _ := r.Node["uuid"].(string)
	return u
}

func (c *ironicClient) do(ctx context.Context, op, method, path string, query url.Values, header http.Header, body any) ([]byte, int, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", op, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", op, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", op, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("%s: read response: %w", op, err)
	}
	return data, resp.StatusCode, nil
}

// lookup is GET /v1/lookup?addresses=...&node_uuid=....
func (c *ironicClient) lookup(ctx context.Context, macs []string, nodeUUID string) (LookupResult, error) {
	q := url.Values{}
	if len(macs) > 0 {
		q.Set("addresses", strings.Join(macs, ","))
	}
	if nodeUUID != "" {
		q.Set("node_uuid", nodeUUID)
	}
	h := http.Header{"X-Openstack-Ironic-Api-Version": {lookupVersion}}
	data, status, err := c.do(ctx, "lookup", http.MethodGet, "/v1/lookup", q, h, nil)
	if err != nil {
		return LookupResult{}, err
	}
	if status != http.StatusOK {
		return LookupResult{}, &statusError{Op: "lookup", Status: status, Body: string(data)}
	}
	var res LookupResult
	if err := json.Unmarshal(data, &res); err != nil {
		return LookupResult{}, fmt.Errorf("lookup: decode response: %w", err)
	}
	if res.UUID() == "" {
		return LookupResult{}, fmt.Errorf("lookup: response has no node uuid")
	}
	return res, nil
}

// heartbeatBody is POST /v1/heartbeat/{uuid}'s body.
type heartbeatBody struct {
	CallbackURL  string `json:"callback_url"`
	AgentToken   string `json:"agent_token"`
	AgentVersion string `json:"agent_version"`
	// AgentVerifyCA is the PEM certificate of an agent serving HTTPS.
	AgentVerifyCA string `json:"agent_verify_ca,omitempty"`
}

func (c *ironicClient) heartbeat(ctx context.Context, nodeUUID string, body heartbeatBody) error {
	h := http.Header{"X-Openstack-Ironic-Api-Version": {heartbeatVersion}}
	data, status, err := c.do(ctx, "heartbeat", http.MethodPost, "/v1/heartbeat/"+url.PathEscape(nodeUUID), nil, h, body)
	if err != nil {
		return err
	}
	if status != http.StatusAccepted {
		return &statusError{Op: "heartbeat", Status: status, Body: string(data)}
	}
	return nil
}

// vendorPassthru POSTs to a node vendor method the way the bash ramdisk did
// (/v1/nodes/{uuid}/vendor_passthru/{method}); an API that only routes the
// ?method= form answers 404 or 405 there, and the call is repeated in that form.
func (c *ironicClient) vendorPassthru(ctx context.Context, nodeUUID, method, authToken string, body any) error {
	h := http.Header{}
	if authToken != "" {
		h.Set("X-Auth-Token", authToken)
	}
	base := "/v1/nodes/" + url.PathEscape(nodeUUID) + "/vendor_passthru"
	data, status, err := c.do(ctx, method, http.MethodPost, base+"/"+method, nil, h, body)
	if err != nil {
		return err
	}
	if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
		data, status, err = c.do(ctx, method, http.MethodPost, base, url.Values{"method": {method}}, h, body)
		if err != nil {
			return err
		}
	}
	if status != http.StatusAccepted && status != http.StatusOK {
		return &statusError{Op: method, Status: status, Body: string(data)}
	}
	return nil
}
