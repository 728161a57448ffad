package conductor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/allocations"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/rpc"
)

// allocationStore is the part of the repository the allocation process
// uses.
type allocationStore interface {
	CreateAllocation(ctx context.Context, a *model.Allocation) error
	GetAllocation(ctx context.Context, uuid string) (*model.Allocation, error)
	GetNodeAllocation(ctx context.Context, nodeID int64, ident string) (*model.Allocation, error)
	ListAllocations(ctx context.Context, f db.AllocationFilter, p db.Page, columns []string) ([]model.Allocation, error)
	ReserveForAllocation(ctx context.Context, a *model.Allocation, nodeID, conductorID int64) error
	FailAllocation(ctx context.Context, a *model.Allocation, conductorID int64, reason string) error
	TakeOverAllocation(ctx context.Context, id int64, from *int64, to int64) (bool, error)
	OrphanedAllocations(ctx context.Context, heartbeatTimeout time.Duration) ([]model.Allocation, error)
	DestroyAllocation(ctx context.Context, uuid string) error
}

// allocationNodeColumns are the node columns the allocation process reads.
var allocationNodeColumns = []string{"id", "uuid", "name", "provision_state", "maintenance", "instance_uuid",
	"allocation_id", "power_state", "resource_class", "traits"}

// CreateAllocation stores a new allocation as this conductor's, allocating,
// and looks for its node in a worker; the caller gets the stored
// allocation at once and polls it.
func (c *Conductor) CreateAllocation(ctx context.Context, args rpc.AllocationArgs) (model.Allocation, error) {
	me := c.conductorID()
	if me == nil {
		return model.Allocation{}, errs.New(errs.KindTemporaryFailure, "Conductor %s is not registered yet; please retry.", c.host)
	}
	a := args.Allocation
	a.State, a.ConductorAffinity, a.NodeID, a.NodeUUID, a.LastError = model.AllocationAllocating, me, nil, nil, nil
	if err := c.store.CreateAllocation(ctx, &a); err != nil {
		return model.Allocation{}, err
	}
	c.spawnAllocation(ctx, a)
	return a, nil
}

// spawnAllocation runs the allocation process in a worker; without a free
// worker the allocation fails at once rather than wait for a restart.
func (c *Conductor) spawnAllocation(ctx context.Context, a model.Allocation) {
	log := c.allocationLog(ctx, &a)
	workCtx := logging.NewContext(logging.ContextWithRequestID(c.workCtx, logging.RequestID(ctx)), log)
	if err := c.pool.Spawn(func() { c.allocate(workCtx, &a) }); err != nil {
		c.failAllocation(ctx, &a, "no free conductor worker to process it")
	}
}

func (c *Conductor) allocationLog(ctx context.Context, a *model.Allocation) *logrus.Entry {
	return logging.FromContext(ctx, c.log).WithField("allocation", a.UUID)
}

// allocate looks for a node for a and reserves it. Like Ironic, it tries
// every candidate in a random order and, when some were locked, tries
// those again up to [conductor] node_locked_retry_attempts times.
func (c *Conductor) allocate(ctx context.Context, a *model.Allocation) {
	log := c.allocationLog(ctx, a)
	nodes, err := c.allocationCandidates(ctx, a)
	if err != nil {
		c.failAllocation(ctx, a, err.Error())
		return
	}
	me := c.id.Load()
	attempts := max(c.cfg.NodeLockedRetryAttempts, 1)
	for attempt := 0; ; attempt++ {
		var locked []model.Node
		for _, n := range nodes {
			err := c.store.ReserveForAllocation(ctx, a, n.ID, me)
			var e *errs.Error
			switch {
			case err == nil:
				log.WithField("node", n.UUID).Info("Reserved the node for the allocation")
				return
			case errors.Is(err, db.ErrAllocationTaken):
				log.Debug("The allocation was deleted or taken over meanwhile")
				return
			case errors.Is(err, db.ErrNodeUnsuitable):
				log.WithField("node", n.UUID).Debug("The node no longer suits the allocation")
			case errors.As(err, &e) && e.Kind == errs.KindNodeLocked:
				locked = append(locked, n)
			default:
				c.failAllocation(ctx, a, fmt.Sprintf("Unexpected exception during allocation: %s", err))
				return
			}
		}
		if len(locked) == 0 {
			c.failAllocation(ctx, a, "all nodes were filtered out during reservation")
			return
		}
		if attempt+1 >= attempts {
			c.failAllocation(ctx, a, fmt.Sprintf("could not reserve any of %d suitable nodes", len(locked)))
			return
		}
		pause := time.NewTimer(c.cfg.NodeLockedRetryInterval)
		select {
		case <-ctx.Done():
			pause.Stop()
			// The conductor is stopping: the allocation stays allocating,
			// for the next run of this host or a survivor to finish.
			return
		case <-pause.C:
		}
		nodes = locked
	}
}

