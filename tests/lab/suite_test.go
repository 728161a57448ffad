package lab_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestLab(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Virtual Lab Suite")
}

// callbackAPI is the Bare Metal API as the callback-only ramdisk sees it:
// it records the body of each pass_deploy_info.
type callbackAPI struct {
	*httptest.Server
	mu    sync.Mutex
	calls []map[string]string
}

func startCallbackAPI() *callbackAPI {
	a := &callbackAPI{}
	a.Server = httptest.NewServer(http.HandlerFunc(a.serve))
	DeferCleanup(a.Close)
	return a
}

func (a *callbackAPI) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]string
	_ = json.NewDecoder(r.Body).Decode(&body)
	if !strings.HasSuffix(r.URL.Path, "/vendor_passthru/pass_deploy_info") {
		http.NotFound(w, r)
		return
	}
	a.mu.Lock()
	a.calls = append(a.calls, body)
	a.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// Calls are the bodies received so far.
func (a *callbackAPI) Calls() []map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]map[string]string(nil), a.calls...)
}
