package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hashring"
	"github.com/ferricbm/ferric/pkg/model"
)

// ConductorNotFound is the error for an unknown conductor hostname.
func ConductorNotFound(hostname string) *errs.Error {
	return errs.New(errs.KindConductorNotFound, "Conductor %s could not be found.", hostname)
}

var conductorList = listTable{
	table:     "conductors",
	markerCol: "hostname",
	sortable:  conductorColumns.sortable(),
	forbidden: conductorColumns.json,
	notFound:  func(m string) error { return ConductorNotFound(m) },
}

// RegisterConductor creates or takes over the row for c.Hostname (online,
// updated_at=now, c's group, the next epoch) and replaces its hardware
// interface rows, in one transaction. c's ID, Epoch, CreatedAt, UpdatedAt
// and Online are filled in.
func (s *Store) RegisterConductor(ctx context.Context, c *model.Conductor, ifaces []model.ConductorHardwareInterface) error {
	if c.Hostname == "" {
		return errors.New("register conductor: empty hostname")
	}
	ts := now()
	return s.transaction(ctx, func(tx *gorm.DB) error {
		row := model.Conductor{Hostname: c.Hostname, Online: true, ConductorGroup: c.ConductorGroup, Epoch: 1, CreatedAt: ts, UpdatedAt: &ts}
		err := tx.Clauses(clause.OnConflict{
			Columns: []clause.Column{{Name: "hostname"}},
			DoUpdates: clause.Assignments(map[string]any{"online": true, "conductor_group": c.ConductorGroup, "updated_at": ts,
				"epoch": gorm.Expr("epoch + 1")}),
		}).Create(&row).Error
		if err != nil {
			return fmt.Errorf("register conductor %s: %w", c.Hostname, err)
		}
		// On conflict MySQL reports no usable insert id: read the row back.
		var stored model.Conductor
		if err := tx.Where("hostname = ?", c.Hostname).Take(&stored).Error; err != nil {
			return fmt.Errorf("register conductor %s: re-read: %w", c.Hostname, err)
		}
		if err := tx.Where("conductor_id = ?", stored.ID).Delete(&model.ConductorHardwareInterface{}).Error; err != nil {
			return fmt.Errorf("register conductor %s: clear hardware interfaces: %w", c.Hostname, err)
		}
		rows := make([]model.ConductorHardwareInterface, 0, len(ifaces))
		for _, iface := range ifaces {
			iface.ID = 0
			iface.ConductorID = stored.ID
			if !slices.ContainsFunc(rows, func(r model.ConductorHardwareInterface) bool {
				return r.HardwareType == iface.HardwareType && r.InterfaceType == iface.InterfaceType && r.InterfaceName == iface.InterfaceName
			}) {
				rows = append(rows, iface)
			}
		}
		if len(rows) > 0 {
			if err := tx.Create(&rows).Error; err != nil {
				return fmt.Errorf("register conductor %s: hardware interfaces: %w", c.Hostname, err)
			}
		}
		*c = stored
		return nil
	})
}

// TouchConductor is the heartbeat: updated_at=now, online=true.
func (s *Store) TouchConductor(ctx context.Context, hostname string) error {
	res := s.db.WithContext(ctx).Exec("UPDATE conductors SET updated_at = ?, online = ? WHERE hostname = ?", now(), true, hostname)
	if res.Error != nil {
		return fmt.Errorf("touch conductor %s: %w", hostname, res.Error)
	}
	if res.RowsAffected == 0 {
		return ConductorNotFound(hostname)
	}
	return nil
}

// UnregisterConductor marks the conductor offline and drops its hardware
// interfaces, so no hash ring routes to it any more.
func (s *Store) UnregisterConductor(ctx context.Context, hostname string) error {
	return s.transaction(ctx, func(tx *gorm.DB) error {
		var c model.Conductor
		if err := tx.Select("id").Where("hostname = ?", hostname).Take(&c).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ConductorNotFound(hostname)
			}
			return fmt.Errorf("unregister conductor %s: %w", hostname, err)
		}
		if err := tx.Exec("UPDATE conductors SET online = ? WHERE id = ?", false, c.ID).Error; err != nil {
			return fmt.Errorf("unregister conductor %s: %w", hostname, err)
		}
		if err := tx.Where("conductor_id = ?", c.ID).Delete(&model.ConductorHardwareInterface{}).Error; err != nil {
			return fmt.Errorf("unregister conductor %s: hardware interfaces: %w", hostname, err)
		}
		return nil
	})
}

// GetConductor loads a conductor by hostname; ConductorNotFound if none.
func (s *Store) GetConductor(ctx context.Context, hostname string) (*model.Conductor, error) {
	var c model.Conductor
	if err := s.db.WithContext(ctx).Where("hostname = ?", hostname).Take(&c).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ConductorNotFound(hostname)
		}
		return nil, fmt.Errorf("get conductor %s: %w", hostname, err)
	}
	return &c, nil
}

