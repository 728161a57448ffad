// Package service wires Ferric's components into the processes the
// binaries run: configuration, logging, database, RPC transport, conductor
// and API, started in order and stopped in reverse on SIGINT or SIGTERM.
package service

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	apiservice "github.com/ferricbm/ferric/api-service"
	"github.com/ferricbm/ferric/conductor"
	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/builtin"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/httpserver"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/metrics"
	"github.com/ferricbm/ferric/pkg/tlsfiles"
	"github.com/ferricbm/ferric/rpc"
)

// ShutdownTimeout bounds a graceful stop: in-flight API requests and
// conductor workers get this long before the process exits anyway.
const ShutdownTimeout = 60 * time.Second

// ConfigFlag registers --config on fs; its default is $FERRIC_CONFIG as
// getenv reads it.
func ConfigFlag(fs *flag.FlagSet, getenv func(string) string) *string {
	return fs.String("config", getenv("FERRIC_CONFIG"),
		"path to the INI configuration file (default $FERRIC_CONFIG; none: embedded defaults)")
}

// Load reads the configuration for role (the file at path, then the
// FERRIC_ variables of environ), checks it and builds the logger.
func Load(path string, role Role, environ []string) (config.Config, *logrus.Logger, error) {
	cfg, err := config.Load(path, environ)
	if err != nil {
		return config.Config{}, nil, fmt.Errorf("load configuration: %w", err)
	}
	cfg = role.adjust(cfg)
	if err := cfg.Validate(); err != nil {
		return config.Config{}, nil, fmt.Errorf("invalid configuration: %w", err)
	}
	return cfg, logging.New(cfg.Default), nil
}

// Role selects what a process runs.
type Role struct {
	Name      string
	API       bool
	Conductor bool
	// Migrate upgrades the schema at start; only single-process mode does.
	Migrate bool
	// InProcessRPC allows [rpc] transport = inprocess; a process that runs
	// only half of Ferric must reach the other half over AMQP.
	InProcessRPC bool
}

var (
	Single        = Role{Name: "ferric", API: true, Conductor: true, Migrate: true, InProcessRPC: true}
	APIOnly       = Role{Name: "ferric-api", API: true}
	ConductorOnly = Role{Name: "ferric-conductor", Conductor: true}
)

// adjust applies what the role implies to the configuration: the split
// binaries always talk AMQP, whatever the (single-process) default says.
func (r Role) adjust(cfg config.Config) config.Config {
	if !r.InProcessRPC && cfg.RPC.Transport == "inprocess" {
		cfg.RPC.Transport = "amqp"
	}
	return cfg
}

// LogStartup records what the process is about to run, without secrets.
func LogStartup(log *logrus.Logger, role Role, cfg config.Config, configPath string) {
	fields := logrus.Fields{
		"config_file":          configPath,
		"host":                 cfg.Default.Host,
		"database":             RedactURL(cfg.Database.Connection),
		"rpc_transport":        cfg.RPC.Transport,
		"rpc_response_timeout": cfg.RPC.ResponseTimeout.String(),
	}
	if cfg.RPC.Transport == "amqp" {
		fields["amqp_url"] = RedactURL(cfg.RPC.AMQPURL)
	}
	if role.API {
		fields["listen"] = listenAddr(cfg)
		fields["auth_strategy"] = cfg.Default.AuthStrategy
		if cfg.API.AuthStrategy != "" {
			log.Warn("[api] auth_strategy is deprecated: set [DEFAULT] auth_strategy instead")
		}
	}
	if role.Conductor {
		fields["enabled_hardware_types"] = cfg.Conductor.EnabledHardwareTypes
		fields["conductor_group"] = cfg.Conductor.ConductorGroup
		fields["heartbeat_interval"] = cfg.Conductor.HeartbeatInterval.String()
		fields["heartbeat_timeout"] = cfg.Conductor.HeartbeatTimeout.String()
		fields["workers_pool_size"] = cfg.Conductor.WorkersPoolSize
	}
	log.WithFields(fields).Infof("%s starting", role.Name)
}

