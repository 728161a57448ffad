package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

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
	volumeConnectorColumns = parseColumns(&model.VolumeConnector{})
	volumeTargetColumns    = parseColumns(&model.VolumeTarget{})
)

// VolumeConnectorColumns lists the connector columns ListVolumeConnectors
// can select ("node_uuid" is also accepted there, as for ports).
func VolumeConnectorColumns() []string { return slices.Clone(volumeConnectorColumns.all) }

// VolumeTargetColumns lists the target columns ListVolumeTargets can select
// ("node_uuid" is also accepted there).
func VolumeTargetColumns() []string { return slices.Clone(volumeTargetColumns.all) }

func volumeConnectorNotFound(uuid string) error {
	return errs.New(errs.KindVolumeConnectorNotFound, "Volume connector %s could not be found.", uuid)
}

func volumeTargetNotFound(uuid string) error {
	return errs.New(errs.KindVolumeTargetNotFound, "Volume target %s could not be found.", uuid)
}

// The JSON columns (extra, properties) are the forbidden sort keys; every
// other column may be one.
var (
	volumeConnectorList = listTable{
		table:     "volume_connectors",
		markerCol: "uuid",
		sortable:  volumeConnectorColumns.sortable(),
		forbidden: volumeConnectorColumns.json,
		notFound:  volumeConnectorNotFound,
	}
	volumeTargetList = listTable{
		table:     "volume_targets",
		markerCol: "uuid",
		sortable:  volumeTargetColumns.sortable(),
		forbidden: volumeTargetColumns.json,
		notFound:  volumeTargetNotFound,
	}
)

// saveColumnsOf are the columns a Save writes from the struct: all but
// id, uuid and the timestamps.
func saveColumnsOf(t tableColumns) []string {
	return slices.DeleteFunc(slices.Clone(t.all), func(c string) bool {
		switch c {
		case "id", "uuid", "created_at", "updated_at":
			return true
		}
		return false
	})
}

var (
	volumeConnectorSaveColumns = saveColumnsOf(volumeConnectorColumns)
	volumeTargetSaveColumns    = saveColumnsOf(volumeTargetColumns)
)

func connectorNodeUUID(c *model.VolumeConnector) *string { return &c.NodeUUID }

func targetNodeUUID(t *model.VolumeTarget) *string { return &t.NodeUUID }

// ownedQuery selects cols of a table whose rows belong to a node, plus the
// node's uuid as node_uuid.
func (s *Store) ownedQuery(ctx context.Context, table string, cols []string) *gorm.DB {
	sel := make([]clause.Column, 0, len(cols)+1)
	for _, c := range cols {
		sel = append(sel, clause.Column{Table: table, Name: c})
	}
	sel = append(sel, clause.Column{Table: "nodes", Name: "uuid", Alias: "node_uuid"})
	return s.db.WithContext(ctx).Table(table).
		Clauses(clause.Select{Columns: sel}).
		Joins("JOIN nodes ON nodes.id = " + table + ".node_id")
}

// listOwned reads one page of a volume list, each item with its owner's
// uuid from the same query.
func listOwned[T any](ctx context.Context, s *Store, lt listTable, t tableColumns, f VolumeFilter, p Page, columns []string, nodeUUID func(*T) *string) ([]T, error) {
	cols, err := t.selection(columns, "node_uuid")
	if err != nil {
		return nil, err
	}
	q := s.ownedQuery(ctx, lt.table, cols)
	for _, e := range where(lt.table, idConditions(f.Match, parentID{"node_id", f.NodeID}), nil) {
		q = q.Where(e)
	}
	q, err = lt.paginate(ctx, s.db, q, p)
	if err != nil {
		return nil, err
	}
	items, err := scanRows(q, t, nodeUUID)
	if err != nil {
		return nil, err
	}
	return items, nil
}

