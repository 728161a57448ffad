package driver

import (
	"context"

	"github.com/ferricbm/ferric/pkg/model"
)

// The optional capabilities below are discovered by type assertion on a
// node's interface implementations: an implementation that does not offer
// one (no-raid, no-console, no-vendor, ...) makes the operation
// UnsupportedDriverExtension, as in Ironic.

// PropertyDescriber is implemented by interfaces that read node properties
// or driver_info keys; the map is key -> human-readable description, served
// as GET /v1/drivers/{name}/properties.
type PropertyDescriber interface {
	Properties() map[string]string
}

// RAIDInterface builds RAID configurations.
type RAIDInterface interface {
	Interface
	// LogicalDiskProperties describes the keys a logical disk of a target
	// RAID configuration may carry.
	LogicalDiskProperties() map[string]string
	// ValidateRAIDConfig checks a target RAID configuration; failures are
	// InvalidParameterValue.
	ValidateRAIDConfig(ctx context.Context, t TaskContext, config map[string]any) error
}

// ConsoleInterface gives access to a node's serial console.
type ConsoleInterface interface {
	Interface
	StartConsole(ctx context.Context, t TaskContext) error
	StopConsole(ctx context.Context, t TaskContext) error
	// GetConsole describes how to reach the running console
	// ({"type": ..., "url": ...}).
	GetConsole(ctx context.Context, t TaskContext) (map[string]any, error)
}

// NMIInjector is implemented by management interfaces that can send a
// non-maskable interrupt (diagnostic interrupt) to a node.
type NMIInjector interface {
	InjectNMI(ctx context.Context, t TaskContext) error
}

// HeartbeatHandler is implemented by deploy interfaces that drive an agent
// ramdisk: the conductor hands them every valid heartbeat, under the node
// lock, after recording the agent's callback URL and version.
type HeartbeatHandler interface {
	Heartbeat(ctx context.Context, t TaskContext, callbackURL, agentVersion string) error
}

// StorageKeeper is implemented by deploy interfaces whose tear down leaves
// the node's volume targets alone. Ironic removes them in the agent and
// iSCSI deploys' tear down, not in the fake one: with fake-hardware the
// targets outlive the instance, and a client deletes them afterwards.
type StorageKeeper interface {
	KeepsStorage()
}

// AgentPoller is a heartbeat handler that asks the agent how its work goes
// before the node is locked, so no lock is held while an agent answers:
// the conductor calls PollAgent with the node as read without the lock,
// then HeartbeatPolled, instead of Heartbeat, under the lock with what it
// returned (the node may have moved on in between). A HeartbeatPolled
// that drives a clean gets a task offering the conductor's cleaning
// operations.
type AgentPoller interface {
	PollAgent(ctx context.Context, t TaskContext, callbackURL string) (any, error)
	HeartbeatPolled(ctx context.Context, t TaskContext, callbackURL, agentVersion string, polled any, pollErr error) error
}

// agentSessionKeys are what one run of an agent ramdisk leaves in
// driver_internal_info: where it listens, the token it was given, what it
// offered. The next ramdisk booted on the node must start without them: a
// token left behind is handed out masked and every heartbeat of the new
// ramdisk is refused.
var agentSessionKeys = []string{"agent_cached_clean_steps", "agent_cached_deploy_steps"}

// agentConnectionKeys are how the conductor reaches and trusts one run of
// an agent: its URL, its token, and the certificate it serves TLS with.
var agentConnectionKeys = []string{"agent_url", "agent_secret_token", "agent_secret_token_pregenerated", "agent_verify_ca",
	"agent_lookup_address"}

// WipeAgentSession forgets the node's agent ramdisk, as Ironic's
// wipe_token_and_url does whenever the ramdisk goes away or a new one is
// about to boot.
func WipeAgentSession(n *model.Node) {
	ForgetAgentConnection(n)
	for _, k := range agentSessionKeys {
		delete(n.DriverInternalInfo, k)
	}
}

// ForgetAgentConnection forgets how to reach the node's agent, keeping what
// it offered: a clean step's reboot boots a new agent that must get a new
// token (and may serve another certificate) while the clean goes on.
func ForgetAgentConnection(n *model.Node) {
	for _, k := range agentConnectionKeys {
		delete(n.DriverInternalInfo, k)
	}
}

// PortTaskContext is a task that may also change the node's ports, as
// network interfaces do when they bind tenant VIFs.
type PortTaskContext interface {
	TaskContext
	SavePort(ctx context.Context, p *model.Port) error
}

// VIF is a tenant virtual interface attachment request.
type VIF struct {
	ID string
}

// NetworkInterface attaches tenant networks (VIFs) to a node's ports.
type NetworkInterface interface {
	Interface
	VIFList(ctx context.Context, t PortTaskContext) ([]VIF, error)
	VIFAttach(ctx context.Context, t PortTaskContext, vif VIF) error
	VIFDetach(ctx context.Context, t PortTaskContext, vifID string) error
}

// VendorMethod describes one vendor passthru method.
type VendorMethod struct {
	HTTPMethods []string
	// Async methods run in a background worker (HTTP 202); sync ones
	// answer with their return value (HTTP 200).
	Async bool
	// Attach means the return value is a file to be attached to the
	// response rather than JSON.
	Attach      bool
	Description string
	// RequireExclusiveLock: the node method needs the node lock. Ignored
	// for driver methods, which have no node.
	RequireExclusiveLock bool
}

// VendorInterface offers vendor-specific methods called through vendor
// passthru, on a node or on the hardware type as a whole.
type VendorInterface interface {
	Interface
	Methods() map[string]VendorMethod
	DriverMethods() map[string]VendorMethod
	// Call runs a node method; t is exclusive when the method requires it.
	Call(ctx context.Context, t TaskContext, method, httpMethod string, info map[string]any) (any, error)
	// CallDriver runs a driver method.
	CallDriver(ctx context.Context, method, httpMethod string, info map[string]any) (any, error)
}
