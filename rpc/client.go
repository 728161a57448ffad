package rpc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// DefaultTimeout is how long a call waits for its reply when neither the
// context nor NewClient sets a limit (Ironic's rpc_response_timeout).
const DefaultTimeout = 60 * time.Second

// Client sends ConductorAPI methods to conductors over a Transport.
type Client struct {
	t       Transport
	timeout time.Duration
}

// NewClient returns a client whose calls wait at most timeout for a reply
// when their context has no deadline (timeout <= 0 means DefaultTimeout).
func NewClient(t Transport, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{t: t, timeout: timeout}
}

// Conductor returns the ConductorAPI of the conductor named hostname. Each
// method is a call (waits for the reply) except ContinueNodeClean and
// ContinueNodeDeploy, which are casts: they return once the message is
// accepted for delivery and report only failures to send it.
//
// Errors are *errs.Error: the conductor's own typed error (kind, message and
// status preserved), errs.KindMessagingTimeout when no reply came before the
// deadline, or errs.KindTemporaryFailure when the message could not be
// delivered (no such conductor queue, broker connection lost).
func (c *Client) Conductor(hostname string) ConductorAPI {
	return conductorClient{c: c, host: hostname, topic: topicFor(hostname)}
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
	return newRequestID()
}

type conductorClient struct {
	c     *Client
	host  string
	topic string
}

func (cc conductorClient) call(ctx context.Context, method string, args, result any) error {
	ctx, cancel := cc.c.withDeadline(ctx)
	defer cancel()
	deadline, _ := ctx.Deadline()
	body, err := encodeRequest(method, requestIDOf(ctx), args, deadline)
	if err != nil {
		return err
	}
	data, err := cc.c.t.Call(ctx, cc.topic, body)
	if err != nil {
		return cc.sendError(method, err)
	}
	return decodeReply(data, result)
}

func (cc conductorClient) cast(ctx context.Context, method string, args any) error {
	ctx, cancel := cc.c.withDeadline(ctx)
	defer cancel()
	// A cast carries no deadline: it stays useful however late it is
	// handled. ctx bounds only the sending.
	body, err := encodeRequest(method, requestIDOf(ctx), args, time.Time{})
	if err != nil {
		return err
	}
	if err := cc.c.t.Cast(ctx, cc.topic, body); err != nil {
		return cc.sendError(method, err)
	}
	return nil
}

func (cc conductorClient) sendError(method string, err error) error {
	if _, ok := errs.As(err); ok {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &errs.Error{
			Kind:    errs.KindMessagingTimeout,
			Message: fmt.Sprintf("Timed out waiting for a reply to %s from conductor %s.", method, cc.host),
			Err:     err,
		}
	}
	return fmt.Errorf("rpc %s to conductor %s: %w", method, cc.host, err)
}

func (cc conductorClient) UpdateNode(ctx context.Context, args UpdateNodeArgs) (model.Node, error) {
	var n model.Node
	err := cc.call(ctx, MethodUpdateNode, args, &n)
	return n, err
}

func (cc conductorClient) DestroyNode(ctx context.Context, args NodeArgs) error {
	return cc.call(ctx, MethodDestroyNode, args, nil)
}

func (cc conductorClient) ChangeNodePowerState(ctx context.Context, args ChangePowerStateArgs) error {
	return cc.call(ctx, MethodChangeNodePowerState, args, nil)
}

func (cc conductorClient) DoNodeDeploy(ctx context.Context, args DeployArgs) error {
	return cc.call(ctx, MethodDoNodeDeploy, args, nil)
}

func (cc conductorClient) DoNodeTearDown(ctx context.Context, args NodeArgs) error {
	return cc.call(ctx, MethodDoNodeTearDown, args, nil)
}

func (cc conductorClient) DoNodeClean(ctx context.Context, args CleanArgs) error {
	return cc.call(ctx, MethodDoNodeClean, args, nil)
}

func (cc conductorClient) DoProvisioningAction(ctx context.Context, args ProvisioningActionArgs) error {
	return cc.call(ctx, MethodDoProvisioningAction, args, nil)
}

func (cc conductorClient) ContinueNodeClean(ctx context.Context, args NodeArgs) error {
	return cc.cast(ctx, MethodContinueNodeClean, args)
}

func (cc conductorClient) ContinueNodeDeploy(ctx context.Context, args NodeArgs) error {
	return cc.cast(ctx, MethodContinueNodeDeploy, args)
}

func (cc conductorClient) ValidateDriverInterfaces(ctx context.Context, args NodeArgs) (map[string]ValidationResult, error) {
	var r map[string]ValidationResult
	err := cc.call(ctx, MethodValidateDriverInterfaces, args, &r)
	return r, err
}

func (cc conductorClient) SetBootDevice(ctx context.Context, args SetBootDeviceArgs) error {
	return cc.call(ctx, MethodSetBootDevice, args, nil)
}

func (cc conductorClient) GetBootDevice(ctx context.Context, args NodeArgs) (BootDevice, error) {
	var r BootDevice
	err := cc.call(ctx, MethodGetBootDevice, args, &r)
	return r, err
}

func (cc conductorClient) GetSupportedBootDevices(ctx context.Context, args NodeArgs) ([]string, error) {
	var r []string
	err := cc.call(ctx, MethodGetSupportedBootDevices, args, &r)
	return r, err
}

func (cc conductorClient) UpdatePort(ctx context.Context, args PortArgs) (model.Port, error) {
	var p model.Port
	err := cc.call(ctx, MethodUpdatePort, args, &p)
	return p, err
}

func (cc conductorClient) DestroyPort(ctx context.Context, args PortArgs) error {
	return cc.call(ctx, MethodDestroyPort, args, nil)
}

func (cc conductorClient) Heartbeat(ctx context.Context, args HeartbeatArgs) error {
	return cc.call(ctx, MethodHeartbeat, args, nil)
}

func (cc conductorClient) VendorPassthru(ctx context.Context, args VendorPassthruArgs) (VendorPassthruResult, error) {
	var r VendorPassthruResult
	err := cc.call(ctx, MethodVendorPassthru, args, &r)
	return r, err
}
