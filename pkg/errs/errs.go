// Package errs holds Ferric's typed errors. Every error that can reach a
// client carries a Kind (the upstream Ironic exception class name, which the
// RPC layer transports) and the HTTP status the API answers with, so the
// mapping from failure to status code lives in exactly one place.
package errs

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
)

// Kind names a class of failure. The values are Ironic's exception class
// names so that logs and RPC payloads read the same as upstream.
type Kind string

const (
	KindInvalid                     Kind = "Invalid"
	KindInvalidParameterValue       Kind = "InvalidParameterValue"
	KindMissingParameterValue       Kind = "MissingParameterValue"
	KindInvalidStateRequested       Kind = "InvalidStateRequested"
	KindNodeInMaintenance           Kind = "NodeInMaintenance"
	KindPatchError                  Kind = "PatchError"
	KindUnsupportedDriverExtension  Kind = "UnsupportedDriverExtension"
	KindNoValidHost                 Kind = "NoValidHost"
	KindMalformedRequestURI         Kind = "MalformedRequestURI"
	KindNotAuthorized               Kind = "NotAuthorized"
	KindOperationNotPermitted       Kind = "OperationNotPermitted"
	KindNodeProtected               Kind = "NodeProtected"
	KindNotFound                    Kind = "NotFound"
	KindNodeNotFound                Kind = "NodeNotFound"
	KindPortNotFound                Kind = "PortNotFound"
	KindDriverNotFound              Kind = "DriverNotFound"
	KindConductorNotFound           Kind = "ConductorNotFound"
	KindVolumeConnectorNotFound     Kind = "VolumeConnectorNotFound"
	KindVolumeTargetNotFound        Kind = "VolumeTargetNotFound"
	KindNotAcceptable               Kind = "NotAcceptable"
	KindConflict                    Kind = "Conflict"
	KindInvalidState                Kind = "InvalidState"
	KindNodeLocked                  Kind = "NodeLocked"
	KindNodeAssociated              Kind = "NodeAssociated"
	KindDuplicateName               Kind = "DuplicateName"
	KindAlreadyExists               Kind = "AlreadyExists"
	KindPowerStateFailure           Kind = "PowerStateFailure"
	KindRequestEntityTooLarge       Kind = "RequestEntityTooLarge"
	KindNoFreeConductorWorker       Kind = "NoFreeConductorWorker"
	KindTemporaryFailure            Kind = "TemporaryFailure"
	KindInstanceDeployFailure       Kind = "InstanceDeployFailure"
	KindMessagingTimeout            Kind = "MessagingTimeout"
	KindUnsupportedRPCMethodVersion Kind = "UnsupportedRPCMethodVersion"
	KindInternal                    Kind = "Internal"
)

var statusByKind = map[Kind]int{
	KindInvalid:                     http.StatusBadRequest,
	KindInvalidParameterValue:       http.StatusBadRequest,
	KindMissingParameterValue:       http.StatusBadRequest,
	KindInvalidStateRequested:       http.StatusBadRequest,
	KindNodeInMaintenance:           http.StatusBadRequest,
	KindPatchError:                  http.StatusBadRequest,
	KindUnsupportedDriverExtension:  http.StatusBadRequest,
	KindNoValidHost:                 http.StatusBadRequest,
	KindMalformedRequestURI:         http.StatusBadRequest,
	KindNotAuthorized:               http.StatusForbidden,
	KindOperationNotPermitted:       http.StatusForbidden,
	KindNodeProtected:               http.StatusForbidden,
	KindNotFound:                    http.StatusNotFound,
	KindNodeNotFound:                http.StatusNotFound,
	KindPortNotFound:                http.StatusNotFound,
	KindDriverNotFound:              http.StatusNotFound,
	KindConductorNotFound:           http.StatusNotFound,
	KindVolumeConnectorNotFound:     http.StatusNotFound,
	KindVolumeTargetNotFound:        http.StatusNotFound,
	KindNotAcceptable:               http.StatusNotAcceptable,
	KindConflict:                    http.StatusConflict,
	KindInvalidState:                http.StatusConflict,
	KindNodeLocked:                  http.StatusConflict,
	KindNodeAssociated:              http.StatusConflict,
	KindDuplicateName:               http.StatusConflict,
	KindAlreadyExists:               http.StatusConflict,
	KindPowerStateFailure:           http.StatusConflict,
	KindRequestEntityTooLarge:       http.StatusRequestEntityTooLarge,
	KindNoFreeConductorWorker:       http.StatusServiceUnavailable,
	KindTemporaryFailure:            http.StatusServiceUnavailable,
	KindInstanceDeployFailure:       http.StatusInternalServerError,
	KindMessagingTimeout:            http.StatusInternalServerError,
	KindUnsupportedRPCMethodVersion: http.StatusInternalServerError,
	KindInternal:                    http.StatusInternalServerError,
}

