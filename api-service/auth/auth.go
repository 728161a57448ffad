// Package auth checks HTTP basic credentials against an Apache htpasswd
// file whose entries are bcrypt hashes, as Ironic's http_basic strategy
// does.
package auth

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Users maps user names to bcrypt hashes.
type Users map[string][]byte

// LoadHtpasswd reads an htpasswd file. Only bcrypt entries ($2y$, $2a$,
// $2b$) are accepted, so a weakly hashed password cannot be configured by
// mistake.
func LoadHtpasswd(path string) (Users, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read htpasswd file: %w", err)
	}
	return ParseHtpasswd(raw)
}

// ParseHtpasswd parses htpasswd content.
func ParseHtpasswd(raw []byte) (Users, error) {
	users := Users{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		user, hash, ok := strings.Cut(text, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("htpasswd line %d: expected user:hash", line)
		}
		if !strings.HasPrefix(hash, "$2y$") && !strings.HasPrefix(hash, "$2a$") && !strings.HasPrefix(hash, "$2b$") {
			return nil, fmt.Errorf("htpasswd line %d: only bcrypt hashes are supported", line)
		}
		users[user] = []byte(hash)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read htpasswd: %w", err)
	}
	return users, nil
}

// cacheSize bounds the verified credentials an Authenticator remembers;
// past it the oldest is forgotten. verifiedFor is how long one is.
const (
	cacheSize   = 1024
	verifiedFor = 5 * time.Minute
)

// Failed logins a client may make at once, and how fast it earns one more:
// at most one bcrypt check a second per client once the burst is spent.
const (
	failureBurst  = 10
	failureRefill = time.Second
	clientsKept   = 4096
)

// Refusal says why credentials were refused; Message is safe to show to
// the client. RetryAfter is set when the client made too many failed
// logins and must wait before it is checked again.
type Refusal struct {
	Message    string
	RetryAfter time.Duration
}

// Authenticator checks Authorization headers against htpasswd users. A
// bcrypt check costs tens of milliseconds of CPU, so credentials that
// verified are remembered for a while, keyed by an HMAC of the user, the
// password and the stored hash under a key made at start: a changed hash
// no longer matches, and the keys reveal nothing without the process's
// memory. A wrong password is never remembered, and each client may fail
// only so often before it is refused without a check.
type Authenticator struct {
	users Users
	// dummy is compared for unknown users, at the cost of the highest
	// of the real hashes.
	dummy []byte
	// floor is how long a comparison at that cost took at start. Every
	// refusal after a comparison takes at least this long, so that the
	// time taken tells neither which user names exist nor, when users'
	// hashes have different costs, which user was tried.
	floor    time.Duration
	compare  func(hash, password []byte) error
	now      func() time.Time
	sleep    func(time.Duration)
	hmacKey  []byte
	failures *failureLimiter

	mu       sync.Mutex
	verified map[[sha256.Size]byte]time.Time
	// order holds the keys of verified in insertion order, for eviction.
	order [][sha256.Size]byte
}

// NewAuthenticator prepares users for Authenticate; it hashes a dummy
// password at the highest cost among the users' hashes.
func NewAuthenticator(users Users) (*Authenticator, error) {
	cost := bcrypt.MinCost
	for name, hash := range users {
		c, err := bcrypt.Cost(hash)
		if err != nil {
			return nil, fmt.Errorf("htpasswd user %s: %w", name, err)
		}
		cost = max(cost, c)
	}
	start := time.Now()
	dummy, err := bcrypt.GenerateFromPassword([]byte("ferric-dummy"), cost)
	if err != nil {
		return nil, fmt.Errorf("hash the dummy password: %w", err)
	}
	// Hashing costs what comparing does: the same key expansion.
	floor := time.Since(start)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("make the credential cache key: %w", err)
	}
	return &Authenticator{users: users, dummy: dummy, floor: floor, compare: bcrypt.CompareHashAndPassword,
		now: time.Now, sleep: time.Sleep, hmacKey: key,
		failures: newFailureLimiter(failureBurst, failureRefill, clientsKept),
		verified: make(map[[sha256.Size]byte]time.Time, cacheSize)}, nil
}

// Authenticate checks an Authorization header value sent from client (the
// peer's address). It returns the user, or why it was refused.
func (a *Authenticator) Authenticate(header, client string) (string, *Refusal) {
	scheme, payload, found := strings.Cut(header, " ")
	if header == "" {
		return "", &Refusal{Message: "Authorization required"}
	}
	if !found || !strings.EqualFold(scheme, "basic") {
		return "", &Refusal{Message: "Unsupported authorization type"}
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(payload))
	if err != nil {
		return "", &Refusal{Message: "Invalid authorization header"}
	}
	name, pass, found := strings.Cut(string(dec), ":")
	if !found {
		return "", &Refusal{Message: "Invalid authorization header"}
	}
	hash, known := a.users[name]
	if !known {
		hash = a.dummy
	}
	key := a.cacheKey(name, pass, hash)
	now := a.now()
	// Remembered credentials pass even while their client is limited:
	// one who guesses from behind the same proxy locks out only users
	// whose logins are not remembered.
	if known && a.remembered(key, now) {
		return name, nil
	}
	if wait := a.failures.wait(client, now); wait > 0 {
		return "", &Refusal{Message: "Too many failed logins; retry later", RetryAfter: wait}
	}
	if a.compare(hash, []byte(pass)) != nil || !known {
		a.failures.fail(client, now)
		if rest := a.floor - a.now().Sub(now); rest > 0 {
			a.sleep(rest)
		}
		return "", &Refusal{Message: "Unauthorized"}
	}
	a.remember(key, now)
	return name, nil
}

func (a *Authenticator) cacheKey(name, pass string, hash []byte) [sha256.Size]byte {
	m := hmac.New(sha256.New, a.hmacKey)
	// Lengths first, so that no two (name, password, hash) run together
	// into the same bytes.
	var lens [24]byte
	binary.BigEndian.PutUint64(lens[0:], uint64(len(name)))
	binary.BigEndian.PutUint64(lens[8:], uint64(len(pass)))
	binary.BigEndian.PutUint64(lens[16:], uint64(len(hash)))
	m.Write(lens[:])
	m.Write([]byte(name))
	m.Write([]byte(pass))
	m.Write(hash)
	var key [sha256.Size]byte
	m.Sum(key[:0])
	return key
}

func (a *Authenticator) remembered(key [sha256.Size]byte, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	until, ok := a.verified[key]
	return ok && now.Before(until)
}

func (a *Authenticator) remember(key [sha256.Size]byte, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.verified[key]; ok {
		a.verified[key] = now.Add(verifiedFor)
		return
	}
	if len(a.order) == cacheSize {
		delete(a.verified, a.order[0])
		a.order = a.order[1:]
	}
	a.verified[key] = now.Add(verifiedFor)
	a.order = append(a.order, key)
}
