package rpc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
)

// DefaultTimeout is how long a call waits for its reply when neither the
// context nor NewClient sets a limit (Ironic's rpc_response_timeout).
const DefaultTimeout = 60 * time.Second

// Client sends the declared methods (methods.go) to conductors over a
// Transport.
type Client struct {
	t       Transport
	timeout time.Duration
	router  Router
	observe Observer
}

// Observer is told of every RPC sent or handled: the method, how long it
// took (a call: until its reply; a cast: until it was sent) and its error.
type Observer func(method string, elapsed time.Duration, err error)

// NewClient returns a client whose calls wait at most timeout for a reply
// when their context has no deadline (timeout <= 0 means DefaultTimeout).
func NewClient(t Transport, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{t: t, timeout: timeout}
}

// Check reports whether the transport can reach its broker; a transport
// without one (in-process) always can.
func (c *Client) Check(ctx context.Context) error {
	if ch, ok := c.t.(Checker); ok {
		return ch.Check(ctx)
	}
	return nil
}

// Conductor returns the endpoint of the conductor named hostname, for
// Method.Call and Command.Call.
func (c *Client) Conductor(hostname string) Endpoint {
	return Endpoint{c: c, host: hostname}
}

// withDeadline gives ctx the client's timeout unless it already has a
// deadline, which then wins (a caller may wait longer or shorter).
func (c *Client) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.timeout)
}

func requestIDOf(ctx context.Context) string {
	if id := RequestID(ctx); id != "" {
		return id
	}
	return logging.NewRequestID()
}

// Endpoint is one conductor as a client reaches it: named, or the one
// owning a node, found when a method is sent.
type Endpoint struct {
	c    *Client
	host string
	node *model.Node
}

// Router finds the conductor owning a node (the hash ring). Its errors
// (errs.KindNoValidHost when no conductor serves the node's hardware type
// and group, errs.KindTemporaryFailure when none is alive) are what
// Method.Call returns for an endpoint it cannot resolve.
type Router interface {
	Lookup(ctx context.Context, group, hardwareType, nodeUUID string) (host string, err error)
}

// WithRouter returns a client that shares c's transport and timeout and
// routes ForNode endpoints with r.
func (c *Client) WithRouter(r Router) *Client {
	routed := *c
	routed.router = r
	return &routed
}

// WithObserver returns a client that shares c's transport, timeout and
// router and reports every method it sends to o.
func (c *Client) WithObserver(o Observer) *Client {
	observed := *c
	observed.observe = o
	return &observed
}

// ForNode returns the endpoint of the conductor owning n (its conductor
// group, hardware type and uuid, as they are now): the client's Router
// looks it up each time a method is sent, so a method always reaches the
// current owner.
func (c *Client) ForNode(n *model.Node) Endpoint {
	owner := model.Node{UUID: n.UUID, ConductorGroup: n.ConductorGroup, Driver: n.Driver}
	return Endpoint{c: c, node: &owner}
}

// resolve names the conductor the endpoint stands for.
func (e Endpoint) resolve(ctx context.Context) (string, error) {
	if e.node == nil {
		return e.host, nil
	}
	if e.c.router == nil {
		return "", fmt.Errorf("rpc: no router to find the conductor of node %s", e.node.UUID)
	}
	return e.c.router.Lookup(ctx, e.node.ConductorGroup, e.node.Driver, e.node.UUID)
}

// Resolve pins the endpoint to the conductor it stands for now, for a
// caller that must know a node has a conductor before it goes on.
func (e Endpoint) Resolve(ctx context.Context) (Endpoint, error) {
	host, err := e.resolve(ctx)
	if err != nil {
		return Endpoint{}, err
	}
	return e.c.Conductor(host), nil
}

func (e Endpoint) call(ctx context.Context, method string, args, result any) (err error) {
	if e.c.observe != nil {
		defer e.c.observed(method, time.Now(), &err)
	}
	ctx, cancel := e.c.withDeadline(ctx)
	defer cancel()
	host, err := e.resolve(ctx)
	if err != nil {
		return err
	}
	deadline, _ := ctx.Deadline()
	body, err := encodeRequest(ctx, method, args, deadline)
	if err != nil {
		return err
	}
	data, err := e.c.t.Call(ctx, topicFor(host), body)
	if err != nil {
		return sendError(method, host, err)
	}
	return decodeReply(data, result)
}

func (e Endpoint) cast(ctx context.Context, method string, args any) (err error) {
	if e.c.observe != nil {
		defer e.c.observed(method, time.Now(), &err)
	}
	ctx, cancel := e.c.withDeadline(ctx)
	defer cancel()
	host, err := e.resolve(ctx)
	if err != nil {
		return err
	}
	// A cast carries no deadline: it stays useful however late it is
	// handled. ctx bounds only the sending.
	body, err := encodeRequest(ctx, method, args, time.Time{})
	if err != nil {
		return err
	}
	if err := e.c.t.Cast(ctx, topicFor(host), body); err != nil {
		return sendError(method, host, err)
	}
	return nil
}

func (c *Client) observed(method string, start time.Time, err *error) {
	c.observe(method, time.Since(start), *err)
}

func sendError(method, host string, err error) error {
	if _, ok := errs.As(err); ok {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &errs.Error{
			Kind:    errs.KindMessagingTimeout,
			Message: fmt.Sprintf("Timed out waiting for a reply to %s from conductor %s.", method, host),
			Err:     err,
		}
	}
	return fmt.Errorf("rpc %s to conductor %s: %w", method, host, err)
}