// getOwned loads one row by uuid, with its owner's uuid;
// gorm.ErrRecordNotFound when there is none.
func getOwned[T any](ctx context.Context, s *Store, t tableColumns, uuid string, nodeUUID func(*T) *string) (*T, error) {
	cols, _ := t.selection(nil)
	q := s.ownedQuery(ctx, t.schema.Table, cols).
		Where(clause.Eq{Column: clause.Column{Table: t.schema.Table, Name: "uuid"}, Value: uuid}).
		Limit(1)
	items, err := scanRows(q, t, nodeUUID)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, gorm.ErrRecordNotFound
	}
	return &items[0], nil
}

// saveOwned writes saveCols of m to the row with that id and sets
// updated_at, then reads the (possibly new) owner's uuid in the same
// transaction. It returns gorm.ErrRecordNotFound when no row has the id.
func (s *Store) saveOwned(ctx context.Context, t tableColumns, saveCols []string, m any, id, nodeID int64) (time.Time, string, error) {
	ts := now()
	sets := []string{"updated_at = ?"}
	args := []any{ts}
	for _, c := range saveCols {
		sets = append(sets, s.quote(c)+" = ?")
	}
	args = append(args, t.values(ctx, m, saveCols)...)
	args = append(args, id)
	stmt := "UPDATE " + t.schema.Table + " SET " + strings.Join(sets, ", ") + " WHERE id = ?"
	var nodeUUID string
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(stmt, args...)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return gorm.ErrRecordNotFound
		}
		return tx.Raw("SELECT uuid FROM nodes WHERE id = ?", nodeID).Row().Scan(&nodeUUID)
	})
	return ts, nodeUUID, err
}

// destroyByUUID deletes the row of table with that uuid and reports
// whether there was one.
func (s *Store) destroyByUUID(ctx context.Context, table, uuid string) (bool, error) {
	res := s.db.WithContext(ctx).Exec("DELETE FROM "+table+" WHERE uuid = ?", uuid)
	return res.RowsAffected > 0, res.Error
}

// CreateVolumeConnector inserts c, filling ID and CreatedAt (and UUID when
// empty). A duplicate uuid or (type, connector_id) is a 409 error; a
// missing node NodeNotFound. Creation needs no node lock: the database's
// unique indexes arbitrate between concurrent creators.
func (s *Store) CreateVolumeConnector(ctx context.Context, c *model.VolumeConnector) error {
	if c.UUID == "" {
		c.UUID = uuid.NewString()
	}
	c.CreatedAt = now()
	c.UpdatedAt = nil
	id, err := s.insert(ctx, volumeConnectorColumns, c)
	if err != nil {
		return fmt.Errorf("create volume connector %s: %w", c.UUID, volumeConnectorWriteError(err, c))
	}
	c.ID = id
	return nil
}

// GetVolumeConnector loads a connector (with NodeUUID) by uuid;
// errs.KindVolumeConnectorNotFound if there is none.
func (s *Store) GetVolumeConnector(ctx context.Context, uuid string) (*model.VolumeConnector, error) {
	c, err := getOwned(ctx, s, volumeConnectorColumns, uuid, connectorNodeUUID)
	if err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, volumeConnectorNotFound(uuid)
		}
		return nil, fmt.Errorf("get volume connector %s: %w", uuid, err)
	}
	return c, nil
}

// ListVolumeConnectors returns one page of the connectors matching f, each
// with NodeUUID filled by a join in the same query. columns as in
// ListPorts. Sort keys are the columns but extra.
func (s *Store) ListVolumeConnectors(ctx context.Context, f VolumeFilter, p Page, columns []string) ([]model.VolumeConnector, error) {
	out, err := listOwned(ctx, s, volumeConnectorList, volumeConnectorColumns, f, p, columns, connectorNodeUUID)
	if err != nil {
		if _, typed := errs.As(err); typed {
			return nil, err
		}
		return nil, fmt.Errorf("list volume connectors: %w", err)
	}
	return out, nil
}

