package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/allocations"
	"github.com/ferricbm/ferric/pkg/resource/filter"
)

var (
	allocationColumns = parseColumns(&model.Allocation{})
	allocationList    = listTable{
		table:     "allocations",
		markerCol: "uuid",
		sortable:  allocationColumns.sortable(),
		forbidden: allocationColumns.json,
		notFound:  func(m string) error { return AllocationNotFound(m) },
	}
)

// AllocationColumns lists the allocation columns ListAllocations can
// select ("node_uuid" is also accepted there).
func AllocationColumns() []string { return slices.Clone(allocationColumns.all) }

// AllocationNotFound is the error for an allocation identifier (uuid or
// name) that matches nothing.
func AllocationNotFound(ident string) *errs.Error {
	return errs.New(errs.KindNotFound, "Allocation %s could not be found.", ident)
}

// AllocationFilter narrows ListAllocations; nil fields do not filter.
type AllocationFilter struct {
	// Match are the conditions of a list query, as the allocation
	// catalogue derives them.
	Match []filter.Condition
	// ConductorAffinity: the allocations this conductor processes.
	ConductorAffinity *int64
}

func allocationDuplicate(key string, a *model.Allocation) error {
	switch key {
	case uniqAllocationUUID:
		return errs.New(errs.KindAlreadyExists, "An allocation with UUID %s already exists.", a.UUID)
	case uniqAllocationName:
		return errs.New(errs.KindDuplicateName, "An allocation with name %s already exists.", strOrEmpty(a.Name))
	}
	return nil
}

// allocationWriteError turns a broken unique key into the API's 409.
func allocationWriteError(err error, a *model.Allocation) error {
	if key, ok := uniqueViolation(err); ok {
		if dup := allocationDuplicate(key, a); dup != nil {
			return dup
		}
	}
	return err
}

func allocationNodeUUID(a *model.Allocation) **string { return &a.NodeUUID }

// CreateAllocation inserts a, filling ID and CreatedAt (and UUID when
// empty). A duplicate uuid or name is a 409.
func (s *Store) CreateAllocation(ctx context.Context, a *model.Allocation) error {
	if err := s.create(ctx, allocationColumns, a); err != nil {
		return fmt.Errorf("create allocation %s: %w", a.UUID, allocationWriteError(err, a))
	}
	return nil
}

// GetAllocation loads an allocation by uuid; AllocationNotFound if there
// is none.
func (s *Store) GetAllocation(ctx context.Context, uuid string) (*model.Allocation, error) {
	return s.getAllocation(ctx, "uuid", uuid, uuid)
}

// GetAllocationByName loads an allocation by name.
func (s *Store) GetAllocationByName(ctx context.Context, name string) (*model.Allocation, error) {
	return s.getAllocation(ctx, "name", name, name)
}

// GetNodeAllocation loads the allocation that reserved the node with id
// nodeID (Ironic's /v1/nodes/{node}/allocation); ident names the node in
// the error when there is none.
func (s *Store) GetNodeAllocation(ctx context.Context, nodeID int64, ident string) (*model.Allocation, error) {
	a, err := s.getAllocation(ctx, "node_id", nodeID, ident)
	if e, ok := errs.As(err); ok && e.Kind == errs.KindNotFound {
		return nil, errs.New(errs.KindNotFound, "Allocation for node %s was not found", ident)
	}
	return a, err
}

func (s *Store) getAllocation(ctx context.Context, column string, value any, ident string) (*model.Allocation, error) {
	q := s.nodeUUIDQuery(ctx, "allocations", "LEFT JOIN", allocationColumns.all).
		Where(clause.Eq{Column: clause.Column{Table: "allocations", Name: column}, Value: value}).
		Limit(1)
	rows, err := scanRows(q, allocationColumns, allocationNodeUUID)
	if err != nil {
		return nil, fmt.Errorf("get allocation %s: %w", ident, err)
	}
	if len(rows) == 0 {
		return nil, AllocationNotFound(ident)
	}
	return &rows[0], nil
}

