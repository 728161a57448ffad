package rpc

import (
	"context"
	"crypto/rand"
	"fmt"
)

type requestIDKey struct{}

// WithRequestID returns a context carrying the request id that the Client
// puts into every message it sends, so a conductor's logs can be matched to
// the API request that caused them.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the request id carried by ctx, or "". On the conductor side,
// Serve puts the id received in the message into the handler's context.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// newRequestID makes an id in the form Ironic uses ("req-<uuid4>") for
// messages whose context carries none.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("req-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
