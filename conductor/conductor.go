// Package conductor is Ferric's conductor service: it serves the conductor
// RPC API, takes node locks, runs long operations on a bounded worker pool,
// and runs the periodic tasks (timeouts, power sync, takeover) for the
// nodes the hash ring maps to it.
package conductor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/builtin"
	"github.com/ferricbm/ferric/conductor/driver/ilo"
	"github.com/ferricbm/ferric/conductor/nodelock"
	"github.com/ferricbm/ferric/conductor/periodic"
	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/conductor/workers"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/hashring"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/metrics"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/rpc"
)

// Store is the part of the repository the conductor uses; *db.Store
// implements it.
type Store interface {
	task.Store
	volumeStore
	portgroupStore
	allocationStore
	ListNodes(ctx context.Context, f db.NodeFilter, p db.Page, columns []string) ([]model.Node, error)
	DestroyNode(ctx context.Context, uuid string) error
	ReleaseReservationsOf(ctx context.Context, host string) (int64, error)
	GetPort(ctx context.Context, uuid string) (*model.Port, error)
	SavePort(ctx context.Context, p *model.Port) error
	DestroyPort(ctx context.Context, uuid string) error
	RegisterConductor(ctx context.Context, c *model.Conductor, ifaces []model.ConductorHardwareInterface) error
	TouchConductor(ctx context.Context, hostname string) error
	UnregisterConductor(ctx context.Context, hostname string) error
	GetConductor(ctx context.Context, hostname string) (*model.Conductor, error)
	ActiveMembers(ctx context.Context, heartbeatTimeout time.Duration) ([]hashring.Member, error)
	OfflineConductors(ctx context.Context, heartbeatTimeout time.Duration) ([]string, error)
	TouchProvisioning(ctx context.Context, uuid string) error
	DeleteConfigDrive(ctx context.Context, driveID string) error
	DeleteNodeConfigDrives(ctx context.Context, nodeID int64, keep string) error
	// The virtual-media boot interfaces count the users of shared boot
	// ISOs here.
	ilo.BootISOStore
}

var _ Store = (*db.Store)(nil)

// Options configure a conductor.
type Options struct {
	Config config.Config
	Store  Store
	// Transport serves the RPC API; nil serves nothing (the conductor is
	// then only called directly, in-process).
	Transport rpc.Transport
	Log       *logrus.Logger
	// Drivers overrides the registry built from [conductor]
	// enabled_hardware_types, e.g. to share one fake-hardware fleet between
	// conductors.
	Drivers *driver.Registry
	// Metrics is where the conductor counts, one set per conductor; nil:
	// a set of its own. The drivers built from the configuration count
	// into it too, so a caller that builds the Drivers itself passes the
	// Metrics they count into.
	Metrics *metrics.Conductor
}

// Conductor serves the conductor RPC methods (rpc/methods.go) for the
// nodes it can lock.
type Conductor struct {
	cfg       config.Conductor
	host      string
	store     Store
	transport rpc.Transport
	log       *logrus.Entry
	drivers   *driver.Registry
	pool      *workers.Pool
	tasks     *task.Manager
	ring      *hashring.Manager
	metrics   *metrics.Conductor

	// bindAgentToken is [agent] bind_token_to_source.
	bindAgentToken bool
	// requireAgentTLS is [agent] require_tls.
	requireAgentTLS bool

	workCtx    context.Context
	cancelWork context.CancelFunc

	mu        sync.Mutex
	started   bool
	stopped   bool
	stopRPC   func()
	periodics *periodic.Runner
	stopBeat  context.CancelFunc
	beatDone  chan struct{}

	// id is this conductor's row id (conductor_affinity), set by Start.
	id atomic.Int64
	// locker takes node locks in the epoch of the registration Start made.
	locker *nodelock.Locker

	// powerFailures counts consecutive failed power syncs per node; like
	// Ironic it lives in memory and starts over on restart.
	powerMu       sync.Mutex
	powerFailures map[string]int

	refused refusedHeartbeats
}

// New builds a conductor; Start brings it up.
func New(opts Options) (*Conductor, error) {
	if opts.Store == nil {
		return nil, errors.New("conductor: a store is required")
	}
	cfg := opts.Config
	if cfg.Default.Host == "" {
		return nil, errors.New("conductor: [DEFAULT] host is empty")
	}
	if cfg.Conductor.HeartbeatInterval <= 0 || cfg.Conductor.HeartbeatTimeout <= 0 {
		return nil, errors.New("conductor: [conductor] heartbeat_interval and heartbeat_timeout must be positive")
	}
	log := opts.Log
	if log == nil {
		log = logging.Discard()
	}
	m := opts.Metrics
	if m == nil {
		m = metrics.NewConductor()
	}
	drivers := opts.Drivers
	if drivers == nil {
		var err error
		if drivers, err = builtin.Configured(cfg, log, opts.Store, m); err != nil {
			return nil, fmt.Errorf("conductor: enabled hardware types: %w", err)
		}
	}
	c := &Conductor{
		cfg:             cfg.Conductor,
		host:            cfg.Default.Host,
		store:           opts.Store,
		transport:       opts.Transport,
		log:             log.WithField("conductor", cfg.Default.Host),
		drivers:         drivers,
		pool:            workers.New(cfg.Conductor.WorkersPoolSize),
		requireAgentTLS: cfg.Agent.RequireTLS,
		bindAgentToken:  cfg.Agent.BindTokenToSource,
		powerFailures:   map[string]int{},
		refused:         refusedHeartbeats{nodes: map[string]*refusals{}},
		metrics:         m,
	}
	m.WatchPool(c.pool)
	c.workCtx, c.cancelWork = context.WithCancel(context.Background())
	c.locker = nodelock.New(opts.Store, c.host, cfg.Conductor.NodeLockedRetryAttempts, cfg.Conductor.NodeLockedRetryInterval)
	c.locker.Observe(m.ObserveLock)
	c.locker.FenceAfter(cfg.Conductor.HeartbeatTimeout)
	c.tasks = task.NewManager(c.workCtx, opts.Store, c.locker, c.pool, drivers, cleaner{c}, c.log)
	c.tasks.Observe(m)
	heartbeatTimeout := cfg.Conductor.HeartbeatTimeout
	c.ring = hashring.NewManager(func(ctx context.Context) ([]hashring.Member, error) {
		return opts.Store.ActiveMembers(ctx, heartbeatTimeout)
	}, cfg.Default.HashPartitionExponent, cfg.Default.HashRingResetInterval)
	return c, nil
}

// Metrics serves this conductor's metrics to Prometheus.
func (c *Conductor) Metrics() http.Handler { return c.metrics.Handler() }

// Host is the hostname this conductor registers and locks nodes as.
func (c *Conductor) Host() string { return c.host }

// Drivers is the registry of the hardware types this conductor drives.
func (c *Conductor) Drivers() *driver.Registry { return c.drivers }

func (c *Conductor) conductorID() *int64 {
	id := c.id.Load()
	if id == 0 {
		return nil
	}
	return &id
}
