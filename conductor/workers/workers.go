// Package workers is the conductor's bounded pool of background workers.
// It never queues: when every worker is busy a new job is refused, so the
// RPC that wanted it can answer 503 at once instead of letting work pile up
// behind a node lock.
package workers

import (
	"sync"
	"sync/atomic"

	"github.com/ferricbm/ferric/pkg/errs"
)

// Pool runs at most Size jobs at a time.
type Pool struct {
	slots   chan struct{}
	mu      sync.Mutex
	stopped bool
	running sync.WaitGroup
	refused atomic.Uint64
}

// New returns a pool of size workers (at least one).
func New(size int) *Pool {
	if size < 1 {
		size = 1
	}
	return &Pool{slots: make(chan struct{}, size)}
}

// Spawn starts job on a free worker. It fails with NoFreeConductorWorker
// when the pool is full or stopped; job has then not run and never will.
func (p *Pool) Spawn(job func()) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return errs.NoFreeConductorWorker()
	}
	select {
	case p.slots <- struct{}{}:
	default:
		p.refused.Add(1)
		return errs.NoFreeConductorWorker()
	}
	p.running.Add(1)
	go func() {
		defer func() {
			<-p.slots
			p.running.Done()
		}()
		job()
	}()
	return nil
}

// Free is how many jobs could be spawned right now.
func (p *Pool) Free() int { return cap(p.slots) - len(p.slots) }

// Size is how many jobs may run at once.
func (p *Pool) Size() int { return cap(p.slots) }

// Refused is how many jobs Spawn refused because every worker was busy.
func (p *Pool) Refused() uint64 { return p.refused.Load() }

// Stop refuses new jobs and waits for the running ones to return.
func (p *Pool) Stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.running.Wait()
}
