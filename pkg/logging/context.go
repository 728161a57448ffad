package logging

import (
	"context"
	"crypto/rand"
	"fmt"
	"regexp"

	"github.com/sirupsen/logrus"
)

type requestIDKey struct{}

type globalRequestIDKey struct{}

type loggerKey struct{}

// ContextWithRequestID returns ctx carrying the request id of the work it
// belongs to. Whoever passes the work on (an RPC message, a call to the
// agent) sends this id, and FromContext tags lines with it.
func ContextWithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the request id ctx carries, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// ContextWithGlobalRequestID returns ctx carrying the caller's request id,
// which travels beside the local one and never replaces it.
func ContextWithGlobalRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, globalRequestIDKey{}, id)
}

// GlobalRequestID is the caller's request id ctx carries, or "".
func GlobalRequestID(ctx context.Context) string {
	id, _ := ctx.Value(globalRequestIDKey{}).(string)
	return id
}

// NewRequestID makes an id in the form Ironic uses ("req-<uuid4>"), for
// work no request started (a periodic task's run) or a message sent
// without one.
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("req-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// requestIDPattern is the form oslo.context accepts from a peer
// ("req-" and a UUID, any version).
var requestIDPattern = regexp.MustCompile(`^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// ValidRequestID reports whether id, received from a peer, may be adopted
// and logged: anything else could forge log lines or grow without bound.
func ValidRequestID(id string) bool { return requestIDPattern.MatchString(id) }

// NewContext returns ctx carrying log, the logger of the work ctx belongs
// to: its fields (request id, node) follow the work into every function
// that takes ctx, with no call site adding them again.
func NewContext(ctx context.Context, log logrus.FieldLogger) context.Context {
	return context.WithValue(ctx, loggerKey{}, log)
}

// FromContext is the logger ctx carries. A ctx carrying none gets
// fallback, tagged with ctx's request ids when it has them, so a line is
// never left without the id of the work it belongs to.
func FromContext(ctx context.Context, fallback logrus.FieldLogger) logrus.FieldLogger {
	if log, ok := ctx.Value(loggerKey{}).(logrus.FieldLogger); ok {
		return log
	}
	if id := GlobalRequestID(ctx); id != "" {
		fallback = fallback.WithField(GlobalRequestIDKey, id)
	}
	if id := RequestID(ctx); id != "" {
		return fallback.WithField(RequestIDKey, id)
	}
	return fallback
}
