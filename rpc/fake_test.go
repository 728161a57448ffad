package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
)

// fakeConductor serves every declared method with a behaviour chosen by the
// node id in each request, and records what reached it: the recording wraps
// the handlers generically, from the request on the wire.
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

// mux serves f, recording each message once its arguments decoded.
func (f *fakeConductor) mux() *Mux {
	mux := NewMux()
	recordMethod(f, mux, UpdateNode, f.UpdateNode)
	recordCommand(f, mux, DestroyNode, f.DestroyNode)
	recordCommand(f, mux, ChangeNodePowerState, f.ChangeNodePowerState)
	recordCommand(f, mux, DoNodeDeploy, f.DoNodeDeploy)
	recordCommand(f, mux, DoNodeTearDown, f.DoNodeTearDown)
	recordCommand(f, mux, DoNodeClean, f.DoNodeClean)
	recordCommand(f, mux, DoProvisioningAction, f.DoProvisioningAction)
	recordCommand(f, mux, ContinueNodeClean, f.ContinueNodeClean)
	recordCommand(f, mux, ContinueNodeDeploy, f.ContinueNodeDeploy)
	recordMethod(f, mux, ValidateDriverInterfaces, f.ValidateDriverInterfaces)
	recordCommand(f, mux, SetBootDevice, f.SetBootDevice)
	recordMethod(f, mux, GetBootDevice, f.GetBootDevice)
	recordMethod(f, mux, GetSupportedBootDevices, f.GetSupportedBootDevices)
	recordMethod(f, mux, UpdatePort, f.UpdatePort)
	recordCommand(f, mux, DestroyPort, f.DestroyPort)
	recordCommand(f, mux, Heartbeat, f.Heartbeat)
	recordMethod(f, mux, VendorPassthru, f.VendorPassthru)
	recordCommand(f, mux, SetTargetRAIDConfig, f.SetTargetRAIDConfig)
	recordMethod(f, mux, GetRAIDLogicalDiskProperties, f.GetRAIDLogicalDiskProperties)
	recordMethod(f, mux, GetDriverProperties, f.GetDriverProperties)
	recordCommand(f, mux, SetConsoleMode, f.SetConsoleMode)
	recordMethod(f, mux, GetConsoleInformation, f.GetConsoleInformation)
	recordCommand(f, mux, InjectNMI, f.InjectNMI)
	recordMethod(f, mux, GetNodeVendorPassthruMethods, f.GetNodeVendorPassthruMethods)
	recordMethod(f, mux, GetDriverVendorPassthruMethods, f.GetDriverVendorPassthruMethods)
	recordMethod(f, mux, DriverVendorPassthru, f.DriverVendorPassthru)
	recordMethod(f, mux, GetNodeWithToken, f.GetNodeWithToken)
	recordMethod(f, mux, VIFList, f.VIFList)
	recordCommand(f, mux, VIFAttach, f.VIFAttach)
	recordCommand(f, mux, VIFDetach, f.VIFDetach)
	recordMethod(f, mux, UpdateVolumeConnector, f.UpdateVolumeConnector)
	recordCommand(f, mux, DestroyVolumeConnector, f.DestroyVolumeConnector)
	recordMethod(f, mux, UpdateVolumeTarget, f.UpdateVolumeTarget)
	recordCommand(f, mux, DestroyVolumeTarget, f.DestroyVolumeTarget)
	recordMethod(f, mux, UpdatePortgroup, f.UpdatePortgroup)
	recordCommand(f, mux, DestroyPortgroup, f.DestroyPortgroup)
	recordCommand(f, mux, AddNodeTraits, f.AddNodeTraits)
	recordCommand(f, mux, RemoveNodeTraits, f.RemoveNodeTraits)
	recordCommand(f, mux, DoNodeRescue, f.DoNodeRescue)
	recordCommand(f, mux, DoNodeUnrescue, f.DoNodeUnrescue)
	recordMethod(f, mux, GetBIOSSettings, f.GetBIOSSettings)
	return mux
}

// recordMethod and recordCommand register a fake handler that records
// each call whose arguments decoded.
func recordMethod[A, R any](f *fakeConductor, mux *Mux, m Method[A, R], h func(context.Context, A) (R, error)) {
	m.Handle(mux, func(ctx context.Context, args A) (R, error) {
		f.record(ctx, m.Name, subjectOf(args))
		return h(ctx, args)
	})
}

func recordCommand[A any](f *fakeConductor, mux *Mux, m Command[A], h func(context.Context, A) error) {
	m.Handle(mux, func(ctx context.Context, args A) error {
		f.record(ctx, m.Name, subjectOf(args))
		return h(ctx, args)
	})
}

