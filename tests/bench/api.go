package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/ferricbm/ferric/tests/harness"
)

type apiClient struct {
	url     string
	version string
}

func newAPI(url string) *apiClient { return &apiClient{url: url} }

// statusError is an answer with an unexpected status.
type statusError struct {
	method, path string
	status       int
	body         []byte
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.method, e.path, e.status, e.body)
}

// do sends one request and checks the status; out, when not nil, receives
// the decoded body.
func (a *apiClient) do(ctx context.Context, method, path string, body any, want int, out any) error {
	resp, err := harness.Do(ctx, method, a.url+path, body, map[string]string{"X-OpenStack-Ironic-API-Version": a.version})
	if err != nil {
		return err
	}
	if resp.Status != want {
		return &statusError{method: method, path: path, status: resp.Status, body: resp.Body}
	}
	if out != nil {
		return json.Unmarshal(resp.Body, out)
	}
	return nil
}

// provision asks for a provision state change, retrying briefly while the
// node is locked (409) by a transition still finishing.
func (a *apiClient) provision(ctx context.Context, uuid, verb string) error {
	var err error
	for range 50 {
		err = a.do(ctx, http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", map[string]any{"target": verb}, http.StatusAccepted, nil)
		var se *statusError
		if !errors.As(err, &se) || se.status != http.StatusConflict {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// waitState polls until every node of uuids is in state (or, when
// failState is set, in state or failState), or timeout, and returns how
// many reached state. It lists by provision_state (1.9) with only the uuid
// field (1.8), following markers.
func (a *apiClient) waitState(ctx context.Context, state, failState string, uuids []string, timeout time.Duration) (int, error) {
	want := make(map[string]bool, len(uuids))
	for _, u := range uuids {
		want[u] = true
	}
	deadline := time.Now().Add(timeout)
	for {
		reached, err := a.countInState(ctx, state, want)
		if err != nil {
			return 0, err
		}
		failed := 0
		if failState != "" {
			if failed, err = a.countInState(ctx, failState, want); err != nil {
				return 0, err
			}
		}
		if reached+failed == len(want) || time.Now().After(deadline) {
			return reached, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (a *apiClient) countInState(ctx context.Context, state string, want map[string]bool) (int, error) {
	uuids, err := a.uuids(ctx, url.Values{"provision_state": {state}})
	if err != nil {
		return 0, err
	}
	count := 0
	for _, u := range uuids {
		if want[u] {
			count++
		}
	}
	return count, nil
}

// listUUIDs lists every node's UUID in the API's default order.
func (a *apiClient) listUUIDs(ctx context.Context) ([]string, error) {
	return a.uuids(ctx, url.Values{})
}

// uuids pages through GET /v1/nodes with filter, asking only for uuid.
func (a *apiClient) uuids(ctx context.Context, filter url.Values) ([]string, error) {
	const limit = 1000
	var out []string
	marker := ""
	for {
		q := url.Values{"fields": {"uuid"}, "limit": {fmt.Sprint(limit)}}
		for k, v := range filter {
			q[k] = v
		}
		if marker != "" {
			q.Set("marker", marker)
		}
		var page struct {
			Nodes []struct {
				UUID string `json:"uuid"`
			} `json:"nodes"`
		}
		if err := a.do(ctx, http.MethodGet, "/v1/nodes?"+q.Encode(), nil, http.StatusOK, &page); err != nil {
			return nil, err
		}
		for _, n := range page.Nodes {
			out = append(out, n.UUID)
		}
		if len(page.Nodes) < limit {
			return out, nil
		}
		marker = page.Nodes[len(page.Nodes)-1].UUID
	}
}

// pagePaths are the paths of full pages of list (a path with a query):
// one in ten is the first page, the others follow markers spread over
// ordered, the UUIDs in the list's own order, far enough from its end
// that a full page follows each.
func pagePaths(list string, ordered []string) []string {
	markers := ordered[:len(ordered)-100]
	paths := make([]string, len(markers))
	for i := range paths {
		paths[i] = list
		if i%10 != 0 {
			paths[i] += "&marker=" + markers[(i*97)%len(markers)]
		}
	}
	return paths
}