// ListConductors returns one page of all registered conductors, online or
// not (the API derives "alive" from UpdatedAt). Marker is a hostname.
func (s *Store) ListConductors(ctx context.Context, p Page) ([]model.Conductor, error) {
	q, err := conductorList.paginate(ctx, s.db, s.db.WithContext(ctx).Model(&model.Conductor{}), p)
	if err != nil {
		return nil, err
	}
	out := []model.Conductor{}
	if err := q.Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list conductors: %w", err)
	}
	return out, nil
}

// liveInterfaces joins the hardware interface rows of the conductors that
// are online and heartbeated since the time given as its second argument.
const liveInterfaces = ` FROM conductors c JOIN conductor_hardware_interfaces h ON h.conductor_id = c.id
	WHERE c.online = ? AND c.updated_at >= ?`

// ActiveMembers returns one entry per (hostname, group, hardware type) of
// the conductors that are online and heartbeated within heartbeatTimeout:
// the input of the hash rings.
func (s *Store) ActiveMembers(ctx context.Context, heartbeatTimeout time.Duration) ([]hashring.Member, error) {
	var rows []struct {
		Hostname       string
		ConductorGroup string
		HardwareType   string
		UpdatedAt      time.Time
	}
	err := s.db.WithContext(ctx).Raw(
		`SELECT DISTINCT c.hostname, c.conductor_group, h.hardware_type, c.updated_at`+liveInterfaces+
			` ORDER BY c.hostname, h.hardware_type`, true, now().Add(-heartbeatTimeout)).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list active conductors: %w", err)
	}
	out := make([]hashring.Member, len(rows))
	for i, r := range rows {
		out[i] = hashring.Member{Hostname: r.Hostname, ConductorGroup: r.ConductorGroup, HardwareType: r.HardwareType,
			Expires: r.UpdatedAt.Add(heartbeatTimeout)}
	}
	return out, nil
}

// ActiveHardwareInterfaces returns the hardware interface rows of the
// conductors that are online and heartbeated within heartbeatTimeout, each
// conductor's in the order it registered them: what hwcatalog.New builds
// the offered hardware types from.
func (s *Store) ActiveHardwareInterfaces(ctx context.Context, heartbeatTimeout time.Duration) ([]model.ConductorHardwareInterface, error) {
	var rows []model.ConductorHardwareInterface
	err := s.db.WithContext(ctx).Raw(
		"SELECT h.id, h.conductor_id, h.hardware_type, h.interface_type, h.interface_name, h.`default`"+liveInterfaces+
			" ORDER BY c.hostname, h.id", true, now().Add(-heartbeatTimeout)).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list hardware interfaces of active conductors: %w", err)
	}
	return rows, nil
}

// OfflineConductors returns the hostnames whose last heartbeat is older
// than heartbeatTimeout, whatever their online flag: their node locks are
// orphans another conductor may break.
func (s *Store) OfflineConductors(ctx context.Context, heartbeatTimeout time.Duration) ([]string, error) {
	hosts := []string{}
	err := s.db.WithContext(ctx).Model(&model.Conductor{}).
		Where("updated_at < ?", now().Add(-heartbeatTimeout)).
		Order("hostname").Pluck("hostname", &hosts).Error
	if err != nil {
		return nil, fmt.Errorf("list offline conductors: %w", err)
	}
	return hosts, nil
}

// ConductorHardwareTypes lists the hardware types a conductor serves.
func (s *Store) ConductorHardwareTypes(ctx context.Context, hostname string) ([]string, error) {
	c, err := s.GetConductor(ctx, hostname)
	if err != nil {
		return nil, err
	}
	types := []string{}
	err = s.db.WithContext(ctx).Model(&model.ConductorHardwareInterface{}).
		Distinct("hardware_type").Where("conductor_id = ?", c.ID).
		Order("hardware_type").Pluck("hardware_type", &types).Error
	if err != nil {
		return nil, fmt.Errorf("list hardware types of %s: %w", hostname, err)
	}
	return types, nil
}

// HardwareTypeHosts maps each hardware type served by an active conductor
// to the sorted hostnames serving it (GET /v1/drivers).
func (s *Store) HardwareTypeHosts(ctx context.Context, heartbeatTimeout time.Duration) (map[string][]string, error) {
	members, err := s.ActiveMembers(ctx, heartbeatTimeout)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, m := range members {
		if !slices.Contains(out[m.HardwareType], m.Hostname) {
			out[m.HardwareType] = append(out[m.HardwareType], m.Hostname)
		}
	}
	for _, hosts := range out {
		slices.Sort(hosts)
	}
	return out, nil
}
