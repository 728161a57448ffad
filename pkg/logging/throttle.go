package logging

import (
	"sync"
	"time"
)

// Throttle lets one line a key through per interval and counts the rest,
// for conditions that repeat on every request while they last (a full
// database, Keystone out of reach): one line says it, with how many were
// left out since, instead of one a request.
type Throttle struct {
	interval time.Duration

	mu   sync.Mutex
	keys map[string]*throttled
}

type throttled struct {
	last       time.Time
	suppressed int
}

// NewThrottle lets a key through at most once per interval.
func NewThrottle(interval time.Duration) *Throttle {
	return &Throttle{interval: interval, keys: map[string]*throttled{}}
}

// Allow reports whether a line for key may be logged at now, and how many
// were held back since the last one. Keys come from a closed set (error
// kinds), so the map stays small.
func (t *Throttle) Allow(key string, now time.Time) (ok bool, suppressed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k, seen := t.keys[key]
	if !seen {
		t.keys[key] = &throttled{last: now}
		return true, 0
	}
	if now.Sub(k.last) < t.interval {
		k.suppressed++
		return false, 0
	}
	suppressed = k.suppressed
	k.last, k.suppressed = now, 0
	return true, suppressed
}
