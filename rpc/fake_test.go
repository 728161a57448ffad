package rpc

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// fakeConductor is a ConductorAPI whose behaviour is chosen by the node id
// in each request, and which records what reached it.
type fakeConductor struct {
	mu sync.Mutex
	// gate, when not nil, holds ContinueNodeClean, ContinueNodeDeploy and
	// SetBootDevice until it is closed.
	gate       chan struct{}
	cleaned    map[string]int
	deployed   map[string]int
	requestIDs map[string]string
	deadlines  map[string]time.Time
	calls      map[string]int
}

func newFakeConductor() *fakeConductor {
	return &fakeConductor{
		cleaned:    map[string]int{},
		deployed:   map[string]int{},
		requestIDs: map[string]string{},
		deadlines:  map[string]time.Time{},
		calls:      map[string]int{},
	}
}

func (f *fakeConductor) record(ctx context.Context, method, node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method+" "+node]++
	f.requestIDs[node] = RequestID(ctx)
	if d, ok := ctx.Deadline(); ok {
		f.deadlines[node] = d
	}
}

func (f *fakeConductor) callCount(method, node string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method+" "+node]
}

// methodCount is how many times method was invoked, for any node.
func (f *fakeConductor) methodCount(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for k, v := range f.calls {
		if strings.HasPrefix(k, method+" ") {
			n += v
		}
	}
	return n
}

func (f *fakeConductor) requestID(node string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requestIDs[node]
}

func (f *fakeConductor) deadline(node string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.deadlines[node]
}

func (f *fakeConductor) cleanedNodes() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.cleaned))
	for k, v := range f.cleaned {
		out[k] = v
	}
	return out
}

func (f *fakeConductor) deployedCount(node string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.deployed[node]
}

// closeGate makes handlers wait until the returned function is called.
func (f *fakeConductor) closeGate() (open func()) {
	gate := make(chan struct{})
	f.mu.Lock()
	f.gate = gate
	f.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

func (f *fakeConductor) wait(ctx context.Context) error {
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeConductor) UpdateNode(ctx context.Context, args UpdateNodeArgs) (model.Node, error) {
	f.record(ctx, MethodUpdateNode, args.Node.UUID)
	n := args.Node
	n.Extra = model.JSONObject{"reset_interfaces": args.ResetInterfaces}
	return n, nil
}

// DestroyNode fails with an untyped error holding a secret, which must not
// cross the wire.
func (f *fakeConductor) DestroyNode(ctx context.Context, args NodeArgs) error {
	f.record(ctx, MethodDestroyNode, args.NodeID)
	return fmt.Errorf("mysql://ferric:hunter2@db/ferric: connection refused for node %s", args.NodeID)
}

// ChangeNodePowerState panics on request, and otherwise fails with a typed
// error whose status differs from its kind's default.
func (f *fakeConductor) ChangeNodePowerState(ctx context.Context, args ChangePowerStateArgs) error {
	f.record(ctx, MethodChangeNodePowerState, args.NodeID)
	if args.NewState == "panic" {
		panic("driver exploded with password hunter2")
	}
	return errs.New(errs.KindNoValidHost, "No conductor for node %s.", args.NodeID).WithStatus(http.StatusNotFound)
}

func (f *fakeConductor) DoNodeDeploy(ctx context.Context, args DeployArgs) error {
	f.record(ctx, MethodDoNodeDeploy, args.NodeID)
	return nil
}

func (f *fakeConductor) DoNodeTearDown(ctx context.Context, args NodeArgs) error {
	f.record(ctx, MethodDoNodeTearDown, args.NodeID)
	return errs.NodeLocked(args.NodeID, "conductor-1")
}

func (f *fakeConductor) DoNodeClean(ctx context.Context, args CleanArgs) error {
	f.record(ctx, MethodDoNodeClean, args.NodeID)
	if len(args.CleanSteps) == 0 {
		return errs.InvalidParameterValue("No clean steps for node %s.", args.NodeID)
	}
	return nil
}

func (f *fakeConductor) DoProvisioningAction(ctx context.Context, args ProvisioningActionArgs) error {
	f.record(ctx, MethodDoProvisioningAction, args.NodeID)
	return errs.InvalidStateRequested(args.Action, args.NodeID, "active")
}

func (f *fakeConductor) ContinueNodeClean(ctx context.Context, args NodeArgs) error {
	f.record(ctx, MethodContinueNodeClean, args.NodeID)
	if err := f.wait(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	f.cleaned[args.NodeID]++
	f.mu.Unlock()
	return nil
}

func (f *fakeConductor) ContinueNodeDeploy(ctx context.Context, args NodeArgs) error {
	f.record(ctx, MethodContinueNodeDeploy, args.NodeID)
	if err := f.wait(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	f.deployed[args.NodeID]++
	f.mu.Unlock()
	return nil
}

// ValidateDriverInterfaces answers with the node id, so concurrent callers
// can check they got their own answer.
func (f *fakeConductor) ValidateDriverInterfaces(ctx context.Context, args NodeArgs) (map[string]ValidationResult, error) {
	f.record(ctx, MethodValidateDriverInterfaces, args.NodeID)
	yes, no := true, false
	return map[string]ValidationResult{
		"power":  {Result: &yes},
		"deploy": {Result: &no, Reason: "node " + args.NodeID},
	}, nil
}

// SetBootDevice blocks until the gate opens or the caller's deadline passes.
func (f *fakeConductor) SetBootDevice(ctx context.Context, args SetBootDeviceArgs) error {
	f.record(ctx, MethodSetBootDevice, args.NodeID)
	return f.wait(ctx)
}

func (f *fakeConductor) GetBootDevice(ctx context.Context, args NodeArgs) (BootDevice, error) {
	f.record(ctx, MethodGetBootDevice, args.NodeID)
	dev, persistent := "pxe", true
	return BootDevice{BootDevice: &dev, Persistent: &persistent}, nil
}

func (f *fakeConductor) GetSupportedBootDevices(ctx context.Context, args NodeArgs) ([]string, error) {
	f.record(ctx, MethodGetSupportedBootDevices, args.NodeID)
	return []string{"pxe", "disk", "cdrom"}, nil
}

func (f *fakeConductor) UpdatePort(ctx context.Context, args PortArgs) (model.Port, error) {
	f.record(ctx, MethodUpdatePort, args.Port.UUID)
	p := args.Port
	p.PXEEnabled = !p.PXEEnabled
	return p, nil
}

func (f *fakeConductor) DestroyPort(ctx context.Context, args PortArgs) error {
	f.record(ctx, MethodDestroyPort, args.Port.UUID)
	return errs.PortNotFound(args.Port.UUID)
}

func (f *fakeConductor) Heartbeat(ctx context.Context, args HeartbeatArgs) error {
	f.record(ctx, MethodHeartbeat, args.NodeID)
	if args.AgentVersion == "" {
		return errs.InvalidParameterValue("Agent version is required.")
	}
	return nil
}

func (f *fakeConductor) VendorPassthru(ctx context.Context, args VendorPassthruArgs) (VendorPassthruResult, error) {
	f.record(ctx, MethodVendorPassthru, args.NodeID)
	return VendorPassthruResult{Return: map[string]any{"method": args.Method, "info": args.Info}, Async: args.HTTPMethod == "POST"}, nil
}
