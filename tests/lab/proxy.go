package lab

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Proxy forwards TCP connections from its own loopback address to a
// service, so a test can take that service down for the clients it gives
// Addr to, and only for them, while the service keeps running for others.
type Proxy struct {
	// Addr is where clients connect ("127.0.0.1:port"); it stays the same
	// across Down and Up.
	Addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// StartProxy forwards a free loopback port to target ("host:port").
func StartProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("lab: proxy to %s: %w", target, err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	return p, nil
}

// Down makes the service look stopped: new connections are refused and
// open ones, which a client keeps alive between requests, are cut.
func (p *Proxy) Down() error {
	p.mu.Lock()
	ln := p.ln
	p.ln = nil
	var err error
	if ln != nil {
		err = ln.Close()
	}
	for c := range p.conns {
		err = errors.Join(err, c.Close())
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// Up forwards connections again, on the same address.
func (p *Proxy) Up() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		return fmt.Errorf("lab: proxy to %s: %w", p.target, err)
	}
	p.serveLocked(ln)
	return nil
}

// Close stops forwarding for good.
func (p *Proxy) Close() error { return p.Down() }

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serveLocked(ln)
}

func (p *Proxy) serveLocked(ln net.Listener) {
	p.ln = ln
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.forward(c)
			}()
		}
	}()
}

// forward copies both ways between c and a new connection to the target
// until either side closes; a connection Down cuts ends both.
func (p *Proxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, up) {
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	p.untrack(c, up)
	<-done
}

// track records an open pair, or closes it when the proxy went down
// meanwhile.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}
