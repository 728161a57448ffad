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
// past it the oldest is forgotten.
const cacheSize = 1024

// Authenticator checks Authorization headers against htpasswd users. A
// bcrypt check costs tens of milliseconds of CPU, so credentials that
// verified are remembered, keyed by an HMAC of the user, the password and
// the stored hash under a key made at start: a changed hash no longer
// matches, and the keys reveal nothing without the process's memory. A
// wrong password is never remembered.
type Authenticator struct {
	users Users
	// dummy is compared for unknown users, at the cost of the real hashes,
	// so that the time taken does not tell which user names exist.
	dummy   []byte
	compare func(hash, password []byte) error
	hmacKey []byte

	mu       sync.Mutex
	verified map[[sha256.Size]byte]struct{}
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
	dummy, err := bcrypt.GenerateFromPassword([]byte("ferric-dummy"), cost)
	if err != nil {
		return nil, fmt.Errorf("hash the dummy password: %w", err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("make the credential cache key: %w", err)
	}
	return &Authenticator{users: users, dummy: dummy, compare: bcrypt.CompareHashAndPassword, hmacKey: key,
		verified: make(map[[sha256.Size]byte]struct{}, cacheSize)}, nil
}

// Authenticate checks an Authorization header value. The returned message
// is safe to show to the client.
func (a *Authenticator) Authenticate(header string) (user string, message string, ok bool) {
	scheme, payload, found := strings.Cut(header, " ")
	if header == "" {
		return "", "Authorization required", false
	}
	if !found || !strings.EqualFold(scheme, "basic") {
		return "", "Unsupported authorization type", false
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(payload))
	if err != nil {
		return "", "Invalid authorization header", false
	}
	name, pass, found := strings.Cut(string(dec), ":")
	if !found {
		return "", "Invalid authorization header", false
	}
	hash, known := a.users[name]
	if !known {
		_ = a.compare(a.dummy, []byte(pass))
		return "", "Unauthorized", false
	}
	key := a.cacheKey(name, pass, hash)
	if a.remembered(key) {
		return name, "", true
	}
	if a.compare(hash, []byte(pass)) != nil {
		return "", "Unauthorized", false
	}
	a.remember(key)
	return name, "", true
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

func (a *Authenticator) remembered(key [sha256.Size]byte) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.verified[key]
	return ok
}

func (a *Authenticator) remember(key [sha256.Size]byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.verified[key]; ok {
		return
	}
	if len(a.order) == cacheSize {
		delete(a.verified, a.order[0])
		a.order = a.order[1:]
	}
	a.verified[key] = struct{}{}
	a.order = append(a.order, key)
}
