package iscsi

import (
	"errors"
	"fmt"
)

var (
	// ErrProtocol reports a PDU from the target that violates RFC 7143 or the negotiated
	// parameters. The session is unusable afterwards.
	ErrProtocol = errors.New("iscsi protocol violation")
	// ErrSessionClosed is returned by operations on a session after Close.
	ErrSessionClosed = errors.New("iscsi session closed")
	// ErrAuthentication matches (errors.Is) a login refused because CHAP failed or was required.
	ErrAuthentication = errors.New("iscsi authentication failed")
	// ErrTargetNotFound matches a login refused because the target name is unknown or removed.
	ErrTargetNotFound = errors.New("iscsi target not found")
	// ErrTimeout matches a command or login that took longer than its configured timeout.
	ErrTimeout = errors.New("iscsi timeout")
)

// LoginError is a Login Response with a non-zero status (RFC 7143 §11.13.5).
type LoginError struct {
	Target string
	Class  byte
	Detail byte
}

func (e *LoginError) Error() string {
	return fmt.Sprintf("iscsi login to %s refused: %s (status 0x%02x%02x)", e.Target, e.reason(), e.Class, e.Detail)
}

func (e *LoginError) reason() string {
	switch uint16(e.Class)<<8 | uint16(e.Detail) {
	case 0x0101:
		return "target moved temporarily"
	case 0x0102:
		return "target moved permanently"
	case 0x0200:
		return "initiator error"
	case 0x0201:
		return "authentication failure"
	case 0x0202:
		return "authorization failure"
	case 0x0203:
		return "target not found"
	case 0x0204:
		return "target removed"
	case 0x0205:
		return "unsupported version"
	case 0x0206:
		return "too many connections"
	case 0x0207:
		return "missing parameter"
	case 0x0208:
		return "cannot include in session"
	case 0x0209:
		return "session type not supported"
	case 0x020a:
		return "session does not exist"
	case 0x020b:
		return "invalid request during login"
	case 0x0300:
		return "target error"
	case 0x0301:
		return "service unavailable"
	case 0x0302:
		return "out of resources"
	}
	return "unknown status"
}

// Is lets callers test for the common refusals without decoding status codes.
func (e *LoginError) Is(target error) bool {
	switch target {
	case ErrAuthentication:
		return e.Class == 2 && (e.Detail == 1 || e.Detail == 2)
	case ErrTargetNotFound:
		return e.Class == 2 && (e.Detail == 3 || e.Detail == 4)
	}
	return false
}