// Error is a failure a client may see. Message is safe to show to clients
// and to log: it must never contain a secret. Status overrides the Kind's
// default code where Ironic does (e.g. NoValidHost is 404 on action calls).
type Error struct {
	Kind    Kind
	Message string
	Status  int
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// HTTPStatus is the status code the API answers with for this error.
func (e *Error) HTTPStatus() int {
	if e.Status != 0 {
		return e.Status
	}
	if s, ok := statusByKind[e.Kind]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// New builds an error of the given kind with a formatted, client-safe message.
func New(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// WithStatus returns a copy of e answered with another HTTP status.
func (e *Error) WithStatus(status int) *Error {
	c := *e
	c.Status = status
	return &c
}

// As returns the first *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// KindOf is the kind of the first *Error in err's chain, "" when there is
// none.
func KindOf(err error) Kind {
	if e, ok := As(err); ok {
		return e.Kind
	}
	return ""
}

// Is reports whether err's chain holds an *Error of one of the kinds.
func Is(err error, kinds ...Kind) bool {
	e, ok := As(err)
	if !ok {
		return false
	}
	for _, k := range kinds {
		if e.Kind == k {
			return true
		}
	}
	return false
}

// Status is the HTTP status for any error: typed errors carry theirs,
// anything else is a server fault.
func Status(err error) int {
	if e, ok := As(err); ok {
		return e.HTTPStatus()
	}
	return http.StatusInternalServerError
}

// Message is the client-visible text for any error. Untyped errors are
// internal and their text is not shown to clients.
func Message(err error) string {
	if e, ok := As(err); ok {
		return e.Message
	}
	return "An internal error occurred."
}

// Constructors for the errors raised in many places. Their wording follows
// Ironic's, which clients and operators already know.

func NodeNotFound(ident string) *Error {
	return New(KindNodeNotFound, "Node %s could not be found.", ident)
}

// DriverNotFound is the error for a hardware type no conductor offers.
func DriverNotFound(name string) *Error {
	return New(KindDriverNotFound, "Could not find the following driver(s) or hardware type(s): %s.", name)
}

func PortNotFound(ident string) *Error {
	return New(KindPortNotFound, "Port %s could not be found.", ident)
}

func NodeLocked(node, host string) *Error {
	return New(KindNodeLocked, "Node %s is locked by host %s, please retry after the current operation is completed.", node, host)
}

func InvalidStateRequested(action, node, state string) *Error {
	return New(KindInvalidStateRequested, "The requested action \"%s\" can not be performed on node \"%s\" while it is in state \"%s\".", action, node, state)
}

func NodeInMaintenance(op, node string) *Error {
	return New(KindNodeInMaintenance, "The %s operation can't be performed on node %s because it's in maintenance mode.", op, node)
}

func NoFreeConductorWorker() *Error {
	return New(KindNoFreeConductorWorker, "Requested action cannot be performed due to lack of free conductor workers.")
}

func InvalidParameterValue(format string, args ...any) *Error {
	return New(KindInvalidParameterValue, format, args...)
}

func NotAcceptable(format string, args ...any) *Error {
	if format == "" {
		return New(KindNotAcceptable, "Request not acceptable.")
	}
	return New(KindNotAcceptable, format, args...)
}

// OnlyKeys refuses the keys of m outside allowed (a request body's members
// or a query's parameters) with Ironic's message, which names them all.
func OnlyKeys[V any](m map[string]V, allowed ...string) error {
	var bad []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return New(KindInvalid, "Unexpected arguments: %s", strings.Join(bad, ", "))
}
