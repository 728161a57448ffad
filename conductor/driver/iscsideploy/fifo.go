package iscsideploy

import (
	"context"
	"sync"
)

// fifo is a counting semaphore that grants slots in arrival order, so a
// burst of deploys cannot starve the one that asked first.
type fifo struct {
	mu      sync.Mutex
	free    int
	waiters []chan struct{}
}

func newFIFO(n int) *fifo { return &fifo{free: n} }

func (f *fifo) acquire(ctx context.Context) error {
	f.mu.Lock()
	if f.free > 0 && len(f.waiters) == 0 {
		f.free--
		f.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	f.waiters = append(f.waiters, ch)
	f.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		f.mu.Lock()
		for i, w := range f.waiters {
			if w == ch {
				f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
				f.mu.Unlock()
				return ctx.Err()
			}
		}
		f.mu.Unlock()
		// Granted while giving up: pass the slot on.
		f.release()
		return ctx.Err()
	}
}

func (f *fifo) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.waiters) > 0 {
		ch := f.waiters[0]
		f.waiters = f.waiters[1:]
		close(ch)
		return
	}
	f.free++
}
