package conductor

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/deploy/agent"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// driver_internal_info keys of the agent ramdisk running on a node.
const (
	agentTokenKey   = "agent_secret_token"
	agentURLKey     = "agent_url"
	agentVersionKey = "agent_version"
	// agentVerifyCAKey is the certificate the agent serves its API with,
	// as its first heartbeat presented it.
	agentVerifyCAKey = "agent_verify_ca"
	// agentSourceKey is the address whose lookup was handed the token;
	// with [agent] bind_token_to_source only it may heartbeat.
	agentSourceKey = "agent_lookup_address"
	maskedToken    = "******"
)

// waitStates are where a node waits for its ramdisk; a heartbeat there
// proves the ramdisk alive and restarts the callback timeout.
var waitStates = []states.State{states.DeployWait, states.CleanWait, states.InspectWait, states.RescueWait}

// GetNodeWithToken serves the agent lookup: the first lookup of a node
// issues its agent token (kept in driver_internal_info, where every
// response masks it); later ones get "******", so a token is handed out
// once and a second ramdisk cannot take over the node. A token pre-issued
// on virtual media (driver.PreIssueAgentToken) is never handed out.
func (c *Conductor) GetNodeWithToken(ctx context.Context, args rpc.LookupArgs) (rpc.NodeWithToken, error) {
	// Ramdisks repeat lookups; only the first needs the lock.
	t, err := c.tasks.AcquireShared(ctx, args.NodeID, "agent lookup")
	if err != nil {
		return rpc.NodeWithToken{}, err
	}
	token := maskedToken
	if bound, _ := t.Node().DriverInternalInfo[agentSourceKey].(string); bound != "" && bound != args.SourceAddress {
		// The token went to another address: a second ramdisk, or
		// someone racing the node's own.
		logging.FromContext(ctx, c.log).WithFields(logrus.Fields{"node": args.NodeID, "source": args.SourceAddress}).
			Warn("Agent lookup from another address than the one handed the token; it gets no token")
	}
	if existing, _ := t.Node().DriverInternalInfo[agentTokenKey].(string); existing == "" {
		if err := t.Upgrade(ctx); err != nil {
			return rpc.NodeWithToken{}, err
		}
		defer t.Release(ctx)
		n := t.Node()
		ensureInfo(n)
		if existing, _ := n.DriverInternalInfo[agentTokenKey].(string); existing == "" {
			if token, err = driver.NewAgentToken(); err != nil {
				return rpc.NodeWithToken{}, err
			}
			n.DriverInternalInfo[agentTokenKey] = token
			if args.SourceAddress != "" {
				n.DriverInternalInfo[agentSourceKey] = args.SourceAddress
			}
			if err := t.Save(ctx); err != nil {
				return rpc.NodeWithToken{}, err
			}
		}
	}
	out := *t.Node()
	out.Reservation = nil
	return rpc.NodeWithToken{Node: out, AgentToken: token}, nil
}

// validAgentToken compares in constant time, so response timing does not
// reveal how much of a guessed token was right.
func validAgentToken(info map[string]any, token string) bool {
	known, _ := info[agentTokenKey].(string)
	if known == "" || token == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(known), []byte(token)) == 1
}

// fromTokenSource reports whether a heartbeat from source may use the
// token: from the address whose lookup was handed it, under [agent]
// bind_token_to_source. A token pre-issued on virtual media was handed to
// no lookup and binds to no address.
func (c *Conductor) fromTokenSource(info map[string]any, source string) bool {
	bound, _ := info[agentSourceKey].(string)
	return !c.bindAgentToken || bound == "" || bound == source
}

// errAgentCertChanged refuses a heartbeat presenting another certificate
// than the one the agent's first heartbeat did: accepting it, the conductor
// would talk to whoever holds the new one's key.
var errAgentCertChanged = errs.InvalidParameterValue("The agent's TLS certificate (agent_verify_ca) is not the one its first heartbeat presented.")

// checkAgentCert accepts the certificate an agent presents when it is the
// one already known for this run of the agent, or the first one, which it
// returns for the node to keep ("" when there is nothing to keep).
func checkAgentCert(info map[string]any, presented string) (string, error) {
	known, _ := info[agentVerifyCAKey].(string)
	if known != "" {
		if known != presented {
			return "", errAgentCertChanged
		}
		return "", nil
	}
	if presented == "" {
		return "", nil
	}
	if _, err := agent.VerifyCAPool(presented); err != nil {
		return "", errs.InvalidParameterValue("Invalid agent_verify_ca: %s", err)
	}
	return presented, nil
}

