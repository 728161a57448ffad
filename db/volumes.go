package db

import (
	"context"
	"fmt"
	"slices"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/filter"
)

// VolumeFilter narrows ListVolumeConnectors and ListVolumeTargets; nil
// fields do not filter.
type VolumeFilter struct {
	// Match are the conditions of a list query, as the volume catalogues
	// derive them.
	Match  []filter.Condition
	NodeID *int64
}

var (
	volumeConnectors = newOwnedTable("volume connector", func(c *model.VolumeConnector) *string { return &c.NodeUUID },
		volumeConnectorNotFound, connectorDuplicate)
	volumeTargets = newOwnedTable("volume target", func(t *model.VolumeTarget) *string { return &t.NodeUUID },
		volumeTargetNotFound, targetDuplicate)
)

// VolumeConnectorColumns lists the connector columns ListVolumeConnectors
// can select ("node_uuid" is also accepted there, as for ports).
func VolumeConnectorColumns() []string { return slices.Clone(volumeConnectors.columns.all) }

// VolumeTargetColumns lists the target columns ListVolumeTargets can select
// ("node_uuid" is also accepted there).
func VolumeTargetColumns() []string { return slices.Clone(volumeTargets.columns.all) }

func volumeConnectorNotFound(uuid string) error {
	return errs.New(errs.KindVolumeConnectorNotFound, "Volume connector %s could not be found.", uuid)
}

func volumeTargetNotFound(uuid string) error {
	return errs.New(errs.KindVolumeTargetNotFound, "Volume target %s could not be found.", uuid)
}

// CreateVolumeConnector inserts c, filling ID and CreatedAt (and UUID when
// empty). A duplicate uuid or (type, connector_id) is a 409 error; a
// missing node NodeNotFound.
func (s *Store) CreateVolumeConnector(ctx context.Context, c *model.VolumeConnector) error {
	return volumeConnectors.create(ctx, s, c)
}

// GetVolumeConnector loads a connector (with NodeUUID) by uuid;
// errs.KindVolumeConnectorNotFound if there is none.
func (s *Store) GetVolumeConnector(ctx context.Context, uuid string) (*model.VolumeConnector, error) {
	return volumeConnectors.get(ctx, s, "uuid", uuid)
}

// ListVolumeConnectors returns one page of the connectors matching f, each
// with NodeUUID filled by a join in the same query. Sort keys are the
// columns but extra.
func (s *Store) ListVolumeConnectors(ctx context.Context, f VolumeFilter, p Page, columns []string) ([]model.VolumeConnector, error) {
	return volumeConnectors.page(ctx, s, f.Match, f.NodeID, p, columns)
}

// SaveVolumeConnector writes c back by id (see ownedTable.update).
func (s *Store) SaveVolumeConnector(ctx context.Context, c *model.VolumeConnector) error {
	return volumeConnectors.update(ctx, s, c)
}

// DestroyVolumeConnector deletes a connector;
// errs.KindVolumeConnectorNotFound if there is none.
func (s *Store) DestroyVolumeConnector(ctx context.Context, uuid string) error {
	return volumeConnectors.destroy(ctx, s, uuid)
}

// CreateVolumeTarget inserts t, filling ID and CreatedAt (and UUID when
// empty). A duplicate uuid or (node, boot_index) is a 409 error; a missing
// node NodeNotFound.
func (s *Store) CreateVolumeTarget(ctx context.Context, t *model.VolumeTarget) error {
	return volumeTargets.create(ctx, s, t)
}

// GetVolumeTarget loads a target (with NodeUUID) by uuid;
// errs.KindVolumeTargetNotFound if there is none. Properties are returned
// as stored, credentials included.
func (s *Store) GetVolumeTarget(ctx context.Context, uuid string) (*model.VolumeTarget, error) {
	return volumeTargets.get(ctx, s, "uuid", uuid)
}

// ListVolumeTargets returns one page of the targets matching f, each with
// NodeUUID filled by a join in the same query. Sort keys are the columns
// but extra and properties.
func (s *Store) ListVolumeTargets(ctx context.Context, f VolumeFilter, p Page, columns []string) ([]model.VolumeTarget, error) {
	return volumeTargets.page(ctx, s, f.Match, f.NodeID, p, columns)
}

// SaveVolumeTarget writes t back by id (see ownedTable.update).
func (s *Store) SaveVolumeTarget(ctx context.Context, t *model.VolumeTarget) error {
	return volumeTargets.update(ctx, s, t)
}

// DestroyVolumeTarget deletes a target; errs.KindVolumeTargetNotFound if
// there is none.
func (s *Store) DestroyVolumeTarget(ctx context.Context, uuid string) error {
	return volumeTargets.destroy(ctx, s, uuid)
}

// DestroyVolumeTargetsOfNode deletes every target of a node: tearing an
// instance down detaches its volumes, while the node's connectors (its
// hardware identity) stay. A node without targets is not an error.
func (s *Store) DestroyVolumeTargetsOfNode(ctx context.Context, nodeID int64) error {
	if err := s.db.WithContext(ctx).Exec("DELETE FROM volume_targets WHERE node_id = ?", nodeID).Error; err != nil {
		return fmt.Errorf("destroy volume targets of node %d: %w", nodeID, err)
	}
	return nil
}
