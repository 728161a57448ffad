package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
)

// envelopeVersion is the version of the message envelope itself (the
// "ferric.version" field). It changes only if the envelope's shape changes;
// the API's evolution is tracked by APIVersion in the "version" field.
const envelopeVersion = "1"

// topicPrefix + hostname is a conductor's topic: the AMQP routing key and
// queue name, and the in-process registry key.
const topicPrefix = "ferric.conductor."

func topicFor(hostname string) string { return topicPrefix + hostname }

// request is the message a client sends.
type request struct {
	Envelope  string          `json:"ferric.version"`
	Method    string          `json:"method"`
	Version   string          `json:"version"`
	Args      json.RawMessage `json:"args"`
	RequestID string          `json:"request_id,omitempty"`
	// GlobalRequestID is the API caller's own request id, when it sent
	// one; servers that predate it ignore the field.
	GlobalRequestID string `json:"global_request_id,omitempty"`
	// Deadline (RFC 3339, UTC) after which the caller no longer waits for
	// a reply; the server drops the message unprocessed once it has passed.
	Deadline string `json:"deadline,omitempty"`
}

// reply is the message a server answers a call with: exactly one of Result
// (JSON null for methods that only return an error) and Error is set.
type reply struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
}

// wireError is an *errs.Error on the wire.
type wireError struct {
	Kind    errs.Kind `json:"kind"`
	Message string    `json:"message"`
	Status  int       `json:"status"`
}

var jsonNull = json.RawMessage("null")

// encodeRequest builds the message of a call or cast; ctx gives its request
// ids.
func encodeRequest(ctx context.Context, method string, args any, deadline time.Time) ([]byte, error) {
	a, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("encode %s arguments: %w", method, err)
	}
	req := request{
		Envelope:        envelopeVersion,
		Method:          method,
		Version:         APIVersion,
		Args:            a,
		RequestID:       requestIDOf(ctx),
		GlobalRequestID: logging.GlobalRequestID(ctx),
	}
	if !deadline.IsZero() {
		req.Deadline = deadline.UTC().Format(time.RFC3339Nano)
	}
	return json.Marshal(req)
}

// encodeReply builds the reply for a handler's outcome. Typed errors keep
// their kind, message and status; anything else becomes a generic internal
// error so that no internal detail leaves the conductor.
func encodeReply(result any, err error) []byte {
	var r reply
	if err != nil {
		r.Error = toWire(err)
	} else if result == nil {
		r.Result = jsonNull
	} else if b, merr := json.Marshal(result); merr != nil {
		r.Error = toWire(merr)
	} else {
		r.Result = b
	}
	// A reply holds only valid raw JSON and plain fields, so it always encodes.
	out, _ := json.Marshal(r)
	return out
}

func toWire(err error) *wireError {
	if e, ok := errs.As(err); ok {
		return &wireError{Kind: e.Kind, Message: e.Message, Status: e.HTTPStatus()}
	}
	return &wireError{Kind: errs.KindInternal, Message: errs.Message(err), Status: http.StatusInternalServerError}
}

// decodeReply turns a reply into the method's result or its typed error.
func decodeReply(data []byte, result any) error {
	var r reply
	if err := json.Unmarshal(data, &r); err != nil {
		return &errs.Error{Kind: errs.KindInternal, Message: "Malformed RPC reply.", Err: err}
	}
	if r.Error != nil {
		return &errs.Error{Kind: r.Error.Kind, Message: r.Error.Message, Status: r.Error.Status}
	}
	if result == nil || len(r.Result) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.Result, result); err != nil {
		return &errs.Error{Kind: errs.KindInternal, Message: "Malformed RPC reply.", Err: err}
	}
	return nil
}

// checkVersion accepts a message whose API version has the server's major
// and a minor no newer than the server's: minor versions only add methods
// and optional arguments, so older messages are understood.
func checkVersion(envelope, version string) error {
	if envelope != envelopeVersion {
		return errs.New(errs.KindUnsupportedRPCMethodVersion,
			"RPC message envelope version %q is not supported (expected %q).", envelope, envelopeVersion)
	}
	major, minor, ok := parseVersion(version)
	ourMajor, ourMinor, _ := parseVersion(APIVersion)
	if !ok || major != ourMajor || minor > ourMinor {
		return errs.New(errs.KindUnsupportedRPCMethodVersion,
			"RPC API version %q is not supported by this conductor, which speaks %s.", version, APIVersion)
	}
	return nil
}

func parseVersion(v string) (major, minor int, ok bool) {
	a, b, found := strings.Cut(v, ".")
	if !found {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return 0, 0, false
	}
	return major, minor, true
}
