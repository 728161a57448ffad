// Package nodelock takes and releases the node lock (nodes.reservation).
// The database compare-and-set is the only source of truth: the hash ring
// says which conductor should act on a node, the lock says which one may.
package nodelock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// Store is the part of the repository the lock needs.
type Store interface {
	ReserveNode(ctx context.Context, uuid, host string, epoch int64) (*model.Node, error)
	ReleaseNode(ctx context.Context, uuid, host string, epoch int64) error
}

// Locker locks nodes on behalf of one conductor host, in the epoch of its
// current registration.
type Locker struct {
	store    Store
	host     string
	epoch    atomic.Int64
	attempts int
	interval time.Duration
	observe  Observer

	// beat is when the host's last heartbeat that reached the database
	// was begun; after silence without one, the other conductors may have
	// judged the host dead and broken its locks, and it takes none until
	// it has registered again in a new epoch (see Silent).
	beat    atomic.Pointer[time.Time]
	silence time.Duration

	// held counts, per node, the locks this host holds or is taking: a
	// lock found in the database under this host and epoch with no count
	// here was leaked by a reservation whose answer was lost.
	mu   sync.Mutex
	held map[string]int
}

// Observer is told of every Acquire: how long it took, how many tries
// found the lock held by another, whether it gave up on such a holder
// (locked) and its error.
type Observer func(wait time.Duration, conflicts int, locked bool, err error)

// New returns a Locker for host. attempts is how many times a NodeLocked
// answer is tried in total ([conductor] node_locked_retry_attempts) and
// interval the pause between tries.
func New(store Store, host string, attempts int, interval time.Duration) *Locker {
	if attempts < 1 {
		attempts = 1
	}
	return &Locker{store: store, host: host, attempts: attempts, interval: interval, held: map[string]int{}}
}

// Observe makes every later Acquire report to o; it must be set before
// the Locker is used.
func (l *Locker) Observe(o Observer) { l.observe = o }

// Host is the hostname the locks are taken for.
func (l *Locker) Host() string { return l.host }

// SetEpoch makes later locks carry the epoch of the host's registration,
// begun at registered; a registration counts as a heartbeat.
func (l *Locker) SetEpoch(epoch int64, registered time.Time) {
	l.epoch.Store(epoch)
	l.Beat(registered)
}

// Epoch is the epoch locks are taken in.
func (l *Locker) Epoch() int64 { return l.epoch.Load() }

// FenceAfter makes the locker refuse locks once silence has passed since
// the last heartbeat: the heartbeat timeout, after which others may break
// this host's locks. Zero never refuses.
func (l *Locker) FenceAfter(silence time.Duration) { l.silence = silence }

// Beat records a heartbeat that reached the database, begun at t (before
// the write, so that the conductors' row is never older than it).
func (l *Locker) Beat(t time.Time) { l.beat.Store(&t) }

// Silent reports whether the heartbeat has lapsed: a paused or cut-off
// host whose locks other conductors may have broken. Its workers of the
// current epoch may still run and would pass the fence of any lock taken
// again in that epoch, so it must register anew before locking.
func (l *Locker) Silent() bool {
	last := l.beat.Load()
	return l.silence > 0 && last != nil && time.Since(*last) > l.silence
}

func (l *Locker) lapsed(uuid string) error {
	return errs.New(errs.KindTemporaryFailure, "Conductor %s lost its heartbeat and takes no lock on node %s until it has registered again; please retry.",
		l.host, uuid)
}

// Acquire reserves the node and returns it as re-read under the lock, its
// ReservationEpoch the epoch the lock was taken in, which writes under the
// lock must present. NodeLocked is retried; NodeNotFound and other errors
// are not.
func (l *Locker) Acquire(ctx context.Context, uuid string) (*model.Node, error) {
	start := time.Now()
	node, conflicts, err := l.acquire(ctx, uuid)
	if l.observe != nil {
		l.observe(time.Since(start), conflicts, errs.Is(err, errs.KindNodeLocked), err)
	}
	return node, err
}

