package conductor_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor"
	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/db/dbtest"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

func TestConductor(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "conductor suite")
}

// Every spec runs on each of dbtest.Dialects (SQLite and MySQL unless
// FERRIC_TEST_MYSQL=none; see dbtest.EnvMySQL).
var backends = dbtest.Dialects()

var stores = map[string]*db.Store{}

var runID = fmt.Sprintf("%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)

// openStore opens a fresh, migrated database of the backend. cleanup
// closes it (and drops it on MySQL).
func openStore(ctx context.Context, backend, name, tempDir string) (store *db.Store, cleanup func(), err error) {
	conn, drop, err := dbtest.New(ctx, backend, "conductor_"+name, filepath.Join(tempDir, name))
	if err != nil {
		return nil, nil, err
	}
	s, err := db.Open(ctx, conn)
	if err == nil {
		if err = s.Upgrade(ctx); err != nil {
			_ = s.Close()
		}
	}
	if err != nil {
		_ = drop()
		return nil, nil, err
	}
	return s, func() { _ = s.Close(); _ = drop() }, nil
}

var _ = BeforeSuite(func(ctx SpecContext) {
	// Periodic tasks run every 200 ms, but on a loaded machine (and under
	// -race) a run can take seconds; waiting longer costs passing specs
	// nothing.
	SetDefaultEventuallyTimeout(30 * time.Second)
	dir := GinkgoT().TempDir()
	for _, b := range backends {
		s, cleanup, err := openStore(ctx, b, "suite", dir)
		Expect(err).NotTo(HaveOccurred())
		stores[b] = s
		DeferCleanup(cleanup)
	}
})

var specCounter atomic.Int64

// env is one spec's world: its own conductor group (so conductors of other
// specs never own its nodes), one fake fleet shared by its conductors, and
// an in-process RPC transport.
type env struct {
	store     *db.Store
	group     string
	hw        *fake.Hardware
	drivers   *driver.Registry
	stepper   *steppingDeploy
	transport rpc.Transport
	client    *rpc.Client
	log       *logrus.Logger
}

// onEveryBackend declares body once per database backend, in a context
// named after it; before each of its specs e is a fresh environment.
func onEveryBackend(body func(e *env)) {
	for _, backend := range backends {
		Context("on "+backend, func() {
			e := &env{}
			BeforeEach(func() { *e = *newEnv(backend) })
			body(e)
		})
	}
}

func newEnv(backend string) *env {
	n := specCounter.Add(1)
	hw := fake.New()
	stepper := &steppingDeploy{}
	reg, err := driver.NewRegistry([]string{fake.Name, steppingHardware}, hw.HardwareType(), stepper.hardwareType(hw))
	Expect(err).NotTo(HaveOccurred())
	log := logrus.New()
	log.SetOutput(GinkgoWriter)
	log.SetLevel(logrus.WarnLevel)
	t := rpc.NewInProcess()
	e := &env{
		store:     stores[backend],
		group:     fmt.Sprintf("g%d-%s", n, runID),
		hw:        hw,
		drivers:   reg,
		stepper:   stepper,
		transport: t,
		client:    rpc.NewClient(t, 10*time.Second),
		log:       log,
	}
	DeferCleanup(func(ctx SpecContext) {
		nodes, err := e.store.ListNodes(ctx, db.NodeFilter{Match: []filter.Condition{{Column: "conductor_group", Value: e.group}}}, db.Page{}, []string{"uuid"})
		Expect(err).NotTo(HaveOccurred())
		for _, n := range nodes {
			Expect(e.store.DestroyNode(ctx, n.UUID)).To(Succeed())
		}
	})
	return e
}

// config is a configuration with every interval short enough for tests;
// the callback timeouts are long unless a spec shortens them. The periodic
// tasks are off: they lock the spec's nodes (power sync, take over) at
// moments no spec controls, so a spec that checks a lock or a state would
// race them. Specs about periodic behaviour turn them on (withPeriodicTasks).
func (e *env) config(host string) config.Config {
	cfg := config.Defaults()
	cfg.Default.Host = host
	cfg.Default.HashRingResetInterval = 200 * time.Millisecond
	c := &cfg.Conductor
	c.ConductorGroup = e.group
	c.WorkersPoolSize = 8
	c.HeartbeatInterval = 100 * time.Millisecond
	// Many intervals, and more than a loaded machine (or a busy
	// SQLite file) delays a keepalive: a live conductor that looked dead
	// would have its nodes taken over in the middle of a spec.
	c.HeartbeatTimeout = 3 * time.Second
	c.NodeLockedRetryAttempts = 3
	c.NodeLockedRetryInterval = 50 * time.Millisecond
	c.CheckProvisionStateInterval = 0
	c.SyncPowerStateInterval = 0
	c.SyncLocalStateInterval = 0
	c.CheckAllocationsInterval = 0
	c.DeployCallbackTimeout = time.Hour
	c.CleanCallbackTimeout = time.Hour
	return cfg
}

// withPeriodicTasks runs every periodic task every 200 ms.
func withPeriodicTasks(cfg *config.Config) {
	c := &cfg.Conductor
	c.CheckProvisionStateInterval = 200 * time.Millisecond
	c.SyncPowerStateInterval = 200 * time.Millisecond
	c.SyncLocalStateInterval = 200 * time.Millisecond
	c.CheckAllocationsInterval = 200 * time.Millisecond
}

// start creates and starts a conductor; it is stopped when the spec ends.
func (e *env) start(ctx context.Context, host string, mods ...func(*config.Config)) *conductor.Conductor {
	return e.startWith(ctx, host, nil, mods...)
}

func (e *env) startWith(ctx context.Context, host string, opt func(*conductor.Options), mods ...func(*config.Config)) *conductor.Conductor {
	cfg := e.config(host)
	for _, m := range mods {
		m(&cfg)
	}
	opts := conductor.Options{Config: cfg, Store: e.store, Transport: e.transport, Log: e.log, Drivers: e.drivers}
	if opt != nil {
		opt(&opts)
	}
	c, err := conductor.New(opts)
	Expect(err).NotTo(HaveOccurred())
	Expect(c.Start(ctx)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(c.Stop(ctx)).To(Succeed())
	})
	return c
}

