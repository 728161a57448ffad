package rpc

import (
	"context"

	"github.com/ferricbm/ferric/pkg/logging"
)

// WithRequestID returns a context carrying the request id that the Client
// puts into every message it sends, so a conductor's logs can be matched to
// the API request that caused them. It is logging's request id: a
// conductor passes it on to the agents it calls.
func WithRequestID(ctx context.Context, id string) context.Context {
	return logging.ContextWithRequestID(ctx, id)
}

// RequestID is the request id carried by ctx, or "". On the conductor side,
// Serve puts the id received in the message into the handler's context,
// with a logger tagged with it (logging.FromContext).
func RequestID(ctx context.Context) string { return logging.RequestID(ctx) }
