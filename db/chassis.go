package db

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

var chassisColumns = parseColumns(&model.Chassis{})

// ChassisColumns lists the chassis columns ListChassis can select.
func ChassisColumns() []string { return slices.Clone(chassisColumns.all) }

// ChassisNotFound is the error for a chassis uuid that matches nothing.
func ChassisNotFound(uuid string) *errs.Error {
	return errs.New(errs.KindNotFound, "Chassis %s could not be found.", uuid)
}

var (
	chassisList = listTable{
		table:     "chassis",
		markerCol: "uuid",
		sortable:  chassisColumns.sortable(),
		forbidden: chassisColumns.json,
		notFound:  func(m string) error { return ChassisNotFound(m) },
	}
	chassisSaveColumns = saveColumnsOf(chassisColumns)
)

// CreateChassis inserts c, filling ID and CreatedAt (and UUID when empty).
// A duplicate uuid is a 409 error.
func (s *Store) CreateChassis(ctx context.Context, c *model.Chassis) error {
	if err := s.create(ctx, chassisColumns, c); err != nil {
		if key, ok := uniqueViolation(err); ok && key == uniqChassisUUID {
			err = errs.New(errs.KindAlreadyExists, "A chassis with UUID %s already exists.", c.UUID)
		}
		return fmt.Errorf("create chassis %s: %w", c.UUID, err)
	}
	return nil
}

// GetChassis loads a chassis by uuid; ChassisNotFound if there is none.
func (s *Store) GetChassis(ctx context.Context, uuid string) (*model.Chassis, error) {
	var c model.Chassis
	if err := s.db.WithContext(ctx).Where("uuid = ?", uuid).Take(&c).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ChassisNotFound(uuid)
		}
		return nil, fmt.Errorf("get chassis %s: %w", uuid, err)
	}
	return &c, nil
}

// ListChassis returns one page of chassis. columns as in ListNodes.
func (s *Store) ListChassis(ctx context.Context, p Page, columns []string) ([]model.Chassis, error) {
	cols, err := chassisColumns.selection(columns)
	if err != nil {
		return nil, err
	}
	q := s.db.WithContext(ctx).Model(&model.Chassis{}).Select(cols)
	q, err = chassisList.paginate(ctx, s.db, q, p)
	if err != nil {
		return nil, err
	}
	out := []model.Chassis{}
	if err := q.Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list chassis: %w", err)
	}
	return out, nil
}

// SaveChassis writes description and extra of c, by id, and sets
// updated_at.
func (s *Store) SaveChassis(ctx context.Context, c *model.Chassis) error {
	ts := now()
	sets := map[string]any{"updated_at": ts}
	vals := chassisColumns.values(ctx, c, chassisSaveColumns)
	for i, col := range chassisSaveColumns {
		sets[col] = vals[i]
	}
	res := s.db.WithContext(ctx).Model(&model.Chassis{}).Where("id = ?", c.ID).Updates(sets)
	if res.Error != nil {
		return fmt.Errorf("save chassis %s: %w", c.UUID, res.Error)
	}
	if res.RowsAffected == 0 {
		return ChassisNotFound(c.UUID)
	}
	c.UpdatedAt = &ts
	return nil
}

// DestroyChassis deletes an empty chassis. A chassis some node still
// refers to is a 400 (Ironic's ChassisNotEmpty); the count and the delete
// share a transaction.
func (s *Store) DestroyChassis(ctx context.Context, uuid string) error {
	return s.transaction(ctx, func(tx *gorm.DB) error {
		var c model.Chassis
		if err := tx.Select("id").Where("uuid = ?", uuid).Take(&c).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ChassisNotFound(uuid)
			}
			return fmt.Errorf("destroy chassis %s: %w", uuid, err)
		}
		var nodes int64
		if err := tx.Model(&model.Node{}).Where("chassis_uuid = ?", uuid).Count(&nodes).Error; err != nil {
			return fmt.Errorf("destroy chassis %s: count nodes: %w", uuid, err)
		}
		if nodes > 0 {
			return errs.New(errs.KindInvalid, "Cannot complete the requested action because chassis %s contains nodes.", uuid)
		}
		if err := tx.Where("id = ?", c.ID).Delete(&model.Chassis{}).Error; err != nil {
			return fmt.Errorf("destroy chassis %s: %w", uuid, err)
		}
		return nil
	})
}
