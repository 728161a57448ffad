package conductor

import (
	"cmp"
	"context"
	"slices"

	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// Ports, port groups, volume connectors and volume targets belong to a
// node and change under its lock; an update may also move them to another
// node, whose lock it needs as well.

// ownerMoves bounds how often an object may change nodes between reading
// its owner and locking it before the RPC gives up.
const ownerMoves = 3

// ownerLocks holds the locks of the nodes a change of an object touches.
type ownerLocks struct {
	tasks []*task.Task
	// owner is the task of the node the object belongs to afterwards.
	owner *task.Task
}

func (l *ownerLocks) release(ctx context.Context) {
	for _, t := range l.tasks {
		t.Release(ctx)
	}
}

// lockOwnerNodes locks the object's current node and, when it differs,
// the node it is moving to (requested; "" when it stays). Locks are taken
// in node id order, so two moves in opposite directions cannot each hold
// one lock and wait for the other. current re-reads the object's owner
// under the locks; if it moved meanwhile everything is released and tried
// again. A requested node that does not exist is the client's error.
func (c *Conductor) lockOwnerNodes(ctx context.Context, current func() (string, error), requested, purpose string) (*ownerLocks, error) {
	for range ownerMoves {
		ownerUUID, err := current()
		if err != nil {
			return nil, err
		}
		target := requested
		if target == "" {
			target = ownerUUID
		}
		owner, err := c.store.GetNode(ctx, ownerUUID)
		if err != nil {
			return nil, err
		}
		dest := owner
		if target != ownerUUID {
			if dest, err = c.store.GetNode(ctx, target); err != nil {
				if errs.Is(err, errs.KindNodeNotFound) {
					return nil, unknownRequestedNode(target)
				}
				return nil, err
			}
		}
		order := []*model.Node{owner}
		if dest.ID != owner.ID {
			order = append(order, dest)
			slices.SortFunc(order, func(a, b *model.Node) int { return cmp.Compare(a.ID, b.ID) })
		}
		locks := &ownerLocks{}
		for _, n := range order {
			t, err := c.tasks.Acquire(ctx, n.UUID, purpose)
			if err != nil {
				locks.release(ctx)
				if errs.Is(err, errs.KindNodeNotFound) && n.UUID == target && target != ownerUUID {
					return nil, unknownRequestedNode(target)
				}
				return nil, err
			}
			locks.tasks = append(locks.tasks, t)
			if n.ID == dest.ID {
				locks.owner = t
			}
		}
		now, err := current()
		if err == nil && now == ownerUUID {
			return locks, nil
		}
		locks.release(ctx)
		if err != nil {
			return nil, err
		}
	}
	return nil, errs.New(errs.KindConflict, "The object kept moving between nodes while %s waited for their locks; please retry.", purpose)
}

func unknownRequestedNode(uuid string) error {
	return errs.InvalidParameterValue("Unable to apply the requested node_uuid '%s'. Requested value was invalid.", uuid)
}

// ownerOf re-reads, each time it is called, the node that the object uuid
// (read by get) belongs to.
func ownerOf[T any](ctx context.Context, uuid string, get func(context.Context, string) (*T, error),
	nodeUUID func(*T) string) func() (string, error) {
	return func() (string, error) {
		item, err := get(ctx, uuid)
		if err != nil {
			return "", err
		}
		return nodeUUID(item), nil
	}
}
