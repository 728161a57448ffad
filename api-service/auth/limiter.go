package auth

import (
	"container/list"
	"sync"
	"time"
)

// failureLimiter bounds the failed logins each client may make: a token
// bucket per client address, of burst tokens refilled at one per refill.
// Each failure takes a token; a client without one is refused before any
// bcrypt work, so guessing costs the server at most one hash per refill
// per client. At most size clients are tracked; the least recently seen
// is forgotten first.
type failureLimiter struct {
	burst  float64
	refill time.Duration
	size   int

	mu      sync.Mutex
	clients map[string]*list.Element
	lru     *list.List
}

type bucket struct {
	client string
	tokens float64
	at     time.Time
}

func newFailureLimiter(burst int, refill time.Duration, size int) *failureLimiter {
	return &failureLimiter{burst: float64(burst), refill: refill, size: size,
		clients: make(map[string]*list.Element), lru: list.New()}
}

// wait is how long client must wait before its next attempt is checked;
// 0 when it may try now.
func (l *failureLimiter) wait(client string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.clients[client]
	if !ok {
		return 0
	}
	b := l.fill(el.Value.(*bucket), now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(l.refill))
}

// fail takes a token from client's bucket.
func (l *failureLimiter) fail(client string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.clients[client]
	if !ok {
		if l.lru.Len() >= l.size {
			oldest := l.lru.Back()
			l.lru.Remove(oldest)
			delete(l.clients, oldest.Value.(*bucket).client)
		}
		el = l.lru.PushFront(&bucket{client: client, tokens: l.burst, at: now})
		l.clients[client] = el
	}
	l.lru.MoveToFront(el)
	b := l.fill(el.Value.(*bucket), now)
	b.tokens = max(b.tokens-1, 0)
}

func (l *failureLimiter) fill(b *bucket, now time.Time) *bucket {
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.tokens = min(l.burst, b.tokens+float64(elapsed)/float64(l.refill))
		b.at = now
	}
	return b
}
