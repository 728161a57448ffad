package db

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/filter"
)

var portgroups = newOwnedTable("portgroup", func(pg *model.Portgroup) *string { return &pg.NodeUUID },
	func(ident string) error { return PortgroupNotFound(ident) }, portgroupDuplicate)

// PortgroupColumns lists the port group columns ListPortgroups can select
// ("node_uuid" is also accepted there, as for ports).
func PortgroupColumns() []string { return slices.Clone(portgroups.columns.all) }

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

// portgroupDuplicate is the 409 for a port group's unique key.
func portgroupDuplicate(key string, pg *model.Portgroup) error {
	switch key {
	case uniqPortgroupUUID:
		return errs.New(errs.KindAlreadyExists, "A portgroup with UUID %s already exists.", pg.UUID)
	case uniqPortgroupName:
		return errs.New(errs.KindDuplicateName, "A portgroup with name %s already exists.", strOrEmpty(pg.Name))
	case uniqPortgroupAddress:
		return errs.New(errs.KindAlreadyExists, "A portgroup with MAC address %s already exists.", strOrEmpty(pg.Address))
	}
	return nil
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
	return portgroups.create(ctx, s, pg)
}

// GetPortgroup loads a port group (with NodeUUID) by uuid;
// PortgroupNotFound if there is none.
func (s *Store) GetPortgroup(ctx context.Context, uuid string) (*model.Portgroup, error) {
	return portgroups.get(ctx, s, "uuid", uuid)
}

// GetPortgroupByName loads a port group by name.
func (s *Store) GetPortgroupByName(ctx context.Context, name string) (*model.Portgroup, error) {
	return portgroups.get(ctx, s, "name", name)
}

// ListPortgroups returns one page of the port groups matching f, each with
// NodeUUID filled by a join in the same query. columns as in ListPorts.
func (s *Store) ListPortgroups(ctx context.Context, f PortgroupFilter, p Page, columns []string) ([]model.Portgroup, error) {
	return portgroups.page(ctx, s, f.Match, f.NodeID, p, columns)
}

// SavePortgroup writes pg back by id (see ownedTable.update).
func (s *Store) SavePortgroup(ctx context.Context, pg *model.Portgroup) error {
	return portgroups.update(ctx, s, pg)
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
