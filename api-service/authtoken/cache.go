package authtoken

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"
)

// cache remembers validated tokens by their SHA-256 (the tokens
// themselves are not kept), each until a deadline, at most size of them:
// past that the least recently used is forgotten.
type cache struct {
	size int

	mu      sync.Mutex
	entries map[[sha256.Size]byte]*list.Element
	lru     *list.List
}

type entry struct {
	key   [sha256.Size]byte
	id    Identity
	until time.Time
}

func newCache(size int) *cache {
	return &cache{size: size, entries: make(map[[sha256.Size]byte]*list.Element), lru: list.New()}
}

func (c *cache) get(key [sha256.Size]byte, now time.Time) (Identity, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return Identity{}, false
	}
	e := el.Value.(*entry)
	if !now.Before(e.until) {
		c.lru.Remove(el)
		delete(c.entries, key)
		return Identity{}, false
	}
	c.lru.MoveToFront(el)
	return e.id, true
}

func (c *cache) put(key [sha256.Size]byte, id Identity, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		el.Value = &entry{key: key, id: id, until: until}
		c.lru.MoveToFront(el)
		return
	}
	if c.lru.Len() >= c.size {
		oldest := c.lru.Back()
		c.lru.Remove(oldest)
		delete(c.entries, oldest.Value.(*entry).key)
	}
	c.entries[key] = c.lru.PushFront(&entry{key: key, id: id, until: until})
}
