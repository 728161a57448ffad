package conductor

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"slices"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// driver_internal_info keys of the agent ramdisk running on a node.
const (
	agentTokenKey   = "agent_secret_token"
	agentURLKey     = "agent_url"
	agentVersionKey = "agent_version"
	maskedToken     = "******"
)

// waitStates are where a node waits for its ramdisk; a heartbeat there
// proves the ramdisk alive and restarts the callback timeout.
var waitStates = []string{states.DeployWait, states.CleanWait, states.InspectWait, states.RescueWait}

// newAgentToken is 256 bits from the CSPRNG, URL-safe.
func newAgentToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate agent token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// GetNodeWithToken serves the agent lookup: the first lookup of a node
// issues its agent token (kept in driver_internal_info, where every
// response masks it); later ones get "******", so a token is handed out
// once and a second ramdisk cannot take over the node.
func (c *Conductor) GetNodeWithToken(ctx context.Context, args rpc.NodeArgs) (rpc.NodeWithToken, error) {
	// Ramdisks repeat lookups; only the first needs the lock.
	t, err := c.tasks.AcquireShared(ctx, args.NodeID, "agent lookup")
	if err != nil {
		return rpc.NodeWithToken{}, err
	}
	token := maskedToken
	if existing, _ := t.Node().DriverInternalInfo[agentTokenKey].(string); existing == "" {
		if err := t.Upgrade(ctx); err != nil {
			return rpc.NodeWithToken{}, err
		}
		defer t.Release(ctx)
		n := t.Node()
		ensureInfo(n)
		if existing, _ := n.DriverInternalInfo[agentTokenKey].(string); existing == "" {
			if token, err = newAgentToken(); err != nil {
				return rpc.NodeWithToken{}, err
			}
			n.DriverInternalInfo[agentTokenKey] = token
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

// Heartbeat is an agent ramdisk checking in. A valid token lets the
// conductor record where the agent listens and which version it runs, keep
// a waiting node's callback timeout from expiring, and hand the heartbeat
// to a deploy interface that drives agents, in a worker holding the lock.
func (c *Conductor) Heartbeat(ctx context.Context, args rpc.HeartbeatArgs) error {
	t, err := c.tasks.AcquireShared(ctx, args.NodeID, "heartbeat")
	if err != nil {
		return err
	}
	invalid := errs.InvalidParameterValue("Invalid or missing agent token received.")
	if !validAgentToken(t.Node().DriverInternalInfo, args.AgentToken) {
		t.Log().Error("Invalid or missing agent_token received")
		return invalid
	}
	d, err := t.Driver()
	if err != nil {
		return err
	}
	// Whatever the agent must be asked is asked now, before the lock is
	// taken: a slow agent must not keep the node locked.
	poller, polls := d.Deploy.(driver.AgentPoller)
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
			ct := c.cleanTask(t)
			err := poller.HeartbeatPolled(ctx, ct, callbackURL, version, polled, pollErr)
			if err != nil || ct.ended {
				return err
			}
			return t.Save(ctx)
		}}, nil)
	}
	handler, ok := d.Deploy.(driver.HeartbeatHandler)
	if !ok {
		t.Log().Warnf("Got a heartbeat, but the %s deploy interface does not handle heartbeats", d.InterfaceName(hwcatalog.Deploy))
		return nil
	}
	return t.Spawn(ctx, task.Work{Name: "heartbeat", Run: func(ctx context.Context, t *task.Task) error {
		if err := handler.Heartbeat(ctx, t, callbackURL, version); err != nil {
			return err
		}
		return t.Save(ctx)
	}}, nil)
}