// errCallbackURLChanged refuses a heartbeat from an agent claiming to
// listen elsewhere than its first heartbeat said. It is checked only after
// the token: a caller without it must not learn the node's agent URL by
// trying addresses.
var errCallbackURLChanged = errs.New(errs.KindInvalid, "Detected change in ramdisk provided \"callback_url\"")

func checkCallbackURL(info map[string]any, callbackURL string) error {
	if known, _ := info[agentURLKey].(string); known != "" && known != callbackURL {
		return errCallbackURLChanged
	}
	return nil
}

// Heartbeat is an agent ramdisk checking in. A valid token lets the
// conductor record where the agent listens and which version it runs, keep
// a waiting node's callback timeout from expiring, and hand the heartbeat
// to a deploy interface that drives agents, in a worker holding the lock.
// The first heartbeat presenting a TLS certificate pins it: the conductor
// trusts only it for calls to the agent, and refuses heartbeats presenting
// another, until the agent's token is wiped.
func (c *Conductor) Heartbeat(ctx context.Context, args rpc.HeartbeatArgs) error {
	if c.requireAgentTLS && !strings.HasPrefix(strings.ToLower(args.CallbackURL), "https://") {
		return errs.InvalidParameterValue("Agent is required to use TLS ([agent] require_tls): its callback_url must be https://.")
	}
	t, err := c.tasks.AcquireShared(ctx, args.NodeID, "heartbeat")
	if err != nil {
		return err
	}
	invalid := errs.InvalidParameterValue("Invalid or missing agent token received.")
	if args.AgentToken == "" {
		invalid = errs.InvalidParameterValue("Agent token is required for heartbeat processing.")
	}
	if !validAgentToken(t.Node().DriverInternalInfo, args.AgentToken) {
		c.heartbeatRefused(ctx, t)
		return invalid
	}
	if !c.fromTokenSource(t.Node().DriverInternalInfo, args.SourceAddress) {
		logging.FromContext(ctx, c.log).WithFields(logrus.Fields{"node": args.NodeID, "source": args.SourceAddress}).
			Warn("Heartbeat with the node's agent token from another address than the lookup it was handed to; refused as a possible attack")
		c.heartbeatRefused(ctx, t)
		return invalid
	}
	if err := checkCallbackURL(t.Node().DriverInternalInfo, args.CallbackURL); err != nil {
		return err
	}
	newCert, err := checkAgentCert(t.Node().DriverInternalInfo, args.AgentVerifyCA)
	if errors.Is(err, errAgentCertChanged) {
		c.heartbeatRefused(ctx, t)
	}
	if err != nil {
		return err
	}
	if newCert != "" {
		// The poll below reaches the agent before the node is locked and
		// the certificate saved: it must already trust only this one.
		t.Node().DriverInternalInfo[agentVerifyCAKey] = newCert
	}
	c.refused.forget(t.Node().UUID)
	d, err := t.Driver()
	if err != nil {
		return err
	}
	// Whatever the agent must be asked is asked now, before the lock is
	// taken: a slow agent must not keep the node locked.
	poller, polls := driver.Lookup[driver.AgentPoller](d, hwcatalog.Deploy)
	var polled any
	var pollErr error
	if polls {
		polled, pollErr = poller.PollAgent(ctx, t, args.CallbackURL)
	}
	if err := t.Upgrade(ctx); err != nil {
		return err
	}
	defer t.Release(ctx)
	n := t.Node()
	// The token may have been revoked (power off, tear down) meanwhile.
	if !validAgentToken(n.DriverInternalInfo, args.AgentToken) {
		return invalid
	}
	if err := checkCallbackURL(n.DriverInternalInfo, args.CallbackURL); err != nil {
		return err
	}
	// Another heartbeat may have pinned a certificate meanwhile.
	if newCert, err = checkAgentCert(n.DriverInternalInfo, args.AgentVerifyCA); err != nil {
		return err
	}
	if newCert != "" {
		n.DriverInternalInfo[agentVerifyCAKey] = newCert
	}
	if n.LastError != nil && strings.HasPrefix(*n.LastError, refusedHeartbeatsPrefix) {
		n.LastError = nil
	}
	n.DriverInternalInfo[agentURLKey] = args.CallbackURL
	if args.AgentVersion != "" {
		n.DriverInternalInfo[agentVersionKey] = args.AgentVersion
	}
	if err := t.Save(ctx); err != nil {
		return err
	}
	if slices.Contains(waitStates, t.ProvisionState()) {
		if err := c.store.TouchProvisioning(ctx, n.UUID); err != nil {
			return fmt.Errorf("heartbeat of node %s: %w", n.UUID, err)
		}
	}
	callbackURL, version := args.CallbackURL, args.AgentVersion
	if polls {
		return t.Spawn(ctx, task.Work{Name: "heartbeat", Run: func(ctx context.Context, t *task.Task) error {
			err := poller.HeartbeatPolled(ctx, t, callbackURL, version, polled, pollErr)
			if err != nil || t.CleanMovedOn() {
				return err
			}
			return t.Save(ctx)
		}}, nil)
	}
	handler, ok := driver.Lookup[driver.HeartbeatHandler](d, hwcatalog.Deploy)
	if !ok {
		t.Log().Warnf("Got a heartbeat, but the %s deploy interface does not handle heartbeats", d.InterfaceName(hwcatalog.Deploy))
		return nil
	}
	return t.Spawn(ctx, task.Work{Name: "heartbeat", Run: func(ctx context.Context, t *task.Task) error {
		if err := handler.Heartbeat(ctx, t, callbackURL, version); err != nil || t.CleanMovedOn() {
			return err
		}
		return t.Save(ctx)
	}}, nil)
}

