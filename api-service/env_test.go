package apiservice_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	apiservice "github.com/ferricbm/ferric/api-service"
	"github.com/ferricbm/ferric/conductor"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/db/dbtest"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/rpc"
)

// testingT is what the environment needs from ginkgo's GinkgoT() and from
// a benchmark's *testing.B.
type testingT interface {
	TempDir() string
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// env is a running API service over a real database and a real conductor
// reached through the in-process RPC transport.
type env struct {
	store *db.Store
	srv   *httptest.Server
	api   *apiservice.Server
	cond  *conductor.Conductor
	cfg   config.Config
	logs  *logtest.Hook
}

var hostSeq atomic.Int64

// sqliteConnection is a fresh SQLite database in a temporary directory.
func sqliteConnection(t testingT) string {
	return dbtest.SQLiteURL(t.TempDir())
}

// mysqlConnection creates a uniquely named MySQL database and drops it when
// the test ends.
func mysqlConnection(t testingT) string {
	connection, drop, err := dbtest.NewMySQLDatabase(context.Background(), "api")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { _ = drop() })
	return connection
}

// newEnv starts the stack; tweak adjusts the configuration first.
func newEnv(t testingT, connection string, tweak func(*config.Config)) *env {
	ctx := context.Background()
	store, err := db.Open(ctx, connection)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	if err := store.Upgrade(ctx); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	cfg := config.Defaults()
	cfg.Default.Host = fmt.Sprintf("conductor-%d", hostSeq.Add(1))
	cfg.Database.Connection = connection
	cfg.Conductor.HeartbeatInterval = time.Second
	cfg.Conductor.PowerStateChangeTimeout = 5 * time.Second
	if tweak != nil {
		tweak(&cfg)
	}
	transport := rpc.NewInProcess()
	// Like logging.New's: the mask hook sees entries before the test's.
	log := logrus.New()
	log.Out = io.Discard
	log.AddHook(logging.MaskHook{})
	hook := logtest.NewLocal(log)
	log.SetLevel(logrus.DebugLevel)
	cond, err := conductor.New(conductor.Options{Config: cfg, Store: store, Transport: transport, Log: log})
	if err != nil {
		t.Fatalf("new conductor: %v", err)
	}
	if err := cond.Start(ctx); err != nil {
		t.Fatalf("start conductor: %v", err)
	}
	api, err := apiservice.New(apiservice.Options{Config: cfg, Store: store, RPC: rpc.NewClient(transport, 10*time.Second),
		Log: log})
	if err != nil {
		t.Fatalf("new api: %v", err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		srv.Close()
		_ = cond.Stop(context.Background())
		_ = transport.Close()
		_ = store.Close()
	})
	return &env{store: store, srv: srv, api: api, cond: cond, cfg: cfg, logs: hook}
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
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
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
