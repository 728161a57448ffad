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
	id := t.node.ID
	cs, err := t.m.store.ListVolumeConnectors(ctx, db.VolumeFilter{NodeID: &id}, db.Page{}, nil)
	if err != nil {
		return nil, fmt.Errorf("load volume connectors of node %s: %w", t.node.UUID, err)
	}
	return cs, nil
}

// VolumeTargets loads the node's volume targets, for the storage
// interface.
func (t *Task) VolumeTargets(ctx context.Context) ([]model.VolumeTarget, error) {
	id := t.node.ID
	ts, err := t.m.store.ListVolumeTargets(ctx, db.VolumeFilter{NodeID: &id}, db.Page{}, nil)
	if err != nil {
		return nil, fmt.Errorf("load volume targets of node %s: %w", t.node.UUID, err)
	}
	return ts, nil
}
