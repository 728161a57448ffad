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

// mux serves every declared method: each call is recorded once its
// arguments decoded, then answered by the method's canned reply, or with
// a zero result (a command's success) when it has none. A new method
// needs nothing here until a spec wants a particular answer.
func (f *fakeConductor) mux() *Mux {
	replies := map[string]func(context.Context, any) (any, error){}
	for _, c := range []canned{
		answer(UpdateNode, f.UpdateNode),
		answerCommand(DestroyNode, f.DestroyNode),
		answerCommand(ChangeNodePowerState, f.ChangeNodePowerState),
		answerCommand(DoNodeTearDown, f.DoNodeTearDown),
		answerCommand(DoNodeClean, f.DoNodeClean),
		answerCommand(DoProvisioningAction, f.DoProvisioningAction),
		answerCommand(ContinueNodeClean, f.ContinueNodeClean),
		answerCommand(ContinueNodeDeploy, f.ContinueNodeDeploy),
		answer(ValidateDriverInterfaces, f.ValidateDriverInterfaces),
		answerCommand(SetBootDevice, f.SetBootDevice),
		answer(GetBootDevice, f.GetBootDevice),
		answer(GetSupportedBootDevices, f.GetSupportedBootDevices),
		answer(UpdatePort, f.UpdatePort),
		answerCommand(DestroyPort, f.DestroyPort),
		answerCommand(Heartbeat, f.Heartbeat),
		answer(VendorPassthru, f.VendorPassthru),
		answerCommand(SetTargetRAIDConfig, f.SetTargetRAIDConfig),
		answer(GetRAIDLogicalDiskProperties, f.GetRAIDLogicalDiskProperties),
		answer(GetDriverProperties, f.GetDriverProperties),
		answer(GetConsoleInformation, f.GetConsoleInformation),
		answerCommand(InjectNMI, f.InjectNMI),
		answer(GetNodeVendorPassthruMethods, f.GetNodeVendorPassthruMethods),
		answer(GetDriverVendorPassthruMethods, f.GetDriverVendorPassthruMethods),
		answer(DriverVendorPassthru, f.DriverVendorPassthru),
		answer(GetNodeWithToken, f.GetNodeWithToken),
		answer(VIFList, f.VIFList),
		answerCommand(VIFAttach, f.VIFAttach),
		answerCommand(VIFDetach, f.VIFDetach),
		answer(UpdateVolumeConnector, f.UpdateVolumeConnector),
		answerCommand(DestroyVolumeConnector, f.DestroyVolumeConnector),
		answer(UpdateVolumeTarget, f.UpdateVolumeTarget),
		answerCommand(DestroyVolumeTarget, f.DestroyVolumeTarget),
		answer(UpdatePortgroup, f.UpdatePortgroup),
		answerCommand(DestroyPortgroup, f.DestroyPortgroup),
		answerCommand(RemoveNodeTraits, f.RemoveNodeTraits),
		answerCommand(DoNodeRescue, f.DoNodeRescue),
		answer(GetBIOSSettings, f.GetBIOSSettings),
	} {
		replies[c.name] = c.answer
	}
	mux := NewMux()
	serveDeclared(mux, func(ctx context.Context, s Spec, args any) (any, error) {
		f.record(ctx, s.Name, subjectOf(args))
		if answer, ok := replies[s.Name]; ok {
			return answer(ctx, args)
		}
		return nil, nil
	})
	return mux
}

// canned is a method's answer in the fake, typed where it is written.
type canned struct {
	name   string
	answer func(context.Context, any) (any, error)
}

func answer[A, R any](m Method[A, R], h func(context.Context, A) (R, error)) canned {
	return canned{m.Name, func(ctx context.Context, args any) (any, error) { return h(ctx, args.(A)) }}
}

func answerCommand[A any](m Command[A], h func(context.Context, A) error) canned {
	return canned{m.Name, func(ctx context.Context, args any) (any, error) { return nil, h(ctx, args.(A)) }}
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