// allocationCandidates are the nodes a may get, shuffled so that
// concurrent allocations try them in different orders, the node named as
// the allocation first.
func (c *Conductor) allocationCandidates(ctx context.Context, a *model.Allocation) ([]model.Node, error) {
	found, err := c.store.ListNodes(ctx, db.NodeFilter{Match: allocations.CandidateFilter(a)}, db.Page{}, allocationNodeColumns)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		if len(a.CandidateNodes) > 0 {
			return nil, fmt.Errorf("none of the requested nodes are available and match the resource class %s", deref(a.ResourceClass))
		}
		return nil, fmt.Errorf("no available nodes match the resource class %s", deref(a.ResourceClass))
	}
	nodes := make([]model.Node, 0, len(found))
	for _, n := range found {
		if allocations.Matches(a, &n) {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("no suitable nodes have the requested traits %s", strings.Join(a.Traits, ", "))
	}
	rand.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	if a.Name != nil {
		for i, n := range nodes {
			if n.Name != nil && *n.Name == *a.Name {
				nodes[0], nodes[i] = nodes[i], nodes[0]
				break
			}
		}
	}
	return nodes, nil
}

// failAllocation ends a in state error, as Ironic words it.
func (c *Conductor) failAllocation(ctx context.Context, a *model.Allocation, reason string) {
	log := c.allocationLog(ctx, a)
	msg := fmt.Sprintf("Failed to process allocation %s: %s.", a.UUID, reason)
	err := c.store.FailAllocation(context.WithoutCancel(ctx), a, c.id.Load(), msg)
	switch {
	case err == nil:
		log.Error(msg)
	case errors.Is(err, db.ErrAllocationTaken):
		log.Debug("Not failing an allocation that was deleted or taken over meanwhile")
	default:
		log.WithError(err).Error("Cannot record a failed allocation")
	}
}

// DestroyAllocation deletes an allocation and releases its node, which it
// locks first: the node must not be active or busy unless it is in
// maintenance.
func (c *Conductor) DestroyAllocation(ctx context.Context, args rpc.AllocationArgs) error {
	a, err := c.store.GetAllocation(ctx, args.Allocation.UUID)
	if err != nil {
		return err
	}
	if a.NodeUUID == nil {
		return c.store.DestroyAllocation(ctx, a.UUID)
	}
	t, err := c.tasks.Acquire(ctx, *a.NodeUUID, "allocation deletion")
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	n := t.Node()
	if err := allocations.VerifyDeallocation(n, a.UUID); err != nil {
		return err
	}
	if err := c.store.DestroyAllocation(ctx, a.UUID); err != nil {
		return err
	}
	if n.AllocationID != nil && *n.AllocationID == a.ID {
		n.AllocationID, n.InstanceUUID = nil, nil
	}
	return nil
}

// releaseAllocation deletes the allocation of n, a node the caller has
// locked, if it has one, and forgets it on n: the node is being torn down,
// or its instance_uuid removed.
func (c *Conductor) releaseAllocation(ctx context.Context, n *model.Node) error {
	if n.AllocationID == nil {
		return nil
	}
	a, err := c.store.GetNodeAllocation(ctx, n.ID, n.UUID)
	if err == nil {
		err = c.store.DestroyAllocation(ctx, a.UUID)
	}
	if err != nil && !isNotFound(err) {
		return err
	}
	n.AllocationID, n.InstanceUUID = nil, nil
	return nil
}

func isNotFound(err error) bool {
	e, ok := errs.As(err)
	return ok && e.Kind == errs.KindNotFound
}

// resumeAllocations goes on with the allocations this conductor's earlier
// run left allocating.
func (c *Conductor) resumeAllocations(ctx context.Context) {
	me := c.id.Load()
	pending, err := c.store.ListAllocations(ctx, db.AllocationFilter{ConductorAffinity: &me,
		Match: []filter.Condition{{Column: "state", Value: model.AllocationAllocating}}}, db.Page{}, nil)
	if err != nil {
		c.log.WithError(err).Error("Cannot list the allocations to resume")
		return
	}
	for _, a := range pending {
		c.allocationLog(ctx, &a).Info("Resuming an unfinished allocation")
		c.spawnAllocation(ctx, a)
	}
}

// checkOrphanAllocations takes over the allocations whose conductor died
// while they were allocating; of several conductors trying, one wins.
func (c *Conductor) checkOrphanAllocations(ctx context.Context) {
	orphans, err := c.store.OrphanedAllocations(ctx, c.cfg.HeartbeatTimeout)
	if err != nil {
		if ctx.Err() == nil {
			logging.FromContext(ctx, c.log).WithError(err).Error("Cannot list orphaned allocations")
		}
		return
	}
	me := c.id.Load()
	b := c.newBudget()
	for _, a := range orphans {
		if (a.ConductorAffinity != nil && *a.ConductorAffinity == me) || !b.take() {
			continue
		}
		won, err := c.store.TakeOverAllocation(ctx, a.ID, a.ConductorAffinity, me)
		if err != nil || !won {
			continue
		}
		a.ConductorAffinity = &me
		c.allocationLog(ctx, &a).Info("Took over an allocation of a dead conductor")
		c.spawnAllocation(ctx, a)
	}
}
