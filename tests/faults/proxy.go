// Package faults holds the fault injectors the chaos specs and bench use:
// a TCP proxy that delays, stalls, cuts, resets and refuses connections,
// on loopback only. A private MariaDB server a spec may stop and restart
// is dbtest.MariaDB.
package faults

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Proxy forwards loopback TCP connections to a target, and can be made to
// misbehave while they are open.
type Proxy struct {
	addr   string
	target string

	mu      sync.Mutex
	ln      net.Listener
	conns   map[net.Conn]bool
	stalled bool
	delay   time.Duration
	resume  *sync.Cond
	down    bool
	closed  bool
}

// NewProxy listens on a free loopback port and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy listen: %w", err)
	}
	p := &Proxy{addr: ln.Addr().String(), ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.resume = sync.NewCond(&p.mu)
	go p.accept(ln)
	return p, nil
}

// Addr is host:port of the proxy; it stays the same across Down and Up.
func (p *Proxy) Addr() string { return p.addr }

func (p *Proxy) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.down {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) serve(client net.Conn) {
	upstream, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(client) || !p.track(upstream) {
		client.Close()
		upstream.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(upstream, client) }()
	go func() { defer wg.Done(); p.pipe(client, upstream) }()
	wg.Wait()
}

// pipe copies src to dst chunk by chunk, holding each chunk while the
// proxy is stalled and for its delay; either side ending ends both.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.untrack(dst)
	defer p.untrack(src)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.hold() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// hold waits while the proxy is stalled, then for its delay; false when
// the proxy closed meanwhile.
func (p *Proxy) hold() bool {
	p.mu.Lock()
	for p.stalled && !p.closed {
		p.resume.Wait()
	}
	delay, closed := p.delay, p.closed
	p.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	return !closed
}

// SetDelay delays every chunk forwarded from now on by d.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Stall stops forwarding bytes on every connection, open or new, without
// closing any: the peers see a silent network until Resume.
func (p *Proxy) Stall() {
	p.mu.Lock()
	p.stalled = true
	p.mu.Unlock()
}

// Resume forwards again what Stall held.
func (p *Proxy) Resume() {
	p.mu.Lock()
	p.stalled = false
	p.resume.Broadcast()
	p.mu.Unlock()
}

// Cut closes every open connection with a FIN, as a peer that goes away
// cleanly; new connections are still accepted.
func (p *Proxy) Cut() int { return p.drop(false) }

// Reset aborts every open connection with a TCP RST.
func (p *Proxy) Reset() int { return p.drop(true) }

func (p *Proxy) drop(reset bool) int {
	p.mu.Lock()
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		if tc, ok := c.(*net.TCPConn); ok && reset {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}
	return len(conns)
}

// Down makes the target look stopped to the proxy's clients only: new
// connections are refused and open ones, which clients keep alive between
// requests, are cut, until Up.
func (p *Proxy) Down() error {
	p.mu.Lock()
	p.down = true
	ln := p.ln
	p.ln = nil
	p.mu.Unlock()
	var err error
	if ln != nil {
		err = ln.Close()
	}
	p.drop(false)
	return err
}

// Up listens again, on the same address.
func (p *Proxy) Up() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil || p.closed {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("proxy listen again on %s: %w", p.addr, err)
	}
	p.ln, p.down = ln, false
	go p.accept(ln)
	return nil
}

// Close stops listening and drops every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.resume.Broadcast()
	ln := p.ln
	p.ln = nil
	p.mu.Unlock()
	var err error
	if ln != nil {
		err = ln.Close()
	}
	p.drop(true)
	return err
}
