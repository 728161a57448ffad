// Package auth checks HTTP basic credentials against an Apache htpasswd
// file whose entries are bcrypt hashes, as Ironic's http_basic strategy
// does.
package auth

import (
	"bufio"
	"bytes"
	"encoding/base64"
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

// Authenticate checks an Authorization header value. The returned message
// is safe to show to the client.
func (u Users) Authenticate(header string) (user string, message string, ok bool) {
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
	hash, known := u[name]
	if !known {
		// Spend the same time as a real check so that response timing
		// does not reveal which user names exist.
		_ = bcrypt.CompareHashAndPassword(dummyHash(), []byte(pass))
		return "", "Unauthorized", false
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(pass)) != nil {
		return "", "Unauthorized", false
	}
	return name, "", true
}

// dummyHash is made on first use: hashing at package init would slow the
// start of every binary that links this package.
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("ferric-dummy"), bcrypt.DefaultCost)
	return h
})
