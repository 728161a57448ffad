package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
)

// MaxInFlight bounds how many messages one Serve handles at once; on AMQP it
// is also the consumer prefetch, so the broker keeps the rest queued.
// Handlers are short (async methods hand their work to the conductor's own
// worker pool), so this bounds memory and goroutines, not throughput.
const MaxInFlight = 64

// Serve consumes the RPC topic of the conductor named hostname on t and
// dispatches every message to the handlers on mux, up to MaxInFlight
// concurrently. mux must handle every declared method (Methods). Each
// handler's context carries the message's request id (RequestID), a logger
// tagged with it and the method (logging.FromContext), and the caller's
// deadline; it is not cancelled when ctx is. A message whose
// deadline has passed is dropped unhandled; a panicking handler is answered
// with an internal error and does not stop the server.
//
// Serving stops when ctx is done or stop is called; stop returns once every
// started handler has finished (on AMQP, messages not yet started go back to
// the queue). Serve returns an error if the topic cannot be set up before ctx
// is done.
func Serve(ctx context.Context, t Transport, hostname string, mux *Mux, log logrus.FieldLogger) (stop func(), err error) {
	if missing := mux.missing(); len(missing) > 0 {
		return nil, fmt.Errorf("serve rpc for conductor %s: no handler for %s", hostname, strings.Join(missing, ", "))
	}
	if log == nil {
		log = logging.Discard()
	}
	s := &server{
		base: context.WithoutCancel(ctx),
		mux:  mux,
		log:  log.WithField("conductor", hostname),
	}
	stopListen, err := t.Listen(ctx, topicFor(hostname), MaxInFlight, s.handle)
	if err != nil {
		return nil, fmt.Errorf("serve rpc for conductor %s: %w", hostname, err)
	}
	done := make(chan struct{})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(done)
			stopListen()
		})
	}
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-done:
		}
	}()
	return stop, nil
}

type server struct {
	base context.Context
	mux  *Mux
	log  logrus.FieldLogger
}

func (s *server) handle(body []byte) []byte {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		s.log.WithError(err).Warn("rejecting malformed RPC message")
		return encodeReply(nil, errs.InvalidParameterValue("Malformed RPC message."))
	}
	if req.RequestID == "" {
		// A hand-made message may carry none; the work still gets one.
		req.RequestID = logging.NewRequestID()
	}
	fields := logrus.Fields{"method": req.Method, logging.RequestIDKey: req.RequestID}
	ctx := WithRequestID(s.base, req.RequestID)
	if logging.ValidRequestID(req.GlobalRequestID) {
		fields[logging.GlobalRequestIDKey] = req.GlobalRequestID
		ctx = logging.ContextWithGlobalRequestID(ctx, req.GlobalRequestID)
	}
	log := s.log.WithFields(fields)
	ctx = logging.NewContext(ctx, log)
	if req.Deadline != "" {
		deadline, err := time.Parse(time.RFC3339Nano, req.Deadline)
		if err != nil {
			log.WithError(err).Warn("rejecting RPC message with a malformed deadline")
			return encodeReply(nil, errs.InvalidParameterValue("Malformed RPC deadline %q.", req.Deadline))
		}
		if !time.Now().Before(deadline) {
			log.Warn("dropping RPC message whose deadline has passed")
			return nil
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	if err := checkVersion(req.Envelope, req.Version); err != nil {
		log.WithField("version", req.Version).Warn("rejecting RPC message of an unsupported version")
		return encodeReply(nil, err)
	}
	m, ok := s.mux.handlers[req.Method]
	if !ok {
		log.Warn("rejecting unknown RPC method")
		return encodeReply(nil, errs.InvalidParameterValue("Unsupported RPC method %q.", req.Method))
	}
	if s.mux.gate != nil {
		if err := s.mux.gate.wait(ctx); ctx.Err() != nil {
			log.Warn("dropping RPC message whose caller stopped waiting before the conductor had started")
			return nil
		} else if err != nil {
			return encodeReply(nil, err)
		}
	}
	start := time.Now()
	result, err := s.invoke(ctx, log, m, req.Args)
	if s.mux.observe != nil {
		s.mux.observe(req.Method, time.Since(start), err)
	}
	if ctx.Err() != nil {
		// The caller stopped waiting; whatever the outcome, nobody reads it.
		log.WithError(err).Warn("RPC method outlived the caller's deadline; not replying")
		return nil
	}
	if err != nil {
		if _, typed := errs.As(err); typed {
			log.WithError(err).Debug("RPC method failed")
		} else {
			log.WithError(err).Error("RPC method failed with an untyped error")
		}
	}
	return encodeReply(result, err)
}

func (s *server) invoke(ctx context.Context, log logrus.FieldLogger, m serverMethod, args json.RawMessage) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			log.WithField("stack", string(debug.Stack())).Errorf("RPC method panicked: %v", p)
			result, err = nil, errs.New(errs.KindInternal, "An internal error occurred.")
		}
	}()
	return m(ctx, args)
}

// Mux maps method names to their handlers; Method.Handle and
// Command.Handle fill it.
type Mux struct {
	handlers map[string]serverMethod
	gate     *Gate
	observe  Observer
}

// HoldUntil makes Serve hold every message until g opens.
func (mux *Mux) HoldUntil(g *Gate) { mux.gate = g }

func NewMux() *Mux { return &Mux{handlers: map[string]serverMethod{}} }

// Observe makes the server report every method it runs to o; it must be
// set before Serve.
func (mux *Mux) Observe(o Observer) { mux.observe = o }

// serverMethod decodes a method's arguments and runs it.
type serverMethod func(ctx context.Context, args json.RawMessage) (any, error)

func (mux *Mux) handle(name string, h serverMethod) {
	if _, dup := mux.handlers[name]; dup {
		panic("rpc: method " + name + " handled twice")
	}
	mux.handlers[name] = h
}

// missing lists the declared methods mux has no handler for.
func (mux *Mux) missing() []string {
	var out []string
	for _, s := range declared {
		if _, ok := mux.handlers[s.Name]; !ok {
			out = append(out, s.Name)
		}
	}
	return out
}

func decodeArgs(raw json.RawMessage, a any) error {
	if len(raw) == 0 {
		return errs.New(errs.KindMissingParameterValue, "RPC message has no arguments.")
	}
	if err := json.Unmarshal(raw, a); err != nil {
		return errs.InvalidParameterValue("Invalid RPC arguments: %s", jsonProblem(err))
	}
	return nil
}

// jsonProblem describes a decoding failure without echoing the payload,
// which may hold secrets (driver_info passwords).
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q must be %s, not %s.", te.Field, te.Type, te.Value)
	}
	return "malformed JSON."
}
