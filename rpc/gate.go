package rpc

import (
	"context"
	"sync"
)

// Gate holds the messages a Serve has received until it opens. A conductor
// listens on its topic before it announces itself in the database, so a
// caller that finds it alive also finds its topic, and the messages that
// arrive while it finishes starting wait instead of being refused.
type Gate struct {
	once sync.Once
	open chan struct{}
	err  error
}

// NewGate returns a closed gate.
func NewGate() *Gate { return &Gate{open: make(chan struct{})} }

// Open lets the held messages and every later one through: to their
// handlers when err is nil, else each is answered with err. Only the first
// call counts.
func (g *Gate) Open(err error) {
	g.once.Do(func() {
		g.err = err
		close(g.open)
	})
}

// wait blocks until the gate opens or ctx is done.
func (g *Gate) wait(ctx context.Context) error {
	select {
	case <-g.open:
		return g.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
