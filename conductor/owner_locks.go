package conductor

import (
	"cmp"
	"context"
	"slices"

	"github.com/ferricbm/ferric/conductor/task"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
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
func (k owned[T]) ownerOf(ctx context.Context, uuid string) func() (string, error) {
	return func() (string, error) {
		item, err := k.get(ctx, uuid)
		if err != nil {
			return "", err
		}
		return k.node(item), nil
	}
}

// owned is how the update path reads, patches and places one kind of
// object a node owns.
type owned[T any] struct {
	// what names the kind in messages ("port", "volume target").
	what  string
	get   func(context.Context, string) (*T, error)
	apply func(*T, []jsonpatch.Op, microversion.Version) (*T, error)
	node  func(*T) string
}

// ownedUpdate is an update RPC's arguments: the 1.0 form carries the API's
// patched copy (sent, named uuid), the newer form the object's id, the
// patch and the microversion it was sent at.
type ownedUpdate[T any] struct {
	uuid, id   string
	sent       *T
	patch      []byte
	apiVersion string
	purpose    string
}

// lockForUpdate takes the locks of the object's node and of the node the
// update moves it to, and reads the object again under them: stored is
// the row, in what the client asked for (the row patched, or the API's
// copy).
func (k owned[T]) lockForUpdate(ctx context.Context, c *Conductor, u ownedUpdate[T]) (locks *ownerLocks, stored, in *T, err error) {
	uuid, requested := u.uuid, k.node(u.sent)
	var ops []jsonpatch.Op
	var v microversion.Version
	if u.id != "" {
		uuid = u.id
		if ops, v, requested, err = k.readPatch(ctx, u.patch, u.apiVersion, uuid); err != nil {
			return nil, nil, nil, err
		}
	}
	if locks, err = c.lockOwnerNodes(ctx, k.ownerOf(ctx, uuid), requested, u.purpose); err != nil {
		return nil, nil, nil, err
	}
	stored, err = k.get(ctx, uuid)
	in = u.sent
	if err == nil && u.id != "" {
		in, err = k.apply(stored, ops, v)
	}
	if err != nil {
		locks.release(ctx)
		return nil, nil, nil, err
	}
	return locks, stored, in, nil
}

// readPatch decodes the Bare Metal API patch of the object uuid and the microversion it was sent at. It returns the node the
// patch moves the object to, found by applying it to the object read
// without a lock, or "" if the patch leaves node_uuid alone: the object
// then stays wherever it is when the locks are taken.
func (k owned[T]) readPatch(ctx context.Context, raw []byte, apiVersion, uuid string) ([]jsonpatch.Op, microversion.Version, string, error) {
	v, err := patchVersion(apiVersion, k.what+" "+uuid)
	if err != nil {
		return nil, v, "", err
	}
	ops, err := jsonpatch.Decode(raw)
	if err != nil {
		return nil, v, "", err
	}
	if !slices.ContainsFunc(ops, func(op jsonpatch.Op) bool { return op.Field() == "node_uuid" }) {
		return ops, v, "", nil
	}
	item, err := k.get(ctx, uuid)
	if err != nil {
		return nil, v, "", err
	}
	moved, err := k.apply(item, ops, v)
	if err != nil {
		return nil, v, "", err
	}
	return ops, v, k.node(moved), nil
}