// ListAllocations returns one page of the allocations matching f, each
// with NodeUUID from the same query. columns as in ListPorts.
func (s *Store) ListAllocations(ctx context.Context, f AllocationFilter, p Page, columns []string) ([]model.Allocation, error) {
	cols, err := allocationColumns.selection(columns, "node_uuid")
	if err != nil {
		return nil, err
	}
	q := s.nodeUUIDQuery(ctx, "allocations", "LEFT JOIN", cols)
	for _, e := range where("allocations", idConditions(f.Match, parentID{"conductor_affinity", f.ConductorAffinity}), nil) {
		q = q.Where(e)
	}
	q, err = allocationList.paginate(ctx, s.db, q, p)
	if err != nil {
		return nil, err
	}
	rows, err := scanRows(q, allocationColumns, allocationNodeUUID)
	if err != nil {
		return nil, fmt.Errorf("list allocations: %w", err)
	}
	return rows, nil
}

// SaveAllocation writes the name and extra of a, the fields a client may
// change (1.57), and sets updated_at.
func (s *Store) SaveAllocation(ctx context.Context, a *model.Allocation) error {
	ts := now()
	res := s.db.WithContext(ctx).Exec("UPDATE allocations SET name = ?, extra = ?, updated_at = ? WHERE id = ?",
		a.Name, a.Extra, ts, a.ID)
	if res.Error != nil {
		return fmt.Errorf("save allocation %s: %w", a.UUID, allocationWriteError(res.Error, a))
	}
	if res.RowsAffected == 0 {
		return AllocationNotFound(a.UUID)
	}
	a.UpdatedAt = &ts
	return nil
}

// ErrNodeUnsuitable is ReserveForAllocation's answer for a node that no
// longer matches the allocation, or that another holder has locked or
// associated meanwhile.
var ErrNodeUnsuitable = errors.New("node is no longer suitable for the allocation")

// ErrAllocationTaken is ReserveForAllocation's and FailAllocation's
// answer when the allocation is no longer this conductor's to process: it
// was deleted, finished or taken over.
var ErrAllocationTaken = errors.New("allocation is no longer processed by this conductor")

// ReserveForAllocation grants allocation a the node with id nodeID, in
// one transaction, if the node still qualifies (NodeLocked if another
// holder has it locked, ErrNodeUnsuitable if it no longer matches): available, not
// in maintenance, with no instance, of the allocation's resource class
// and with all its traits. The node gets the allocation's uuid as
// instance_uuid, the allocation's id, and the requested traits in
// instance_info; the allocation, still allocating and processed by
// conductorID, becomes active on the node. Either both rows change or
// neither does.
func (s *Store) ReserveForAllocation(ctx context.Context, a *model.Allocation, nodeID, conductorID int64) error {
	var nodeUUID string
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		n, err := s.lockNodeForAllocation(tx, nodeID)
		if err != nil {
			return err
		}
		if !allocations.Matches(a, n) {
			return ErrNodeUnsuitable
		}
		if n.Reservation != nil {
			return errs.NodeLocked(n.UUID, *n.Reservation)
		}
		info := model.JSONObject{}
		for k, v := range n.InstanceInfo {
			info[k] = v
		}
		info["traits"] = traitsOf(a)
		ts := now()
		res := tx.Exec("UPDATE allocations SET node_id = ?, state = ?, last_error = NULL, updated_at = ? WHERE id = ? AND state = ? AND conductor_affinity = ?",
			nodeID, model.AllocationActive, ts, a.ID, model.AllocationAllocating, conductorID)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrAllocationTaken
		}
		res = tx.Exec("UPDATE nodes SET instance_uuid = ?, allocation_id = ?, instance_info = ?, updated_at = ? WHERE id = ? AND reservation IS NULL AND instance_uuid IS NULL",
			a.UUID, a.ID, info, ts, nodeID)
		if res.Error != nil {
			if key, ok := uniqueViolation(res.Error); ok && key == uniqNodeInstanceUUID {
				return errs.New(errs.KindConflict, "Instance %s is already associated with a node.", a.UUID)
			}
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNodeUnsuitable
		}
		nodeUUID = n.UUID
		a.UpdatedAt = &ts
		return nil
	})
	if err != nil {
		if _, ok := errs.As(err); ok || errors.Is(err, ErrNodeUnsuitable) || errors.Is(err, ErrAllocationTaken) {
			return err
		}
		return fmt.Errorf("reserve node %d for allocation %s: %w", nodeID, a.UUID, err)
	}
	a.NodeID, a.NodeUUID, a.State, a.LastError = &nodeID, &nodeUUID, model.AllocationActive, nil
	return nil
}

