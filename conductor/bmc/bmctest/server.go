package bmctest

import (
	"net/http"
	"sync"
	"time"
)

// Power is the power of a fake BMC's server. A change shows after a
// delay, as a real server takes time to boot or stop; the fake holds its
// own lock around every call, and calls Settle before it reads On.
type Power struct {
	// Delay is how long a change takes to show.
	Delay time.Duration
	// Started runs when the server comes on, Stopped when it goes off.
	Started, Stopped func()

	on, pending, target bool
	changeAt            time.Time
}

// On tells whether the server is on, as of the last Settle.
func (p *Power) On() bool { return p.on }

// Set sets the power at once, dropping a pending change, for a test's
// setup; nothing starts or stops.
func (p *Power) Set(on bool) { p.on, p.pending = on, false }

// Schedule asks for the power to become on; it does after Delay.
func (p *Power) Schedule(on bool) {
	p.pending, p.target, p.changeAt = true, on, time.Now().Add(p.Delay)
	p.Settle()
}

// Settle applies a pending change whose time has come.
func (p *Power) Settle() {
	if !p.pending || time.Now().Before(p.changeAt) {
		return
	}
	from := p.on
	p.on, p.pending = p.target, false
	switch {
	case p.on && !from && p.Started != nil:
		p.Started()
	case !p.on && from && p.Stopped != nil:
		p.Stopped()
	}
}

// Gate counts a fake BMC's requests and holds each answer for the delay
// a test sets, as an overloaded BMC does.
type Gate struct {
	mu       sync.Mutex
	delay    time.Duration
	requests int
}

// SetResponseDelay makes every answer wait d.
func (g *Gate) SetResponseDelay(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.delay = d
}

// Requests counts the requests received.
func (g *Gate) Requests() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.requests
}

// Pass counts r and waits the delay. A client that gives up meanwhile
// gets no answer at all: a plain return would send an empty 200 that can
// race the client's deadline.
func (g *Gate) Pass(r *http.Request) {
	g.mu.Lock()
	g.requests++
	delay := g.delay
	g.mu.Unlock()
	if delay <= 0 {
		return
	}
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		panic(http.ErrAbortHandler)
	}
}
