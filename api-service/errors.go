package apiservice

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/errs"
)

// routingError is a failure before a handler runs (unknown path, wrong
// method, version negotiation); Ironic renders those with the routing
// shape {"code", "title", "description"}.
type routingError struct {
	code        int
	description string
}

func (e *routingError) Error() string { return fmt.Sprintf("%d: %s", e.code, e.description) }

// flatError is rendered without the error_message wrapping, as Ironic's
// outer middleware does for oversized bodies.
type flatError struct {
	code    int
	message string
}

func (e *flatError) Error() string { return e.message }

func tooLarge(limit int64) *flatError {
	return &flatError{code: http.StatusRequestEntityTooLarge,
		message: fmt.Sprintf("Request is too large. Larger than max_request_body_size (%d).", limit)}
}

// authError is an authentication failure: challenge is the
// WWW-Authenticate header; Keystone's shape also has a title.
type authError struct{ message, title, challenge string }

func (e *authError) Error() string { return e.message }

// noConductorIsBadRequest is the one place that says what "no conductor
// serves this node" (NoValidHost from the hash ring, which any RPC to a
// node's conductor may meet) answers on the routes it wraps: 400, where
// Ironic re-codes it for node update and delete, maintenance, the node's
// ports, port groups and volume objects, VIFs and the agent's lookup and
// heartbeat (docs/api.md §2.2). Elsewhere it keeps its 404.
func noConductorIsBadRequest(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if e, ok := errs.As(err); ok && e.Kind == errs.KindNoValidHost {
			return e.WithStatus(http.StatusBadRequest)
		}
		return err
	}
}

// referenced re-codes the 404 of an object a request names in its body or
// query (the node of a new port, the candidates of an allocation) as 400:
// the request is wrong, not its URL.
func referenced(err error) error {
	if e, ok := errs.As(err); ok && e.HTTPStatus() == http.StatusNotFound {
		return e.WithStatus(http.StatusBadRequest)
	}
	return err
}

// handleError is the single place that turns an error into a response
// (docs/api.md §2.1). Typed errors carry their status; anything else is a
// server fault whose detail goes to the log only.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var (
		status int
		body   any
		re     *routingError
		fe     *flatError
		ae     *authError
		he     *echo.HTTPError
	)
	switch {
	case errors.As(err, &fe):
		status = fe.code
		body = map[string]string{"faultcode": "Client", "faultstring": fe.message}
	case errors.As(err, &ae):
		status = http.StatusUnauthorized
		c.Response().Header().Set("WWW-Authenticate", ae.challenge)
		inner := map[string]any{"message": ae.message, "code": status}
		if ae.title != "" {
			inner["title"] = ae.title
		}
		body = map[string]any{"error": inner}
	case errors.As(err, &re):
		status = re.code
		body = map[string]string{"error_message": routingBody(status, re.description)}
	case errors.As(err, &he):
		status = he.Code
		desc := ""
		if m, ok := he.Message.(string); ok && m != http.StatusText(status) {
			desc = m
		}
		body = map[string]string{"error_message": routingBody(status, desc)}
	default:
		status = errs.Status(err)
		fault := "Client"
		if status >= 500 {
			fault = "Server"
		}
		e, typed := errs.As(err)
		switch {
		case typed && status == http.StatusServiceUnavailable:
			s.logRefusal(c, string(e.Kind), err)
		case !typed || status >= 500:
			s.log.WithField("request_id", c.Get(keyRequestID)).WithError(err).Error("request failed")
		}
		body = map[string]string{"error_message": handlerBody(fault, errs.Message(err))}
	}
	s.writeJSON(c, status, body)
}

// refusalLogInterval is how often a designed refusal (503: the database
// full, Keystone out of reach, no free worker) is logged while it lasts.
const refusalLogInterval = 10 * time.Second

// logRefusal logs a refusal the service answered by design as a warning,
// once per kind and refusalLogInterval with the count held back since: it
// is a condition to see, not a fault per request.
func (s *Server) logRefusal(c echo.Context, kind string, err error) {
	ok, suppressed := s.refusals.Allow(kind, time.Now())
	if !ok {
		return
	}
	log := s.log.WithField("request_id", c.Get(keyRequestID)).WithError(err)
	if suppressed > 0 {
		log = log.WithField("suppressed", suppressed)
	}
	log.Warn("request refused for now")
}

func (s *Server) writeJSON(c echo.Context, status int, body any) {
	if c.Request().Method == http.MethodHead {
		c.Response().WriteHeader(status)
		return
	}
	if err := c.JSON(status, body); err != nil {
		s.log.WithError(err).Warn("write error response")
	}
}

// handlerBody is the inner document of a handler error, keys in Ironic's
// order and with Python's separators.
func handlerBody(fault, message string) string {
	var b bytes.Buffer
	b.WriteString(`{"faultcode": `)
	b.Write(mustJSON(fault))
	b.WriteString(`, "faultstring": `)
	b.Write(mustJSON(message))
	b.WriteString(`, "debuginfo": null}`)
	return b.String()
}

func routingBody(code int, description string) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"code": %d, "title": `, code)
	b.Write(mustJSON(http.StatusText(code)))
	b.WriteString(`, "description": `)
	if description == "" {
		b.WriteString("null")
	} else {
		b.Write(mustJSON(description))
	}
	b.WriteString("}")
	return b.String()
}

// mustJSON encodes a string, which cannot fail.
func mustJSON(s string) []byte {
	out, _ := json.Marshal(s)
	return out
}

// recoverPanic turns a panicking handler into a 500 in Ironic's format;
// the log (masked like every entry) keeps the value and the stack.
func (s *Server) recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if p := recover(); p != nil {
				//nolint:errorlint // a panic value, never wrapped: net/http compares it the same way
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.WithField("request_id", c.Get(keyRequestID)).WithField("stack", string(debug.Stack())).
					Errorf("request handler panicked: %v", p)
				err = errs.New(errs.KindInternal, "An internal error occurred.")
			}
		}()
		return next(c)
	}
}