// RedactURL hides the password of a URL-shaped connection string.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable, hidden>"
	}
	return u.Redacted()
}

// DBPool is the connection pool the [database] options ask for.
func DBPool(c config.Database) db.Option {
	return db.WithPool(db.Pool{
		MaxSize:     c.MaxPoolSize,
		MaxOverflow: c.MaxOverflow,
		RecycleTime: c.ConnectionRecycleTime,
		IdleTime:    c.ConnectionIdleTime,
	})
}

func listenAddr(cfg config.Config) string {
	return net.JoinHostPort(cfg.API.HostIP, strconv.Itoa(cfg.API.Port))
}

// OpenStore opens the database. With migrate it upgrades the schema;
// without, it refuses a schema older than this build's, naming the command
// that upgrades it.
func OpenStore(ctx context.Context, cfg config.Config, migrate bool) (*db.Store, error) {
	store, err := db.Open(ctx, cfg.Database.Connection, DBPool(cfg.Database))
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", RedactURL(cfg.Database.Connection), err)
	}
	if migrate {
		if err := store.Upgrade(ctx); err != nil {
			store.Close()
			return nil, fmt.Errorf("upgrade database schema: %w", err)
		}
		return store, nil
	}
	v, err := store.SchemaVersion(ctx)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("read database schema version (run `ferric dbsync upgrade` first?): %w", err)
	}
	if latest := db.LatestSchemaVersion(); v < latest {
		store.Close()
		return nil, fmt.Errorf("database schema is at version %d, this build needs %d: run `ferric dbsync upgrade`", v, latest)
	}
	return store, nil
}

func newTransport(cfg config.Config, log *logrus.Logger) (rpc.Transport, error) {
	switch cfg.RPC.Transport {
	case "inprocess":
		return rpc.NewInProcess(), nil
	case "amqp":
		var opts []rpc.AMQPOption
		if cfg.AMQPTLS() {
			om := cfg.OsloMessagingRabbit
			tc, err := tlsfiles.Client(om.SSLCAFile, om.SSLCertFile, om.SSLKeyFile)
			if err != nil {
				return nil, fmt.Errorf("[oslo_messaging_rabbit] TLS files: %w", err)
			}
			opts = append(opts, rpc.WithTLS(tc))
		}
		t, err := rpc.NewAMQP(cfg.RPC.AMQPURL, log, opts...)
		if err != nil {
			return nil, fmt.Errorf("connect to %s: %w", RedactURL(cfg.RPC.AMQPURL), err)
		}
		return t, nil
	}
	return nil, fmt.Errorf("unknown [rpc] transport %q (want inprocess or amqp)", cfg.RPC.Transport)
}

// APIGCPercent is the garbage collector's target (GOGC) in a process that
// serves the API, unless GOGC is set. A request allocates its response
// and result rows, and the live heap is small (connections, caches): with
// Go's default of 100 the collector runs so often that it takes about a
// third of the CPU of a page of 100 nodes. 400 lets the heap grow to five
// times the live data between collections instead of twice: a few tens of
// megabytes more, for that CPU back. GOGC (or GOMEMLIMIT, with GOGC=off)
// still decides when set.
const APIGCPercent = 400

// tuneGC applies APIGCPercent for a role that serves the API when gogc,
// the GOGC environment variable, is empty; it returns the percent set.
func tuneGC(role Role, gogc string) (int, bool) {
	if !role.API || gogc != "" {
		return 0, false
	}
	debug.SetGCPercent(APIGCPercent)
	return APIGCPercent, true
}

// Run starts the role's components and blocks until SIGINT or SIGTERM (or
// the API server fails), then stops them gracefully: the API first so no
// new work arrives, then the conductor, which finishes its workers and
// releases its locks. getenv reads GOGC.
func Run(role Role, cfg config.Config, log *logrus.Logger, getenv func(string) string) error {
	ctx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	return run(ctx, stopSignals, role, cfg, log, getenv)
}