// SaveVolumeConnector writes every column of c except id, uuid and
// created_at, by id, and sets updated_at. It refreshes c.NodeUUID from the
// stored owner, which changes when NodeID does.
func (s *Store) SaveVolumeConnector(ctx context.Context, c *model.VolumeConnector) error {
	ts, nodeUUID, err := s.saveOwned(ctx, volumeConnectorColumns, volumeConnectorSaveColumns, c, c.ID, c.NodeID)
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return volumeConnectorNotFound(c.UUID)
	case err != nil:
		return fmt.Errorf("save volume connector %s: %w", c.UUID, volumeConnectorWriteError(err, c))
	}
	c.UpdatedAt, c.NodeUUID = &ts, nodeUUID
	return nil
}

// DestroyVolumeConnector deletes a connector;
// errs.KindVolumeConnectorNotFound if there is none.
func (s *Store) DestroyVolumeConnector(ctx context.Context, uuid string) error {
	found, err := s.destroyByUUID(ctx, "volume_connectors", uuid)
	if err != nil {
		return fmt.Errorf("destroy volume connector %s: %w", uuid, err)
	}
	if !found {
		return volumeConnectorNotFound(uuid)
	}
	return nil
}

// CreateVolumeTarget inserts t, filling ID and CreatedAt (and UUID when
// empty). A duplicate uuid or (node, boot_index) is a 409 error; a missing
// node NodeNotFound.
func (s *Store) CreateVolumeTarget(ctx context.Context, t *model.VolumeTarget) error {
	if t.UUID == "" {
		t.UUID = uuid.NewString()
	}
	t.CreatedAt = now()
	t.UpdatedAt = nil
	id, err := s.insert(ctx, volumeTargetColumns, t)
	if err != nil {
		return fmt.Errorf("create volume target %s: %w", t.UUID, volumeTargetWriteError(err, t))
	}
	t.ID = id
	return nil
}

// GetVolumeTarget loads a target (with NodeUUID) by uuid;
// errs.KindVolumeTargetNotFound if there is none. Properties are returned
// as stored, credentials included.
func (s *Store) GetVolumeTarget(ctx context.Context, uuid string) (*model.VolumeTarget, error) {
	t, err := getOwned(ctx, s, volumeTargetColumns, uuid, targetNodeUUID)
	if err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, volumeTargetNotFound(uuid)
		}
		return nil, fmt.Errorf("get volume target %s: %w", uuid, err)
	}
	return t, nil
}

// ListVolumeTargets returns one page of the targets matching f, each with
// NodeUUID filled by a join in the same query. Sort keys are the columns
// but extra and properties.
func (s *Store) ListVolumeTargets(ctx context.Context, f VolumeFilter, p Page, columns []string) ([]model.VolumeTarget, error) {
	out, err := listOwned(ctx, s, volumeTargetList, volumeTargetColumns, f, p, columns, targetNodeUUID)
	if err != nil {
		if _, typed := errs.As(err); typed {
			return nil, err
		}
		return nil, fmt.Errorf("list volume targets: %w", err)
	}
	return out, nil
}

// SaveVolumeTarget writes every column of t except id, uuid and
// created_at, by id, and sets updated_at; t.NodeUUID is refreshed from the
// stored owner.
func (s *Store) SaveVolumeTarget(ctx context.Context, t *model.VolumeTarget) error {
	ts, nodeUUID, err := s.saveOwned(ctx, volumeTargetColumns, volumeTargetSaveColumns, t, t.ID, t.NodeID)
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return volumeTargetNotFound(t.UUID)
	case err != nil:
		return fmt.Errorf("save volume target %s: %w", t.UUID, volumeTargetWriteError(err, t))
	}
	t.UpdatedAt, t.NodeUUID = &ts, nodeUUID
	return nil
}

// DestroyVolumeTarget deletes a target; errs.KindVolumeTargetNotFound if
// there is none.
func (s *Store) DestroyVolumeTarget(ctx context.Context, uuid string) error {
	found, err := s.destroyByUUID(ctx, "volume_targets", uuid)
	if err != nil {
		return fmt.Errorf("destroy volume target %s: %w", uuid, err)
	}
	if !found {
		return volumeTargetNotFound(uuid)
	}
	return nil
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
