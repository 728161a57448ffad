package rpc

import (
	"context"
	"fmt"
	"sync"
)

// NewInProcess returns a Transport that delivers messages between a Client
// and Serve in the same process, with no broker. Messages are the same JSON
// as on AMQP; there is no durability (a message lives only in memory), and a
// topic has at most one listener.
func NewInProcess() Transport {
	return &inProcess{listeners: map[string]*inProcessListener{}}
}

type inProcess struct {
	mu        sync.Mutex
	listeners map[string]*inProcessListener
	closed    bool
}

type inProcessListener struct {
	h   Handler
	sem chan struct{}

	mu      sync.Mutex
	stopped bool
	running sync.WaitGroup
}

func (t *inProcess) Listen(_ context.Context, topic string, maxInFlight int, h Handler) (func(), error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, transportClosed()
	}
	if _, ok := t.listeners[topic]; ok {
		return nil, fmt.Errorf("listen on %s: topic already has a listener in this process", topic)
	}
	l := &inProcessListener{h: h, sem: make(chan struct{}, max(maxInFlight, 1))}
	t.listeners[topic] = l
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			if t.listeners[topic] == l {
				delete(t.listeners, topic)
			}
			t.mu.Unlock()
			l.stop()
		})
	}, nil
}

func (t *inProcess) listener(topic string) (*inProcessListener, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, transportClosed()
	}
	l, ok := t.listeners[topic]
	if !ok {
		return nil, unroutable(topic)
	}
	return l, nil
}

func (t *inProcess) Call(ctx context.Context, topic string, request []byte) ([]byte, error) {
	l, err := t.listener(topic)
	if err != nil {
		return nil, err
	}
	// Buffered so a handler finishing after the caller gave up never blocks.
	replies := make(chan []byte, 1)
	if !l.submit(request, replies) {
		return nil, unroutable(topic)
	}
	select {
	case r := <-replies:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (t *inProcess) Cast(_ context.Context, topic string, request []byte) error {
	l, err := t.listener(topic)
	if err != nil {
		return err
	}
	if !l.submit(request, nil) {
		return unroutable(topic)
	}
	return nil
}

func (t *inProcess) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	ls := t.listeners
	t.listeners = map[string]*inProcessListener{}
	t.mu.Unlock()
	for _, l := range ls {
		l.stop()
	}
	return nil
}

// submit queues a message for the listener; it reports false if the
// listener has stopped. A handler that yields no reply (expired call)
// leaves the caller to its own deadline, as on AMQP.
func (l *inProcessListener) submit(request []byte, replies chan<- []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return false
	}
	l.running.Add(1)
	go func() {
		defer l.running.Done()
		l.sem <- struct{}{}
		defer func() { <-l.sem }()
		if out := l.h(request); out != nil && replies != nil {
			replies <- out
		}
	}()
	return true
}

// stop refuses new messages and waits for the accepted ones, queued or
// running, so that nothing accepted is lost.
func (l *inProcessListener) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	l.running.Wait()
}