// run is Run until ctx ends; stopSignals lets a second signal end the
// process during the graceful stop.
func run(ctx context.Context, stopSignals func(), role Role, cfg config.Config, log *logrus.Logger, getenv func(string) string) (runErr error) {
	if pct, ok := tuneGC(role, getenv("GOGC")); ok {
		log.Infof("garbage collector target %d%% (GOGC unset)", pct)
	}

	store, err := OpenStore(ctx, cfg, role.Migrate)
	if err != nil {
		return err
	}
	defer closeWith(&runErr, "close database", store.Close)

	transport, err := newTransport(cfg, log)
	if err != nil {
		return err
	}
	defer closeWith(&runErr, "close RPC transport", transport.Close)

	if role.Conductor {
		m := metrics.NewConductor()
		drivers, err := builtin.Configured(cfg, log, store, m)
		if err != nil {
			return fmt.Errorf("enabled hardware types: %w", err)
		}
		metricsLn, err := listenMetrics(ctx, cfg.Conductor.MetricsListen)
		if err != nil {
			return err
		}
		c, err := startConductor(ctx, cfg, store, transport, drivers, m, log)
		if err != nil {
			if metricsLn != nil {
				_ = metricsLn.Close()
			}
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
			defer cancel()
			closeWith(&runErr, "stop conductor", func() error { return c.Stop(sctx) })
		}()
		defer serveConductorMetrics(metricsLn, c, log)()
	}

	apiErr := make(chan error, 1)
	if role.API {
		srv, err := apiservice.New(apiservice.Options{
			Config: cfg,
			Store:  store,
			RPC:    rpc.NewClient(transport, cfg.RPC.ResponseTimeout),
			Log:    log,
		})
		if err != nil {
			return fmt.Errorf("build API service: %w", err)
		}
		httpSrv := apiServer(srv.Handler(), cfg.API)
		scheme := "http"
		if cfg.API.EnableSSLAPI {
			cert, err := tlsfiles.NewServerCert(cfg.SSL.CertFile, cfg.SSL.KeyFile, log)
			if err != nil {
				return fmt.Errorf("API certificate [ssl] cert_file, key_file: %w", err)
			}
			httpSrv.TLSConfig, scheme = cert.Config(), "https"
		}
		// Binding here rather than in the server's Start makes a bad or
		// busy address fail the start at once.
		addr := listenAddr(cfg)
		ln, err := new(net.ListenConfig).Listen(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", addr, err)
		}
		go func() { apiErr <- httpserver.Serve(httpSrv, ln) }()
		log.Infof("API listening on %s://%s", scheme, addr)
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
			defer cancel()
			closeWith(&runErr, "stop API", func() error { return httpSrv.Shutdown(sctx) })
		}()
	}

	log.Infof("%s started", role.Name)
	select {
	case <-ctx.Done():
		// A second signal during the graceful stop ends the process at once.
		stopSignals()
		log.Infof("%s stopping on signal", role.Name)
		return nil
	case err := <-apiErr:
		return fmt.Errorf("API server stopped: %w", err)
	}
}

func startConductor(ctx context.Context, cfg config.Config, store *db.Store, t rpc.Transport, drivers *driver.Registry,
	m *metrics.Conductor, log *logrus.Logger) (*conductor.Conductor, error) {
	c, err := conductor.New(conductor.Options{Config: cfg, Store: store, Transport: t, Log: log, Drivers: drivers, Metrics: m})
	if err != nil {
		return nil, fmt.Errorf("build conductor: %w", err)
	}
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("start conductor %s: %w", cfg.Default.Host, err)
	}
	return c, nil
}

// apiServer serves the API with the configured limits on each client.
func apiServer(h http.Handler, a config.API) *http.Server {
	return httpserver.New(h, httpserver.Limits{ReadTimeout: a.ReadTimeout, WriteTimeout: a.WriteTimeout,
		IdleTimeout: a.IdleTimeout, MaxHeaderBytes: a.MaxHeaderSize})
}

// closeWith runs a cleanup and keeps its error unless an earlier one is set.
func closeWith(err *error, what string, f func() error) {
	if cerr := f(); cerr != nil && *err == nil {
		*err = fmt.Errorf("%s: %w", what, cerr)
	}
}
