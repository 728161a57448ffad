package apiservice_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	_ "github.com/go-sql-driver/mysql"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	logtest "github.com/sirupsen/logrus/hooks/test"

	apiservice "github.com/ferricbm/ferric/api-service"
	"github.com/ferricbm/ferric/api-service/apitest"
	"github.com/ferricbm/ferric/conductor"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/config"
)

// env is a running API service (apitest.Server) with the helpers the
// specs send requests with.
type env struct {
	store *db.Store
	url   string
	api   *apiservice.Server
	cond  *conductor.Conductor
	cfg   config.Config
	logs  *logtest.Hook
}

// newEnv starts the stack; tweak adjusts the configuration first.
func newEnv(t apitest.T, connection string, tweak func(*config.Config)) *env {
	s := apitest.Start(t, connection, tweak)
	return &env{store: s.Store, url: s.URL, api: s.API, cond: s.Conductor, cfg: s.Config, logs: s.Logs}
}

// sqliteEnv starts a spec's stack on a fresh SQLite database; tweak
// adjusts the configuration first.
func sqliteEnv(tweak func(*config.Config)) *env {
	t := GinkgoT()
	return newEnv(t, apitest.SQLite(t), tweak)
}

// sqliteEnvWithNode is sqliteEnv(nil) with one node, created as
// createNode(extra) creates it, and the node's UUID.
func sqliteEnvWithNode(extra string) (*env, string) {
	e := sqliteEnv(nil)
	return e, e.createNode(extra)
}

// mysqlEnv starts a spec's stack on a fresh MySQL database.
func mysqlEnv() *env {
	t := GinkgoT()
	return newEnv(t, apitest.MySQL(t), nil)
}

// response is a decoded HTTP answer.
type response struct {
	status int
	header http.Header
	raw    []byte
}

func (r response) json() map[string]any {
	var m map[string]any
	if err := json.Unmarshal(r.raw, &m); err != nil {
		panic(fmt.Sprintf("response is not a JSON object (%d): %q", r.status, r.raw))
	}
	return m
}

// uuids are the uuids of a list response's items, in order; a response
// that is not a 200 list fails the spec.
func (r response) uuids(collection string) []string {
	GinkgoHelper()
	Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
	var uuids []string
	for _, item := range r.json()[collection].([]any) {
		uuids = append(uuids, item.(map[string]any)["uuid"].(string))
	}
	return uuids
}

// fault decodes an Ironic handler error body.
func (r response) fault() map[string]any {
	var inner map[string]any
	msg, ok := r.json()["error_message"].(string)
	if !ok {
		panic(fmt.Sprintf("no error_message in %q", r.raw))
	}
	if err := json.Unmarshal([]byte(msg), &inner); err != nil {
		panic(fmt.Sprintf("error_message is not JSON: %q", msg))
	}
	return inner
}

// httpClient keeps a connection per concurrent benchmark client (the
// default transport keeps two, and would reconnect for every request).
var httpClient = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}}

// call sends a request; kv are header name/value pairs.
func (e *env) call(method, path, body string, kv ...string) response {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		panic(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		panic(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, raw: bytes.TrimSpace(raw)}
}

// at sends a request at microversion v.
func (e *env) at(v, method, path, body string) response {
	return e.call(method, path, body, "X-OpenStack-Ironic-API-Version", v)
}

// createNode creates a fake-hardware node at the maximum version and
// returns its UUID.
func (e *env) createNode(extra string) string {
	return e.createNodeAs(extra)
}

// createNodeAs is createNode with more headers (credentials).
func (e *env) createNodeAs(extra string, kv ...string) string {
	body := `{"driver": "fake-hardware"` + extra + `}`
	r := e.call(http.MethodPost, "/v1/nodes", body, append([]string{"X-OpenStack-Ironic-API-Version", "latest"}, kv...)...)
	if r.status != http.StatusCreated {
		panic(fmt.Sprintf("create node: %d %s", r.status, r.raw))
	}
	return r.json()["uuid"].(string)
}

var (
	dbNoFilter = db.NodeFilter{}
	dbAll      = db.Page{}
)
