package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/filter"
)

// PortFilter narrows ListPorts; nil fields do not filter.
type PortFilter struct {
	// Match are the conditions of a list query, as the port catalogue
	// derives them.
	Match       []filter.Condition
	NodeID      *int64
	PortgroupID *int64
}

// portJoined are the port list's columns read from the joined node.
var portJoined = map[string]clause.Column{"node_uuid": {Table: "nodes", Name: "uuid"}}

var portList = listTable{
	table:     "ports",
	markerCol: "uuid",
	sortable:  portColumns.sortable(),
	forbidden: portColumns.json,
	notFound:  func(m string) error { return errs.PortNotFound(m) },
}

// portSaveColumns are the columns SavePort writes from the struct.
var portSaveColumns = slices.DeleteFunc(slices.Clone(portColumns.all), func(c string) bool {
	switch c {
	case "id", "uuid", "created_at", "updated_at":
		return true
	}
	return false
})

// portRow is a port with its node's and port group's uuids, read by the
// same query.
type portRow struct {
	model.Port
	JoinedNodeUUID      string  `gorm:"column:node_uuid"`
	JoinedPortgroupUUID *string `gorm:"column:portgroup_uuid"`
}

func (r portRow) port() model.Port {
	p := r.Port
	p.NodeUUID = r.JoinedNodeUUID
	p.PortgroupUUID = r.JoinedPortgroupUUID
	return p
}

// CreatePort inserts p, filling ID and CreatedAt (and UUID when empty). A
// duplicate uuid or address is a 409 error; a missing node NodeNotFound.
func (s *Store) CreatePort(ctx context.Context, p *model.Port) error {
	if err := s.create(ctx, portColumns, p); err != nil {
		return fmt.Errorf("create port %s: %w", p.UUID, portWriteError(err, p.UUID, p.Address, p.NodeID))
	}
	return nil
}

// GetPort loads a port (with NodeUUID) by uuid; errs.PortNotFound if none.
func (s *Store) GetPort(ctx context.Context, uuid string) (*model.Port, error) {
	return s.getPort(ctx, "uuid", uuid)
}

// GetPortByAddress loads the port with that MAC address.
func (s *Store) GetPortByAddress(ctx context.Context, address string) (*model.Port, error) {
	return s.getPort(ctx, "address", address)
}

func (s *Store) getPort(ctx context.Context, column, value string) (*model.Port, error) {
	cols, _ := portColumns.selection(nil)
	var r portRow
	err := s.portQuery(ctx, cols).
		Where(clause.Eq{Column: clause.Column{Table: "ports", Name: column}, Value: value}).
		Take(&r).Error
	if err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, errs.PortNotFound(value)
		}
		return nil, fmt.Errorf("get port %s: %w", value, err)
	}
	p := r.port()
	return &p, nil
}

// portQuery selects cols of ports plus the owning node's and port group's
// uuids.
func (s *Store) portQuery(ctx context.Context, cols []string) *gorm.DB {
	sel := make([]clause.Column, 0, len(cols)+2)
	for _, c := range cols {
		sel = append(sel, clause.Column{Table: "ports", Name: c})
	}
	sel = append(sel, clause.Column{Table: "nodes", Name: "uuid", Alias: "node_uuid"},
		clause.Column{Table: "portgroups", Name: "uuid", Alias: "portgroup_uuid"})
	return s.db.WithContext(ctx).Table("ports").
		Clauses(clause.Select{Columns: sel}).
		Joins("JOIN nodes ON nodes.id = ports.node_id").
		Joins("LEFT JOIN portgroups ON portgroups.id = ports.portgroup_id")
}

// ListPorts returns one page of the ports matching f, each with NodeUUID
// filled by a join in the same query. columns as in ListNodes; "node_uuid"
// and "portgroup_uuid" are accepted and always loaded.
func (s *Store) ListPorts(ctx context.Context, f PortFilter, p Page, columns []string) ([]model.Port, error) {
	cols, err := portColumns.selection(columns, "node_uuid", "portgroup_uuid")
	if err != nil {
		return nil, err
	}
	q := s.portQuery(ctx, cols)
	for _, e := range where("ports", idConditions(f.Match, parentID{"node_id", f.NodeID}, parentID{"portgroup_id", f.PortgroupID}), portJoined) {
		q = q.Where(e)
	}
	q, err = portList.paginate(ctx, s.db, q, p)
	if err != nil {
		return nil, err
	}
	var rows []portRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list ports: %w", err)
	}
	ports := make([]model.Port, len(rows))
	for i, r := range rows {
		ports[i] = r.port()
	}
	return ports, nil
}

// SavePort writes every column of p except id, uuid and created_at, by id,
// and sets updated_at.
func (s *Store) SavePort(ctx context.Context, p *model.Port) error {
	ts := now()
	sets := []string{"updated_at = ?"}
	args := []any{ts}
	for _, c := range portSaveColumns {
		sets = append(sets, s.quote(c)+" = ?")
	}
	args = append(args, portColumns.values(ctx, p, portSaveColumns)...)
	args = append(args, p.ID)
	res := s.db.WithContext(ctx).Exec("UPDATE ports SET "+strings.Join(sets, ", ")+" WHERE id = ?", args...)
	if res.Error != nil {
		return fmt.Errorf("save port %s: %w", p.UUID, portWriteError(res.Error, p.UUID, p.Address, p.NodeID))
	}
	if res.RowsAffected == 0 {
		return errs.PortNotFound(p.UUID)
	}
	p.UpdatedAt = &ts
	return nil
}

// DestroyPort deletes a port; errs.PortNotFound if there is none.
func (s *Store) DestroyPort(ctx context.Context, uuid string) error {
	res := s.db.WithContext(ctx).Where("uuid = ?", uuid).Delete(&model.Port{})
	if res.Error != nil {
		return fmt.Errorf("destroy port %s: %w", uuid, res.Error)
	}
	if res.RowsAffected == 0 {
		return errs.PortNotFound(uuid)
	}
	return nil
}
