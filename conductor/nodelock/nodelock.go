// Package nodelock takes and releases the node lock (nodes.reservation).
// The database compare-and-set is the only source of truth: the hash ring
// says which conductor should act on a node, the lock says which one may.
package nodelock

import (
	"context"
	"fmt"
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
	return &Locker{store: store, host: host, attempts: attempts, interval: interval}
}

// Observe makes every later Acquire report to o; it must be set before
// the Locker is used.
func (l *Locker) Observe(o Observer) { l.observe = o }

// Host is the hostname the locks are taken for.
func (l *Locker) Host() string { return l.host }

// SetEpoch makes later locks carry the epoch of the host's registration.
func (l *Locker) SetEpoch(epoch int64) { l.epoch.Store(epoch) }

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
		node, err := l.store.ReserveNode(ctx, uuid, l.host, epoch)
		if err == nil {
			return node, conflicts, nil
		}
		if !errs.Is(err, errs.KindNodeLocked) {
			return nil, conflicts, err
		}
		conflicts++
		lastErr = err
	}
	return nil, conflicts, lastErr
}

// Release drops this host's reservation taken in epoch. A node deleted
// meanwhile needs no release.
func (l *Locker) Release(ctx context.Context, uuid string, epoch int64) error {
	err := l.store.ReleaseNode(ctx, uuid, l.host, epoch)
	if err != nil && !errs.Is(err, errs.KindNodeNotFound) {
		return fmt.Errorf("release node %s: %w", uuid, err)
	}
	return nil
}