// Refused heartbeats are counted, not each logged: a ramdisk without a
// valid token heartbeats again and again, and one log line per heartbeat
// would bury everything else.
const (
	// refusedHeartbeatsBeforeError is how many heartbeats in a row a
	// waiting node's ramdisk may have refused before last_error says so;
	// with the agent's back-off from one second that is well under a
	// minute, instead of the whole callback timeout.
	refusedHeartbeatsBeforeError = 3
	// refusedHeartbeatLogInterval is the least time between two warnings
	// about one node's refused heartbeats.
	refusedHeartbeatLogInterval = time.Minute
	refusedHeartbeatsPrefix     = "Heartbeats refused:"
)

// refusedHeartbeats counts, per node, the heartbeats refused since the last
// valid one. Like the power sync failures it lives in memory: a restart
// starts the count over.
type refusedHeartbeats struct {
	mu    sync.Mutex
	nodes map[string]*refusals
}

type refusals struct {
	inARow int
	// unlogged are the refusals since the last warning.
	unlogged int
	loggedAt time.Time
}

// add counts a refusal; it tells how many came in a row and, when a
// warning is due, how many it covers (0: none due).
func (r *refusedHeartbeats) add(node string) (inARow, toLog int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.nodes[node]
	if e == nil {
		e = &refusals{}
		r.nodes[node] = e
	}
	e.inARow++
	e.unlogged++
	if time.Since(e.loggedAt) < refusedHeartbeatLogInterval {
		return e.inARow, 0
	}
	toLog, e.unlogged, e.loggedAt = e.unlogged, 0, time.Now()
	return e.inARow, toLog
}

func (r *refusedHeartbeats) forget(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.nodes, node)
}

// heartbeatRefused records a heartbeat without a valid token. A node
// waiting for its ramdisk keeps waiting (a valid heartbeat may still come,
// and the callback timeout still fails it), but after a few refusals in a
// row last_error tells the operator why nothing happens.
func (c *Conductor) heartbeatRefused(ctx context.Context, t *task.Task) {
	n := t.Node()
	inARow, toLog := c.refused.add(n.UUID)
	state := t.ProvisionState()
	if toLog > 0 {
		t.Log().WithFields(logrus.Fields{"refused": toLog, "in_a_row": inARow, "provision_state": state}).
			Warn("Heartbeats with another TLS certificate than the agent's, or a missing or invalid agent token refused")
	}
	if inARow < refusedHeartbeatsBeforeError || !slices.Contains(waitStates, state) || n.Maintenance {
		return
	}
	msg := fmt.Sprintf("%s the ramdisk of node %s sent %d heartbeats in a row without a valid agent token "+
		"(or with another TLS certificate than its first heartbeat's); "+
		"the node keeps waiting in %s until the callback timeout. A ramdisk that looked the node up before "+
		"its token was reset never gets one: reboot the node to boot a new ramdisk, which gets a new token.",
		refusedHeartbeatsPrefix, n.UUID, inARow, state)
	if n.LastError != nil && strings.HasPrefix(*n.LastError, refusedHeartbeatsPrefix) {
		return
	}
	// Best effort: a node locked by someone else is marked at a later
	// refusal.
	if err := t.Upgrade(ctx); err != nil {
		return
	}
	defer t.Release(ctx)
	n = t.Node()
	if t.ProvisionState() != state {
		return
	}
	n.LastError = &msg
	if err := t.Save(ctx); err != nil {
		t.Log().WithError(err).Warn("Cannot record refused heartbeats in last_error")
	}
}
