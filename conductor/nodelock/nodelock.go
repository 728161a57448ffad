// Package nodelock takes and releases the node lock (nodes.reservation).
// The database compare-and-set is the only source of truth: the hash ring
// says which conductor should act on a node, the lock says which one may.
package nodelock

import (
	"context"
	"fmt"
	"time"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// Store is the part of the repository the lock needs.
type Store interface {
	ReserveNode(ctx context.Context, uuid, host string) (*model.Node, error)
	ReleaseNode(ctx context.Context, uuid, host string) error
}

// Locker locks nodes on behalf of one conductor host.
type Locker struct {
	store    Store
	host     string
	attempts int
	interval time.Duration
}

// New returns a Locker for host. attempts is how many times a NodeLocked
// answer is tried in total ([conductor] node_locked_retry_attempts) and
// interval the pause between tries.
func New(store Store, host string, attempts int, interval time.Duration) *Locker {
	if attempts < 1 {
		attempts = 1
	}
	return &Locker{store: store, host: host, attempts: attempts, interval: interval}
}

// Host is the hostname the locks are taken for.
func (l *Locker) Host() string { return l.host }

// Acquire reserves the node and returns it as re-read under the lock.
// NodeLocked is retried; NodeNotFound and other errors are not.
func (l *Locker) Acquire(ctx context.Context, uuid string) (*model.Node, error) {
	var lastErr error
	for try := 0; try < l.attempts; try++ {
		if try > 0 {
			t := time.NewTimer(l.interval)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("lock node %s: %w", uuid, lastErr)
			case <-t.C:
			}
		}
		node, err := l.store.ReserveNode(ctx, uuid, l.host)
		if err == nil {
			return node, nil
		}
		if !errs.Is(err, errs.KindNodeLocked) {
			return nil, err
		}
		lastErr = err
	}
	return nil, lastErr
}

// Release drops this host's reservation. A node deleted meanwhile needs
// no release.
func (l *Locker) Release(ctx context.Context, uuid string) error {
	err := l.store.ReleaseNode(ctx, uuid, l.host)
	if err != nil && !errs.Is(err, errs.KindNodeNotFound) {
		return fmt.Errorf("release node %s: %w", uuid, err)
	}
	return nil
}
