package conductor

import (
	"context"
	"crypto/rand"
	"crypto/sha512"
	"encoding/hex"
	"fmt"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// rescuePasswordKey is the instance_info entry holding the salted hash of
// the rescue password; the password itself is never stored.
const rescuePasswordKey = "hashed_rescue_password"

// hashRescuePassword is a salted SHA-512 of the password.
func hashRescuePassword(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("rescue password salt: %w", err)
	}
	sum := sha512.Sum512(append(salt, password...))
	return "sha512$" + hex.EncodeToString(salt) + "$" + hex.EncodeToString(sum[:]), nil
}

// DoNodeRescue boots an active (or failed rescue) node into its rescue
// system; the rescue interface's result decides between rescue and
// rescue wait.
func (c *Conductor) DoNodeRescue(ctx context.Context, args rpc.RescueArgs) error {
	t, err := c.tasks.Acquire(ctx, args.NodeID, "node rescue")
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	n := t.Node()
	if args.RescuePassword == "" {
		return errs.InvalidParameterValue("A non-empty \"rescue_password\" is required to rescue node %s.", n.UUID)
	}
	ri, err := rescueDriver(ctx, t, states.EventRescue)
	if err != nil {
		return err
	}
	if err := ri.Validate(ctx, t); err != nil {
		return validationError(err)
	}
	hash, err := hashRescuePassword(args.RescuePassword)
	if err != nil {
		return err
	}
	ensureInfo(n)
	n.InstanceInfo[rescuePasswordKey] = hash
	return t.ProcessEventAsync(ctx, states.EventRescue, "", task.Work{Name: "do_node_rescue",
		Run: func(ctx context.Context, t *task.Task) error {
			result, err := ri.Rescue(ctx, t, hash)
			return c.rescueStepDone(ctx, t, "rescue", result, err)
		}})
}

// rescueDriver checks that the node may take event now and returns its
// rescue interface, once its power interface has validated.
func rescueDriver(ctx context.Context, t *task.Task, event states.Event) (driver.RescueInterface, error) {
	if !states.Allowed(t.ProvisionState(), event) {
		return nil, errs.InvalidStateRequested(string(event), t.Node().UUID, string(t.ProvisionState()))
	}
	d, ri, err := driver.RequireFor[driver.RescueInterface](t, hwcatalog.Rescue)
	if err != nil {
		return nil, err
	}
	if err := d.Power.Validate(ctx, t); err != nil {
		return nil, validationError(err)
	}
	return ri, nil
}

// DoNodeUnrescue returns a rescued node to its instance.
func (c *Conductor) DoNodeUnrescue(ctx context.Context, args rpc.NodeArgs) error {
	t, err := c.tasks.Acquire(ctx, args.NodeID, "node unrescue")
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	ri, err := rescueDriver(ctx, t, states.EventUnrescue)
	if err != nil {
		return err
	}
	return t.ProcessEventAsync(ctx, states.EventUnrescue, "", task.Work{Name: "do_node_unrescue",
		Run: func(ctx context.Context, t *task.Task) error {
			result, err := ri.Unrescue(ctx, t)
			if err == nil && result == driver.Done {
				delete(t.Node().InstanceInfo, rescuePasswordKey)
			}
			return c.rescueStepDone(ctx, t, "unrescue", result, err)
		}})
}

// rescueStepDone moves a rescuing or unrescuing node on after its rescue
// interface returned.
func (c *Conductor) rescueStepDone(ctx context.Context, t *task.Task, op string, result driver.Result, err error) error {
	if err != nil {
		return t.Fail(ctx, fmt.Sprintf("Failed to %s node %s. Error: %s", op, t.Node().UUID, err))
	}
	return t.ProcessEvent(ctx, resultEvent(result), "")
}
