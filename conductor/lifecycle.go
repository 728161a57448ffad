package conductor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ferricbm/ferric/conductor/periodic"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

const (
	abortedByRestart  = "Pending power operation was aborted due to conductor restart"
	abortedByTakeOver = "Pending power operation was aborted due to conductor take over"
)

// Start listens on the conductor's RPC topic, recovers what a previous run
// of this host left behind, starts the driver services, registers the
// conductor, and begins the keepalive and periodic tasks; RPCs are handled
// once all of that is done.
func (c *Conductor) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("conductor: already started")
	}
	if prev, err := c.store.GetConductor(ctx, c.host); err == nil && prev.Online && prev.UpdatedAt != nil &&
		time.Since(*prev.UpdatedAt) < c.cfg.HeartbeatTimeout {
		// Either a crashed run of this host, or another process using the
		// same [DEFAULT] host — which would fight over the same locks.
		c.log.Warnf("A conductor named %s is already registered and its heartbeat is recent; taking its registration over", c.host)
	}
	// The topic is listened on before the conductor announces itself, so a
	// caller that finds it alive finds its topic; what arrives meanwhile
	// waits at the gate until the conductor can do the work.
	gate := rpc.NewGate()
	if c.transport != nil {
		mux := c.rpcMux()
		mux.HoldUntil(gate)
		stop, err := rpc.Serve(context.Background(), c.transport, c.host, mux, c.log)
		if err != nil {
			return fmt.Errorf("serve conductor RPC: %w", err)
		}
		c.stopRPC = stop
	}
	fail := func(err error) error {
		gate.Open(errs.New(errs.KindTemporaryFailure, "Conductor %s failed to start; please retry later.", c.host))
		if c.stopRPC != nil {
			c.stopRPC()
			c.stopRPC = nil
		}
		return err
	}
	if err := c.clearOwnReservations(ctx); err != nil {
		return fail(err)
	}
	// Boot files must be served before a deploy can be asked for, and a
	// conductor that cannot serve them must not register: the API would
	// route to it until its heartbeat timed out.
	if err := c.startServices(ctx); err != nil {
		return fail(err)
	}
	if err := c.register(ctx); err != nil {
		if serr := c.stopServices(context.WithoutCancel(ctx)); serr != nil {
			c.log.WithError(serr).Warn("Stopping driver services after a failed start failed")
		}
		return fail(err)
	}
	c.ring.Reset()

	beatCtx, stopBeat := context.WithCancel(context.Background())
	c.stopBeat, c.beatDone = stopBeat, make(chan struct{})
	go c.keepalive(beatCtx, c.beatDone)

	c.failStuckNodes(ctx, nil)
	c.resumeAllocations(ctx)

	c.periodics = periodic.Start(c.workCtx, c.log,
		periodic.Job{Name: "sync_power_states", Interval: c.cfg.SyncPowerStateInterval, Run: c.syncPowerStates},
		periodic.Job{Name: "check_callback_timeouts", Interval: c.cfg.CheckProvisionStateInterval, Run: c.checkCallbackTimeouts},
		periodic.Job{Name: "check_orphan_nodes", Interval: c.cfg.CheckProvisionStateInterval, Run: c.checkOrphanNodes},
		periodic.Job{Name: "check_orphan_allocations", Interval: c.cfg.CheckAllocationsInterval, Run: c.checkOrphanAllocations},
		periodic.Job{Name: "sync_local_state", Interval: c.cfg.SyncLocalStateInterval, Run: c.syncLocalState},
	)
	c.started = true
	gate.Open(nil)
	c.log.Info("Conductor started")
	return nil
}

// clearOwnReservations undoes the locks a crashed previous run of this host
// left: their power operations will never finish, and the nodes must be
// free for this run.
func (c *Conductor) clearOwnReservations(ctx context.Context) error {
	nodes, err := c.store.ListNodes(ctx, db.NodeFilter{ReservedBy: []string{c.host}}, db.Page{}, nil)
	if err != nil {
		return fmt.Errorf("list nodes reserved by %s: %w", c.host, err)
	}
	for i := range nodes {
		n := &nodes[i]
		if n.TargetPowerState == nil {
			continue
		}
		msg := abortedByRestart
		n.TargetPowerState, n.LastError = nil, &msg
		if err := c.store.SaveNode(ctx, n); err != nil {
			return fmt.Errorf("abort pending power operation of node %s: %w", n.UUID, err)
		}
	}
	if _, err := c.store.ReleaseReservationsOf(ctx, c.host); err != nil {
		return fmt.Errorf("release reservations of %s: %w", c.host, err)
	}
	return nil
}

// register writes this host's registration, in a new epoch, and makes
// the locker take locks in it.
func (c *Conductor) register(ctx context.Context) error {
	begun := time.Now()
	row := &model.Conductor{Hostname: c.host, ConductorGroup: c.cfg.ConductorGroup, Online: true}
	if err := c.store.RegisterConductor(ctx, row, c.drivers.Catalog().Rows()); err != nil {
		return fmt.Errorf("register conductor %s: %w", c.host, err)
	}
	registered, err := c.store.GetConductor(ctx, c.host)
	if err != nil {
		return fmt.Errorf("read conductor %s: %w", c.host, err)
	}
	c.id.Store(registered.ID)
	c.locker.SetEpoch(registered.Epoch, begun)
	return nil
}