// subjectOf is what a request is about, read from its arguments as they
// travel: their node_id or driver_name, or the uuid of the one object they
// carry (a 1.0 update, a port to destroy).
func subjectOf(decoded any) string {
	raw, _ := json.Marshal(decoded)
	var args map[string]json.RawMessage
	_ = json.Unmarshal(raw, &args)
	var id string
	for _, key := range []string{"node_id", "driver_name"} {
		if json.Unmarshal(args[key], &id) == nil && id != "" {
			return id
		}
	}
	for _, key := range []string{"node", "port", "portgroup", "connector", "target"} {
		var obj struct {
			UUID string `json:"uuid"`
		}
		if json.Unmarshal(args[key], &obj) == nil && obj.UUID != "" {
			return obj.UUID
		}
	}
	return ""
}

// savedNow is the updated_at of an object the fake "saves".
func savedNow() *time.Time {
	now := time.Now().UTC()
	return &now
}

// serveFake serves a new fake on a fresh in-process transport and returns it
// with the endpoint that reaches it.
func serveFake() (*fakeConductor, Endpoint) {
	t := NewInProcess()
	DeferCleanup(t.Close)
	fake := newFakeConductor()
	host := uniqueHost()
	stop, err := Serve(context.Background(), t, host, fake.mux(), testLogger())
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stop)
	return fake, NewClient(t, 10*time.Second).Conductor(host)
}

func (f *fakeConductor) record(ctx context.Context, method, node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method+" "+node]++
	f.requestIDs[node] = RequestID(ctx)
	logging.FromContext(ctx, logging.Discard()).WithField("node", node).Info("handled")
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
	n := args.Node
	n.Extra = model.JSONObject{"reset_interfaces": args.ResetInterfaces}
	return n, nil
}

// DestroyNode fails with an untyped error holding a secret, which must not
// cross the wire.
func (f *fakeConductor) DestroyNode(ctx context.Context, args NodeArgs) error {
	return fmt.Errorf("mysql://ferric:hunter2@db/ferric: connection refused for node %s", args.NodeID)
}

// ChangeNodePowerState panics on request, and otherwise fails with a typed
// error whose status differs from its kind's default.
func (f *fakeConductor) ChangeNodePowerState(ctx context.Context, args ChangePowerStateArgs) error {
	if args.NewState == "panic" {
		panic("driver exploded with password hunter2")
	}
	return errs.New(errs.KindNoValidHost, "No conductor for node %s.", args.NodeID).WithStatus(http.StatusNotFound)
}

func (f *fakeConductor) DoNodeDeploy(ctx context.Context, args DeployArgs) error {
	return nil
}

func (f *fakeConductor) DoNodeTearDown(ctx context.Context, args NodeArgs) error {
	return errs.NodeLocked(args.NodeID, "conductor-1")
}

func (f *fakeConductor) DoNodeClean(ctx context.Context, args CleanArgs) error {
	if len(args.CleanSteps) == 0 {
		return errs.InvalidParameterValue("No clean steps for node %s.", args.NodeID)
	}
	return nil
}

func (f *fakeConductor) DoProvisioningAction(ctx context.Context, args ProvisioningActionArgs) error {
	return errs.InvalidStateRequested(args.Action, args.NodeID, "active")
}

func (f *fakeConductor) ContinueNodeClean(ctx context.Context, args NodeArgs) error {
	if err := f.wait(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	f.cleaned[args.NodeID]++
	f.mu.Unlock()
	return nil
}

func (f *fakeConductor) ContinueNodeDeploy(ctx context.Context, args NodeArgs) error {
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
	yes, no := true, false
	return map[string]ValidationResult{
		"power":  {Result: &yes},
		"deploy": {Result: &no, Reason: "node " + args.NodeID},
	}, nil
}

// SetBootDevice blocks until the gate opens or the caller's deadline passes.
func (f *fakeConductor) SetBootDevice(ctx context.Context, args SetBootDeviceArgs) error {
	return f.wait(ctx)
}

func (f *fakeConductor) GetBootDevice(ctx context.Context, args NodeArgs) (BootDevice, error) {
	dev, persistent := "pxe", true
	return BootDevice{BootDevice: &dev, Persistent: &persistent}, nil
}

func (f *fakeConductor) GetSupportedBootDevices(ctx context.Context, args NodeArgs) ([]string, error) {
	return []string{"pxe", "disk", "cdrom"}, nil
}

func (f *fakeConductor) UpdatePort(ctx context.Context, args PortArgs) (model.Port, error) {
	p := args.Port
	p.PXEEnabled = !p.PXEEnabled
	return p, nil
}

func (f *fakeConductor) DestroyPort(ctx context.Context, args PortArgs) error {
	return errs.PortNotFound(args.Port.UUID)
}

func (f *fakeConductor) Heartbeat(ctx context.Context, args HeartbeatArgs) error {
	if args.AgentVersion == "" {
		return errs.InvalidParameterValue("Agent version is required.")
	}
	return nil
}

func (f *fakeConductor) VendorPassthru(ctx context.Context, args VendorPassthruArgs) (VendorPassthruResult, error) {
	return VendorPassthruResult{Return: map[string]any{"method": args.Method, "info": args.Info}, Async: args.HTTPMethod == "POST"}, nil
}
