package iscsideploy

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sync"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/secrets"
)

// The deploy key is read from a TFTP-served file by anyone on the
// provisioning network, so it may admit one callback for one wait state
// only: the first callback (or the agent's first heartbeat) consumes it,
// and its hash stays behind so that a second callback with it is seen for
// what it is, an attack, rather than taken for a wrong key. A new wait
// state gets a new key from Prepare or PrepareCleaning.

// secondCallbackMessage is the last_error of a deploy or clean a second
// callback ended, and the answer to that callback.
const secondCallbackMessage = "second pass_deploy_info callback for this deploy: possible attack on the provisioning network"

func errSecondCallback() error { return errs.InvalidParameterValue(secondCallbackMessage) }

// newDeployKey is 32 alphanumerics from the CSPRNG, as Ironic's deploy key.
func newDeployKey() (string, error) { return secrets.Generate(32) }

// issueDeployKey gives the node a fresh key for the wait state it enters,
// forgetting the previous one, used or not.
func issueDeployKey(n *model.Node) (string, error) {
	key, err := newDeployKey()
	if err != nil {
		return "", err
	}
	ensureMaps(n)
	n.DriverInternalInfo[deployKeyKey] = key
	delete(n.DriverInternalInfo, usedKeyKey)
	delete(n.DriverInternalInfo, bootloaderWaitKey)
	delete(n.DriverInternalInfo, bootloaderProofKey)
	return key, nil
}

// consumeDeployKey ends the key's validity: the wait state it was issued
// for is over.
func consumeDeployKey(n *model.Node) {
	key, _ := n.DriverInternalInfo[deployKeyKey].(string)
	if key == "" {
		return
	}
	delete(n.DriverInternalInfo, deployKeyKey)
	n.DriverInternalInfo[usedKeyKey] = keyHash(key)
}

func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// keyMatches compares in constant time, so timing does not reveal how
// much of a guessed key was right.
func keyMatches(known, sent string) bool {
	return known != "" && subtle.ConstantTimeCompare([]byte(known), []byte(sent)) == 1
}

// usedKeyMatches reports whether sent is the key this node's last wait
// state already consumed.
func usedKeyMatches(n *model.Node, sent string) bool {
	used, _ := n.DriverInternalInfo[usedKeyKey].(string)
	return sent != "" && keyMatches(used, keyHash(sent))
}

// runs are the deploys and erases this conductor runs through a target a
// callback named, by node: a second callback while one runs (the node
// locked) stops it.
type runs struct {
	mu     sync.Mutex
	byNode map[string]run
}

type run struct {
	usedKey string
	cancel  context.CancelCauseFunc
}

// start registers the node's run; its context ends, with
// errSecondCallback as cause, when a second callback arrives. stop must
// be called when the run ends.
func (r *runs) start(ctx context.Context, n *model.Node) (context.Context, func()) {
	used, _ := n.DriverInternalInfo[usedKeyKey].(string)
	ctx, cancel := context.WithCancelCause(ctx)
	r.mu.Lock()
	if r.byNode == nil {
		r.byNode = map[string]run{}
	}
	r.byNode[n.UUID] = run{usedKey: used, cancel: cancel}
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		delete(r.byNode, n.UUID)
		r.mu.Unlock()
		cancel(nil)
	}
}

// stopBySecondCallback ends the node's run if sent is the key that
// started it.
func (r *runs) stopBySecondCallback(nodeUUID, sent string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur, ok := r.byNode[nodeUUID]
	if !ok || sent == "" || !keyMatches(cur.usedKey, keyHash(sent)) {
		return false
	}
	cur.cancel(errSecondCallback())
	return true
}

// stoppedBySecondCallback reports whether a second callback ended the run
// of ctx.
func stoppedBySecondCallback(ctx context.Context) bool {
	e, ok := errs.As(context.Cause(ctx))
	return ok && e.Message == secondCallbackMessage
}

var _ driver.VendorLockedCaller = (*Vendor)(nil)

// CallWhileLocked stops the deploy or erase a first pass_deploy_info (or
// heartbeat) started when the same key comes again: one of the two
// callers is not the node's ramdisk, and the target being written may be
// the attacker's.
func (v *Vendor) CallWhileLocked(ctx context.Context, t driver.TaskContext, method string, info map[string]any) error {
	if method != PassDeployInfo {
		return nil
	}
	sent, _ := info["key"].(string)
	if !v.d.runs.stopBySecondCallback(t.Node().UUID, sent) {
		return nil
	}
	logging.FromContext(ctx, v.d.log).WithField("node", t.Node().UUID).Error(secondCallbackMessage + "; stopping the running deploy or clean")
	return errSecondCallback()
}