func (l *Locker) acquire(ctx context.Context, uuid string) (node *model.Node, conflicts int, err error) {
	epoch := l.epoch.Load()
	var lastErr error
	for try := 0; try < l.attempts; try++ {
		if try > 0 {
			t := time.NewTimer(l.interval)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, conflicts, fmt.Errorf("lock node %s: %w", uuid, lastErr)
			case <-t.C:
			}
		}
		if l.Silent() || l.epoch.Load() != epoch {
			if !l.awaitRegistration(ctx) {
				return nil, conflicts, l.lapsed(uuid)
			}
			// Registered again: the lock is taken in the new epoch, which
			// the lapsed epoch's workers cannot write in.
			epoch = l.epoch.Load()
		}
		l.enter(uuid)
		node, err := l.store.ReserveNode(ctx, uuid, l.host, epoch)
		if err == nil {
			confirmed, err := l.confirm(ctx, node, epoch)
			return confirmed, conflicts, err
		}
		l.Forget(uuid)
		if !errs.Is(err, errs.KindNodeLocked) {
			if _, typed := errs.As(err); !typed {
				// The UPDATE may have been applied with its answer lost
				// (the connection broke): a lock nobody here holds, that
				// no other conductor would break while this one is alive.
				go l.clearLeak(uuid, epoch)
			}
			return nil, conflicts, err
		}
		conflicts++
		lastErr = err
	}
	return nil, conflicts, lastErr
}

// awaitRegistration waits, within ctx's deadline and at most one silence,
// for a host whose heartbeat lapsed to register again, which its next
// heartbeat does: a lock asked for meanwhile (an RPC, periodic work) is
// then taken rather than refused with a TemporaryFailure every caller
// would have to retry. It reports whether the host is registered and
// heard from again.
func (l *Locker) awaitRegistration(ctx context.Context) bool {
	until := time.Now().Add(l.silence)
	if d, ok := ctx.Deadline(); ok && d.Before(until) {
		until = d
	}
	poll := max(l.interval, 10*time.Millisecond)
	for l.Silent() {
		if time.Now().Add(poll).After(until) {
			return false
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
	return true
}

// confirm keeps a lock only if the heartbeat did not lapse, nor the epoch
// change, while it was taken: the host may have been paused between the
// check and the UPDATE, and its locks broken meanwhile.
func (l *Locker) confirm(ctx context.Context, node *model.Node, epoch int64) (*model.Node, error) {
	if !l.Silent() && l.epoch.Load() == epoch {
		return node, nil
	}
	if err := l.Release(ctx, node.UUID, epoch); err != nil {
		return nil, fmt.Errorf("lock node %s: %w", node.UUID, err)
	}
	return nil, l.lapsed(node.UUID)
}

// Release drops this host's reservation taken in epoch. A node deleted
// meanwhile needs no release.
func (l *Locker) Release(ctx context.Context, uuid string, epoch int64) error {
	err := l.store.ReleaseNode(ctx, uuid, l.host, epoch)
	if err == nil || errs.Is(err, errs.KindNodeNotFound) || Gone(err) {
		l.Forget(uuid)
	}
	if err != nil && !errs.Is(err, errs.KindNodeNotFound) {
		return fmt.Errorf("release node %s: %w", uuid, err)
	}
	return nil
}

// Gone reports a release refused because the lock is no longer this
// host's to release: broken and taken by another, or already free.
func Gone(err error) bool {
	return errs.Is(err, errs.KindNodeLocked) || errs.Is(err, errs.KindInvalidState)
}

func (l *Locker) enter(uuid string) {
	l.mu.Lock()
	l.held[uuid]++
	l.mu.Unlock()
}

// Forget records that a lock of this host on the node ended without
// Release: its holder saved and released it in one write.
func (l *Locker) Forget(uuid string) {
	l.mu.Lock()
	if l.held[uuid]--; l.held[uuid] <= 0 {
		delete(l.held, uuid)
	}
	l.mu.Unlock()
}

// Bounds of the pause between attempts to clear a leaked lock.
const (
	leakRetryMin = 100 * time.Millisecond
	leakRetryMax = 5 * time.Second
)

// clearLeak releases the lock a reservation with a lost answer may have
// left, once the database answers, unless a lock of this host on the node
// is held or being taken meanwhile: then the lock may be theirs, and the
// check waits for them to finish. The mutex is held across the release,
// so no reservation of this host can land between the check and it.
func (l *Locker) clearLeak(uuid string, epoch int64) {
	wait := leakRetryMin
	for {
		time.Sleep(wait)
		wait = min(2*wait, leakRetryMax)
		l.mu.Lock()
		if l.held[uuid] > 0 {
			l.mu.Unlock()
			continue
		}
		err := l.store.ReleaseNode(context.Background(), uuid, l.host, epoch)
		l.mu.Unlock()
		if err == nil || errs.Is(err, errs.KindNodeNotFound) || Gone(err) {
			return
		}
	}
}