// api is the conductor as the API service reaches it: over RPC.
func (e *env) api(c *conductor.Conductor) rpc.Endpoint { return e.client.Conductor(c.Host()) }

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// createNode inserts a fake-hardware node in the given provision state, as
// the API's node create would (interfaces resolved to the defaults).
func (e *env) createNode(ctx context.Context, state states.State, mods ...func(*model.Node)) *model.Node {
	n := &model.Node{
		UUID:           newUUID(),
		Driver:         fake.Name,
		ConductorGroup: e.group,
		ProvisionState: ptr(string(state)),
		// As if the state had just been written: timeouts count from here.
		ProvisionUpdatedAt: ptr(time.Now().UTC()),
	}
	for _, m := range mods {
		m(n)
	}
	Expect(e.drivers.ResolveInterfaces(n)).To(Succeed())
	Expect(e.store.CreateNode(ctx, n)).To(Succeed())
	return n
}

func (e *env) node(ctx context.Context, uuid string) *model.Node {
	n, err := e.store.GetNode(ctx, uuid)
	Expect(err).NotTo(HaveOccurred())
	return n
}

// provisionState polls a node's provision state for Eventually.
func (e *env) provisionState(ctx context.Context, uuid string) func() states.State {
	return func() states.State { return e.node(ctx, uuid).State() }
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ptr[T any](v T) *T { return &v }

// unlocked matches a node whose reservation is NULL.
func (e *env) reservation(ctx context.Context, uuid string) func() *string {
	return func() *string { return e.node(ctx, uuid).Reservation }
}

// hwPower is the fake machine's real power state ("" if never set).
func (e *env) hwPower(uuid string) string {
	s, _ := e.hw.PowerState(uuid)
	return s
}
