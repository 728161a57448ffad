package conductor

import (
	"context"
	"slices"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/rpc"
)

// MaxTraitsPerNode is how many traits a node may carry, as in Ironic.
const MaxTraitsPerNode = 50

// AddNodeTraits adds traits to a node, or replaces its set, under the lock.
func (c *Conductor) AddNodeTraits(ctx context.Context, args rpc.NodeTraitsArgs) error {
	t, err := c.tasks.Acquire(ctx, args.NodeID, "add node traits")
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	n := t.Node()
	next := model.StringList{}
	if !args.Replace {
		next = append(next, n.Traits...)
	}
	for _, tr := range args.Traits {
		if !slices.Contains(next, tr) {
			next = append(next, tr)
		}
	}
	if len(next) > MaxTraitsPerNode {
		return errs.InvalidParameterValue("Could not modify traits for node %s: node would have %d traits and the maximum is %d.",
			n.UUID, len(next), MaxTraitsPerNode)
	}
	n.Traits = next
	return t.Save(ctx)
}

// RemoveNodeTraits removes some traits, or all of them when none are named.
func (c *Conductor) RemoveNodeTraits(ctx context.Context, args rpc.NodeTraitsArgs) error {
	t, err := c.tasks.Acquire(ctx, args.NodeID, "remove node traits")
	if err != nil {
		return err
	}
	defer t.Release(ctx)
	n := t.Node()
	if args.Traits == nil {
		n.Traits = model.StringList{}
		return t.Save(ctx)
	}
	next := slices.Clone(n.Traits)
	for _, tr := range args.Traits {
		i := slices.Index(next, tr)
		if i < 0 {
			return errs.New(errs.KindNotFound, "Node %s doesn't have a trait '%s'", n.UUID, tr)
		}
		next = slices.Delete(next, i, i+1)
	}
	if next == nil {
		next = model.StringList{}
	}
	n.Traits = next
	return t.Save(ctx)
}
