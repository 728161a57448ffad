// Package ident recognises and validates the identifiers clients send:
// UUIDs in their usual spellings, node names (whose rules changed with the
// microversion) and MAC addresses.
package ident

import (
	"net"
	"regexp"
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/google/uuid"
)

// uuidGroups are the hex digit groups of a UUID, each but the first
// optionally preceded by a hyphen.
var uuidGroups = [...]int{8, 4, 4, 4, 12}

// IsUUID reports whether s looks like a UUID: hyphenated or 32 plain hex
// digits, any case. It is checked for every node path, so by hand rather
// than with a regular expression.
func IsUUID(s string) bool {
	i := 0
	for g, n := range uuidGroups {
		if g > 0 && i < len(s) && s[i] == '-' {
			i++
		}
		for range n {
			if i >= len(s) || !isHex(s[i]) {
				return false
			}
			i++
		}
	}
	return i == len(s)
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// isCanonicalUUID reports whether s is already in the form CanonicalUUID
// returns.
func isCanonicalUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// CanonicalUUID is s in lower-case hyphenated form; ok is false when s is
// not UUID-like.
func CanonicalUUID(s string) (string, bool) {
	if isCanonicalUUID(s) {
		return s, true
	}
	if !IsUUID(s) {
		return "", false
	}
	u, err := uuid.Parse(strings.ToLower(s))
	if err != nil {
		return "", false
	}
	return u.String(), true
}

// CreateUUID reads the optional "uuid" of a create body: a fresh UUID when
// it is absent or null, else the canonical spelling of the one given.
// typeErr words a non-string value in the caller's schema terms.
func CreateUUID(raw any, typeErr func(name string, v any, want string) error) (string, error) {
	if raw == nil {
		return NewUUID(), nil
	}
	s, ok := raw.(string)
	if !ok {
		return "", typeErr("uuid", raw, "string")
	}
	c, ok := CanonicalUUID(s)
	if !ok {
		return "", errs.InvalidParameterValue("Expected a UUID but received %s.", s)
	}
	return c, nil
}

// NewUUID generates a random (version 4) UUID.
func NewUUID() string { return uuid.NewString() }

var (
	// RFC 3986 unreserved characters (1.10+).
	unreservedName = regexp.MustCompile(`^[A-Za-z0-9\-._~]{1,255}$`)
	hostnameLabel  = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	reservedNames  = map[string]bool{"detail": true, "validate": true, "maintenance": true,
		"management": true, "states": true, "vendor_passthru": true}
)

// ValidNodeName applies the name rules of version v (docs/api.md §3.2).
func ValidNodeName(name string, v microversion.Version) bool {
	if reservedNames[name] || IsUUID(name) {
		return false
	}
	if v.AtLeast(microversion.RFC3986Names) {
		return unreservedName.MatchString(name)
	}
	return validHostname(name)
}

func validHostname(name string) bool {
	if name == "" || len(name) > 255 {
		return false
	}
	name = strings.TrimSuffix(name, ".")
	for _, label := range strings.Split(name, ".") {
		if !hostnameLabel.MatchString(label) {
			return false
		}
	}
	return true
}

// NormalizeMAC validates a 48-bit MAC address and returns it lower-case
// and colon-separated; ok is false when s is not a MAC.
func NormalizeMAC(s string) (string, bool) {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return "", false
	}
	return hw.String(), true
}
