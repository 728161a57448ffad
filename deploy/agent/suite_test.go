package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/agent/tgt/tgttest"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/deploy/tooltest"
)

func TestAgent(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ferric-agent Suite")
}

var _ = BeforeSuite(func() {
	// The agent's loops and the fake API run on a shared, often loaded
	// machine; waiting longer costs passing specs nothing.
	SetDefaultEventuallyTimeout(30 * time.Second)
	Expect(tooltest.Install(context.Background(), map[string]string{"tgtd": "tgt", "tgtadm": "tgt", "wipefs": "util-linux"})).To(Succeed())
})

// testLogger sends the agent's log to the spec's output, shown when it fails.
func testLogger() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(GinkgoWriter)
	return l
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func freeAddr() string { return "127.0.0.1:" + strconv.Itoa(freePort()) }

// controlPort picks a tgtd control port that no tgtd on this machine uses.
func controlPort() int {
	n, err := tgttest.ControlPort()
	Expect(err).NotTo(HaveOccurred())
	return n
}

// request is one call the fake Bare Metal API received.
type request struct {
	Method, Path string
	Query        map[string][]string
	Version      string
	AuthToken    string
	Body         map[string]any
	At           time.Time
}

// fakeIronic serves the ramdisk endpoints of our own API contract (lookup,
// heartbeat, node vendor passthru) for unit-testing the agent; the end-to-end
// tests run the agent against the real API service.
type fakeIronic struct {
	*httptest.Server
	mu       sync.Mutex
	requests []request
	// lookupFailures is how many lookups answer 404 before one succeeds;
	// heartbeatFailures how many heartbeats answer 503.
	lookupFailures, heartbeatFailures int
	nodeUUID                          string
	token                             string
	heartbeatTimeout                  float64
	// passthruQueryOnly makes the path form of vendor passthru answer 404, like an
	// API routing only ?method=.
	passthruQueryOnly bool
	passthru          chan request
}

func newFakeIronic() *fakeIronic {
	f := &fakeIronic{nodeUUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", token: "agent-token-1",
		heartbeatTimeout: 300, passthru: make(chan request, 10)}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	DeferCleanup(f.Close)
	return f
}

func (f *fakeIronic) serve(w http.ResponseWriter, r *http.Request) {
	req := request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(),
		Version: r.Header.Get("X-OpenStack-Ironic-API-Version"), AuthToken: r.Header.Get("X-Auth-Token"), At: time.Now()}
	if data, _ := io.ReadAll(r.Body); len(data) > 0 {
		_ = json.Unmarshal(data, &req.Body)
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	fail := false
	if r.URL.Path == "/v1/lookup" && f.lookupFailures > 0 {
		f.lookupFailures--
		fail = true
	}
	if r.URL.Path == "/v1/heartbeat/"+f.nodeUUID && f.heartbeatFailures > 0 {
		f.heartbeatFailures--
		fail = true
	}
	f.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/lookup":
		if fail {
			http.Error(w, `{"error_message": "Resource could not be found."}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"node": map[string]any{"uuid": f.nodeUUID, "properties": map[string]any{}, "instance_info": map[string]any{},
				"driver_internal_info": map[string]any{}},
			"config": map[string]any{"heartbeat_timeout": f.heartbeatTimeout, "agent_token": f.token,
				"agent_token_required": true},
		})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/heartbeat/"+f.nodeUUID:
		if fail {
			http.Error(w, `{"error_message": "Service Unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/nodes/"+f.nodeUUID+"/vendor_passthru":
		f.passthru <- req
		w.WriteHeader(http.StatusAccepted)
	case r.Method == http.MethodPost && filepath.Dir(r.URL.Path) == "/v1/nodes/"+f.nodeUUID+"/vendor_passthru" &&
		!f.passthruQueryOnly:
		f.passthru <- req
		w.WriteHeader(http.StatusAccepted)
	default:
		http.Error(w, `{"error_message": "Not Found"}`, http.StatusNotFound)
	}
}

// calls returns the requests received for path so far.
func (f *fakeIronic) calls(path string) []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []request
	for _, r := range f.requests {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}
