package rpc

import (
	"context"
	"errors"

	"github.com/ferricbm/ferric/pkg/errs"
)

// Checker is a Transport that depends on something outside the process (a
// broker) and can tell whether it is reachable now.
type Checker interface {
	// Check returns nil once the transport can send, or an error when ctx
	// ends first or the transport is closed.
	Check(ctx context.Context) error
}

// Transport moves encoded messages between clients and servers. Messages are
// opaque bytes to a transport; the JSON inside is the same for every
// transport, so behaviour does not depend on which one carries it.
type Transport interface {
	// Call sends request to topic and waits for the reply until ctx is
	// done, returning ctx's error then. A request nobody listens on fails
	// promptly with an errs.KindTemporaryFailure error.
	Call(ctx context.Context, topic string, request []byte) (reply []byte, err error)
	// Cast sends request to topic without waiting for it to be handled. It
	// returns nil once the transport has accepted the message for delivery
	// (for AMQP: the broker confirmed it persisted the message).
	Cast(ctx context.Context, topic string, request []byte) error
	// Listen delivers the messages sent to topic to h, running at most
	// maxInFlight handlers at once. ctx bounds only the set-up. stop ends
	// the intake and returns once every started handler has finished.
	Listen(ctx context.Context, topic string, maxInFlight int, h Handler) (stop func(), err error)
	// Close stops all listeners (as their stop does) and releases the
	// transport's resources. Later calls fail.
	Close() error
}

// Handler handles one message. For a call, a non-nil result is sent back as
// the reply; a nil result sends nothing (the caller's deadline has passed).
// The result of a cast is discarded. A Handler must not panic.
type Handler func(request []byte) (reply []byte)

// errConnectionLost marks failures where the message may or may not have
// reached the conductor, so a cast can be sent again and a caller knows a
// call's effect is unknown.
var errConnectionLost = errors.New("connection to the message broker lost")

func connectionLost() error {
	return &errs.Error{
		Kind:    errs.KindTemporaryFailure,
		Message: "The connection to the message broker was lost; the request may or may not have been processed. Please retry.",
		Err:     errConnectionLost,
	}
}

func unroutable(topic string) error {
	return errs.New(errs.KindTemporaryFailure, "No conductor serves RPC topic %s; please retry later.", topic)
}

func transportClosed() error {
	return errs.New(errs.KindTemporaryFailure, "The RPC transport is shut down.")
}