// lockNodeForAllocation reads what the allocation checks of a node, the
// row locked until the end of tx (SQLite's immediate transactions lock
// the whole database).
func (s *Store) lockNodeForAllocation(tx *gorm.DB, nodeID int64) (*model.Node, error) {
	cols := []string{"id", "uuid", "provision_state", "maintenance", "instance_uuid", "resource_class", "traits",
		"instance_info", "reservation", "power_state", "allocation_id"}
	q := tx.Table("nodes").Select(cols).Where("id = ?", nodeID)
	if s.dialect == DialectMySQL {
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	rows, err := scanRows[model.Node, string](q, nodeColumns, nil)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, ErrNodeUnsuitable
	}
	return &rows[0], nil
}

func traitsOf(a *model.Allocation) []string {
	if a.Traits == nil {
		return []string{}
	}
	return a.Traits
}

// FailAllocation records that allocation a, processed by conductorID,
// found no node: state error with reason as last_error.
func (s *Store) FailAllocation(ctx context.Context, a *model.Allocation, conductorID int64, reason string) error {
	ts := now()
	res := s.db.WithContext(ctx).Exec("UPDATE allocations SET node_id = NULL, state = ?, last_error = ?, updated_at = ? WHERE id = ? AND state = ? AND conductor_affinity = ?",
		model.AllocationError, clipText(&reason), ts, a.ID, model.AllocationAllocating, conductorID)
	if res.Error != nil {
		return fmt.Errorf("fail allocation %s: %w", a.UUID, res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrAllocationTaken
	}
	a.NodeID, a.NodeUUID, a.State, a.LastError, a.UpdatedAt = nil, nil, model.AllocationError, &reason, &ts
	return nil
}

// TakeOverAllocation makes conductor to process the allocation that
// conductor from (nil: none) processed, unless another conductor took it
// first; it reports whether to won.
func (s *Store) TakeOverAllocation(ctx context.Context, id int64, from *int64, to int64) (bool, error) {
	q := s.db.WithContext(ctx).Model(&model.Allocation{}).Where("id = ? AND state = ?", id, model.AllocationAllocating)
	if from == nil {
		q = q.Where("conductor_affinity IS NULL")
	} else {
		q = q.Where("conductor_affinity = ?", *from)
	}
	res := q.Update("conductor_affinity", to)
	if res.Error != nil {
		return false, fmt.Errorf("take over allocation %d: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// OrphanedAllocations lists the allocations still allocating that no live
// conductor processes: theirs has not heartbeated within
// heartbeatTimeout, or stopped.
func (s *Store) OrphanedAllocations(ctx context.Context, heartbeatTimeout time.Duration) ([]model.Allocation, error) {
	q := s.nodeUUIDQuery(ctx, "allocations", "LEFT JOIN", allocationColumns.all).
		Where("allocations.state = ?", model.AllocationAllocating).
		Where("allocations.conductor_affinity IS NULL OR allocations.conductor_affinity NOT IN (SELECT id FROM conductors WHERE online = ? AND updated_at >= ?)",
			true, now().Add(-heartbeatTimeout)).
		Order("allocations.id")
	rows, err := scanRows(q, allocationColumns, allocationNodeUUID)
	if err != nil {
		return nil, fmt.Errorf("list orphaned allocations: %w", err)
	}
	return rows, nil
}

// DestroyAllocation deletes an allocation and, in the same transaction,
// releases the node it reserved: the node loses its instance_uuid and
// allocation id.
func (s *Store) DestroyAllocation(ctx context.Context, uuid string) error {
	return s.transaction(ctx, func(tx *gorm.DB) error {
		var id int64
		err := tx.Raw("SELECT id FROM allocations WHERE uuid = ?", uuid).Row().Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return AllocationNotFound(uuid)
		}
		if err != nil {
			return fmt.Errorf("destroy allocation %s: %w", uuid, err)
		}
		if err := tx.Exec("UPDATE nodes SET instance_uuid = NULL, allocation_id = NULL, updated_at = ? WHERE allocation_id = ?",
			now(), id).Error; err != nil {
			return fmt.Errorf("destroy allocation %s: release node: %w", uuid, err)
		}
		if err := tx.Exec("DELETE FROM allocations WHERE id = ?", id).Error; err != nil {
			return fmt.Errorf("destroy allocation %s: %w", uuid, err)
		}
		return nil
	})
}
