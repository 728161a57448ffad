package db

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/filter"
)

var portgroupColumns = parseColumns(&model.Portgroup{})

// PortgroupColumns lists the port group columns ListPortgroups can select
// ("node_uuid" is also accepted there, as for ports).
func PortgroupColumns() []string { return slices.Clone(portgroupColumns.all) }

// PortgroupNotFound is the error for a port group identifier (uuid or
// name) that matches nothing.
func PortgroupNotFound(ident string) *errs.Error {
	return errs.New(errs.KindNotFound, "Portgroup %s could not be found.", ident)
}

// PortgroupFilter narrows ListPortgroups; nil fields do not filter.
type PortgroupFilter struct {
	// Match are the conditions of a list query, as the port group
	// catalogue derives them.
	Match  []filter.Condition
	NodeID *int64
}

var (
	portgroupList = listTable{
		table:     "portgroups",
		markerCol: "uuid",
		sortable:  portgroupColumns.sortable(),
		forbidden: portgroupColumns.json,
		notFound:  func(m string) error { return PortgroupNotFound(m) },
	}
	portgroupSaveColumns = saveColumnsOf(portgroupColumns)
)

type portgroupRow struct {
	model.Portgroup
	JoinedNodeUUID string `gorm:"column:node_uuid"`
}

func (r portgroupRow) portgroup() model.Portgroup {
	pg := r.Portgroup
	pg.NodeUUID = r.JoinedNodeUUID
	return pg
}

// portgroupWriteError turns a port group INSERT/UPDATE failure into the
// API's 409s, and a missing owner into NodeNotFound.
func portgroupWriteError(err error, pg *model.Portgroup) error {
	if foreignKeyViolation(err) {
		return ownerNotFound(pg.NodeUUID, pg.NodeID)
	}
	key, ok := uniqueViolation(err)
	if !ok {
		return err
	}
	switch key {
	case uniqPortgroupUUID:
		return errs.New(errs.KindAlreadyExists, "A portgroup with UUID %s already exists.", pg.UUID)
	case uniqPortgroupName:
		return errs.New(errs.KindDuplicateName, "A portgroup with name %s already exists.", strOrEmpty(pg.Name))
	case uniqPortgroupAddress:
		return errs.New(errs.KindAlreadyExists, "A portgroup with MAC address %s already exists.", strOrEmpty(pg.Address))
	}
	return err
}

func strOrEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// CreatePortgroup inserts pg, filling ID and CreatedAt (and UUID when
// empty). A duplicate uuid, name or address is a 409 error; a missing node
// NodeNotFound.
func (s *Store) CreatePortgroup(ctx context.Context, pg *model.Portgroup) error {
	if pg.UUID == "" {
		pg.UUID = uuid.NewString()
	}
	pg.CreatedAt = now()
	pg.UpdatedAt = nil
	id, err := s.insert(ctx, portgroupColumns, pg)
	if err != nil {
		return fmt.Errorf("create portgroup %s: %w", pg.UUID, portgroupWriteError(err, pg))
	}
	pg.ID = id
	return nil
}

// GetPortgroup loads a port group (with NodeUUID) by uuid;
// PortgroupNotFound if there is none.
func (s *Store) GetPortgroup(ctx context.Context, uuid string) (*model.Portgroup, error) {
	return s.getPortgroup(ctx, "uuid", uuid)
}

// GetPortgroupByName loads a port group by name.
func (s *Store) GetPortgroupByName(ctx context.Context, name string) (*model.Portgroup, error) {
	return s.getPortgroup(ctx, "name", name)
}

func (s *Store) getPortgroup(ctx context.Context, column, value string) (*model.Portgroup, error) {
	cols, _ := portgroupColumns.selection(nil)
	var r portgroupRow
	err := s.ownedQuery(ctx, "portgroups", cols).
		Where(clause.Eq{Column: clause.Column{Table: "portgroups", Name: column}, Value: value}).
		Take(&r).Error
	if err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, PortgroupNotFound(value)
		}
		return nil, fmt.Errorf("get portgroup %s: %w", value, err)
	}
	pg := r.portgroup()
	return &pg, nil
}

// ListPortgroups returns one page of the port groups matching f, each with
// NodeUUID filled by a join in the same query. columns as in ListPorts.
func (s *Store) ListPortgroups(ctx context.Context, f PortgroupFilter, p Page, columns []string) ([]model.Portgroup, error) {
	cols, err := portgroupColumns.selection(columns, "node_uuid")
	if err != nil {
		return nil, err
	}
	q := s.ownedQuery(ctx, "portgroups", cols)
	for _, e := range where("portgroups", idConditions(f.Match, parentID{"node_id", f.NodeID}), nil) {
		q = q.Where(e)
	}
	q, err = portgroupList.paginate(ctx, s.db, q, p)
	if err != nil {
		return nil, err
	}
	var rows []portgroupRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list portgroups: %w", err)
	}
	out := make([]model.Portgroup, len(rows))
	for i, r := range rows {
		out[i] = r.portgroup()
	}
	return out, nil
}

// SavePortgroup writes every column of pg except id, uuid and created_at,
// by id, and sets updated_at; pg.NodeUUID is refreshed from the stored
// owner.
func (s *Store) SavePortgroup(ctx context.Context, pg *model.Portgroup) error {
	ts, nodeUUID, err := s.saveOwned(ctx, portgroupColumns, portgroupSaveColumns, pg, pg.ID, pg.NodeID)
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return PortgroupNotFound(pg.UUID)
	case err != nil:
		return fmt.Errorf("save portgroup %s: %w", pg.UUID, portgroupWriteError(err, pg))
	}
	pg.UpdatedAt, pg.NodeUUID = &ts, nodeUUID
	return nil
}

// DestroyPortgroup deletes a port group that no port is a member of; one
// with member ports is a 409 (Ironic's PortgroupNotEmpty). The foreign key
// of ports.portgroup_id backs the check against a concurrent writer.
func (s *Store) DestroyPortgroup(ctx context.Context, uuid string) error {
	return s.transaction(ctx, func(tx *gorm.DB) error {
		var pg model.Portgroup
		if err := tx.Select("id").Where("uuid = ?", uuid).Take(&pg).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return PortgroupNotFound(uuid)
			}
			return fmt.Errorf("destroy portgroup %s: %w", uuid, err)
		}
		var members int64
		if err := tx.Model(&model.Port{}).Where("portgroup_id = ?", pg.ID).Count(&members).Error; err != nil {
			return fmt.Errorf("destroy portgroup %s: count ports: %w", uuid, err)
		}
		notEmpty := errs.New(errs.KindInvalidState, "Cannot complete the requested action because portgroup %s contains ports.", uuid)
		if members > 0 {
			return notEmpty
		}
		if err := tx.Where("id = ?", pg.ID).Delete(&model.Portgroup{}).Error; err != nil {
			if rowReferenced(err) {
				return notEmpty
			}
			return fmt.Errorf("destroy portgroup %s: %w", uuid, err)
		}
		return nil
	})
}
