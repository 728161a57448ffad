package task

import (
	"context"
	"fmt"

	"github.com/ferricbm/ferric/pkg/model"
)

// SavePort persists a change to one of the node's ports, which the node
// lock covers, and keeps the loaded ports in step with it.
func (t *Task) SavePort(ctx context.Context, p *model.Port) error {
	if err := t.requireExclusive(); err != nil {
		return err
	}
	if p.NodeID != t.node.ID {
		return fmt.Errorf("port %s does not belong to node %s", p.UUID, t.node.UUID)
	}
	if err := t.m.store.SavePort(context.WithoutCancel(ctx), p); err != nil {
		return fmt.Errorf("save port %s of node %s: %w", p.UUID, t.node.UUID, err)
	}
	for i := range t.ports {
		if t.ports[i].UUID == p.UUID {
			t.ports[i] = *p
		}
	}
	return nil
}
