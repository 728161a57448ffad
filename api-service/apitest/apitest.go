// Package apitest starts the API service on an in-process conductor over a
// test database, for the specs and benchmarks that need the whole service
// behind a URL (as Nomad's TestServer does for its agent).
package apitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http/httptest"
	"time"

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

// T is what a server needs of ginkgo's GinkgoT() or of a benchmark's
// *testing.B.
type T interface {
	TempDir() string
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// Server is a running API service and the one conductor behind it,
// reached through the in-process RPC transport. Everything is stopped,
// and the database closed, when the test ends.
type Server struct {
	// URL is the service's root, without a trailing slash.
	URL       string
	Store     *db.Store
	API       *apiservice.Server
	Conductor *conductor.Conductor
	Config    config.Config
	// Logs holds what the API and the conductor logged, after the mask
	// hook production uses, so a spec sees what an operator would.
	Logs *logtest.Hook
}

// SQLite is the connection URL of a fresh SQLite database in a temporary
// directory.
func SQLite(t T) string { return dbtest.SQLiteURL(t.TempDir()) }

// MySQL is the connection URL of a uniquely named MySQL database (see
// db/dbtest for the server), dropped when the test ends.
func MySQL(t T) string {
	connection, drop, err := dbtest.NewMySQLDatabase(context.Background(), "api")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { _ = drop() })
	return connection
}

// Start migrates the database at connection and serves the API on it;
// tweak, if set, adjusts the configuration first. The conductor's host
// name is unique, so servers of concurrent tests never share nodes.
func Start(t T, connection string, tweak func(*config.Config)) *Server {
	ctx := context.Background()
	store, err := db.Open(ctx, connection)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	if err := store.Upgrade(ctx); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	cfg := config.Defaults()
	cfg.Default.Host = "conductor-" + randomSuffix(t)
	cfg.Database.Connection = connection
	cfg.Conductor.HeartbeatInterval = time.Second
	cfg.Conductor.PowerStateChangeTimeout = 5 * time.Second
	// Specs that race for a node lock retry as a conductor does, without
	// the default second between attempts.
	cfg.Conductor.NodeLockedRetryInterval = 50 * time.Millisecond
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
	return &Server{URL: srv.URL, Store: store, API: api, Conductor: cond, Config: cfg, Logs: hook}
}

func randomSuffix(t T) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random host name: %v", err)
	}
	return hex.EncodeToString(b[:])
}