func (c *Conductor) keepalive(ctx context.Context, done chan struct{}) {
	defer close(done)
	ticker := time.NewTicker(c.cfg.HeartbeatInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			c.beat(ctx)
		}
	}
}

// beat is one heartbeat. After one that lapsed (the process was paused,
// or cut off from the database, past heartbeat_timeout), the other
// conductors may have broken this host's locks and taken its nodes over;
// its workers still running hold the current epoch, so the host registers
// again in a new one before it takes any lock, and their writes to nodes
// it locks afresh are refused by the fence.
func (c *Conductor) beat(ctx context.Context) {
	begun := time.Now()
	// A failed touch is retried next tick; missing a few is what
	// heartbeat_timeout tolerates.
	if err := c.store.TouchConductor(ctx, c.host); err != nil {
		if ctx.Err() == nil {
			c.log.WithError(err).Warn("Conductor keepalive failed")
		}
		return
	}
	if !c.locker.Silent() {
		c.locker.Beat(begun)
		return
	}
	lapsed := c.locker.Epoch()
	if err := c.register(ctx); err != nil {
		if ctx.Err() == nil {
			c.log.WithError(err).Warn("Registering again after a lapsed heartbeat failed")
		}
		return
	}
	c.log.Warnf("The heartbeat lapsed past %s; registered again, epoch %d -> %d", c.cfg.HeartbeatTimeout, lapsed, c.locker.Epoch())
}

func (c *Conductor) stopKeepalive() {
	if c.stopBeat != nil {
		c.stopBeat()
		<-c.beatDone
		c.stopBeat = nil
	}
}

// stuckStates are the transitional states a worker drives: after a
// restart nobody will move them on.
var stuckStates = func() []string {
	var out []string
	for _, s := range []states.State{states.Deploying, states.Cleaning, states.Verifying, states.Inspecting,
		states.Adopting, states.Rescuing, states.Unrescuing, states.Deleting, states.Servicing} {
		if _, ok := states.StuckFailState(s); ok {
			out = append(out, string(s))
		}
	}
	return out
}()

// failStuckNodes fails the unreserved nodes mapped here that sit in a state
// only a (now gone) worker could have moved on, and that since before
// (nil: any time). A worker holds the lock for as long as its node is in
// such a state, so an unlocked one has none: at start, because the
// previous run died; later, because a database restart cut the write that
// moved the node from the answer that would have started the worker.
func (c *Conductor) failStuckNodes(ctx context.Context, before *time.Time) {
	reserved := false
	nodes, err := c.store.ListNodes(ctx, db.NodeFilter{ProvisionStates: stuckStates, Reserved: &reserved, ProvisionUpdatedBefore: before},
		db.Page{}, nodeInfoColumns)
	if err != nil {
		c.log.WithError(err).Error("Cannot list nodes stuck without a worker")
		return
	}
	for i := range nodes {
		n := &nodes[i]
		if !c.mapped(ctx, n) {
			continue
		}
		state := n.State()
		msg := fmt.Sprintf("The %s state can't be resumed by conductor %s. Moving to fail state.", state, c.host)
		c.failIfInState(ctx, n.UUID, []states.State{state}, func(*model.Node) failure {
			f := failure{lastError: msg, keepTarget: true}
			if state == states.Cleaning {
				// As every failed clean: maintenance, and the ramdisk off.
				f.apply = func(n *model.Node) { cleanFailure(n, msg) }
				f.cleanup = tearDownCleaningWork
			}
			return f
		})
	}
}

// Stop shuts down gracefully: no new RPCs or periodic runs, running workers
// finish (or are cancelled when ctx ends first), this host's locks are
// released and the conductor is marked offline.
func (c *Conductor) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started || c.stopped {
		return nil
	}
	c.stopped = true
	c.haltIntake()
	drained := make(chan struct{})
	go func() {
		c.pool.Stop()
		close(drained)
	}()
	select {
	case <-drained:
	case <-ctx.Done():
		c.log.Warn("Cancelling workers still running at shutdown")
		c.cancelWork()
		<-drained
	}
	c.cancelWork()
	c.stopKeepalive()
	var errsOut []error
	if err := c.stopServices(context.WithoutCancel(ctx)); err != nil {
		errsOut = append(errsOut, err)
	}
	if _, err := c.store.ReleaseReservationsOf(context.WithoutCancel(ctx), c.host); err != nil {
		errsOut = append(errsOut, fmt.Errorf("release reservations of %s: %w", c.host, err))
	}
	if err := c.store.UnregisterConductor(context.WithoutCancel(ctx), c.host); err != nil {
		errsOut = append(errsOut, fmt.Errorf("unregister conductor %s: %w", c.host, err))
	}
	c.log.Info("Conductor stopped")
	return errors.Join(errsOut...)
}

// haltIntake stops the RPC service and the periodic tasks.
func (c *Conductor) haltIntake() {
	if c.stopRPC != nil {
		c.stopRPC()
		c.stopRPC = nil
	}
	if c.periodics != nil {
		c.periodics.Stop()
		c.periodics = nil
	}
}
