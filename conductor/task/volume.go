package task

import (
	"context"
	"fmt"

	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/model"
)

// VolumeConnectors loads the node's volume connectors, for the storage
// interface.
func (t *Task) VolumeConnectors(ctx context.Context) ([]model.VolumeConnector, error) {
	return ofNode(ctx, t, "volume connectors", t.m.store.ListVolumeConnectors)
}

// VolumeTargets loads the node's volume targets, for the storage
// interface.
func (t *Task) VolumeTargets(ctx context.Context) ([]model.VolumeTarget, error) {
	return ofNode(ctx, t, "volume targets", t.m.store.ListVolumeTargets)
}

func ofNode[T any](ctx context.Context, t *Task, what string, list func(context.Context, db.VolumeFilter, db.Page, []string) ([]T, error)) ([]T, error) {
	id := t.node.ID
	rows, err := list(ctx, db.VolumeFilter{NodeID: &id}, db.Page{}, nil)
	if err != nil {
		return nil, fmt.Errorf("load %s of node %s: %w", what, t.node.UUID, err)
	}
	return rows, nil
}
