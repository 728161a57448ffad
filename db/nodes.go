package db

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/filter"
)

// NodeFilter narrows ListNodes. A nil field does not filter. A non-nil
// empty slice matches no node (an empty set of states or uuids).
type NodeFilter struct {
	// Match are the conditions of a list query, as the node catalogue
	// derives them.
	Match           []filter.Condition
	ProvisionStates []string
	Maintenance     *bool
	// Project matches nodes it owns or leases: what a project-scoped
	// token may list.
	Project *string
	// Reserved: the node is locked by some conductor.
	Reserved   *bool
	ReservedBy []string
	// ProvisionUpdatedBefore: provision_updated_at is set and earlier.
	ProvisionUpdatedBefore *time.Time
	UUIDs                  []string
	// ConductorGroupFold matches conductor_group case-insensitively, as the
	// hash ring compares groups.
	ConductorGroupFold *string
	// Drivers: the node's hardware type is one of these.
	Drivers []string
	// IDAbove: only nodes with a larger id, for reading a table in batches
	// ordered by id, which a deleted node cannot break as it would a marker.
	IDAbove int64
}

// conditions are the filter's catalogue conditions and those of its
// fields that are one.
func (f NodeFilter) conditions() []filter.Condition {
	out := slices.Clone(f.Match)
	if f.ProvisionStates != nil {
		out = append(out, filter.Condition{Column: "provision_state", Op: filter.In, Value: f.ProvisionStates})
	}
	if f.Maintenance != nil {
		out = append(out, filter.Condition{Column: "maintenance", Value: *f.Maintenance})
	}
	return out
}

var nodeList = listTable{
	table:     "nodes",
	markerCol: "uuid",
	sortable:  nodeColumns.sortable(),
	forbidden: nodeColumns.json,
	notFound:  func(m string) error { return errs.NodeNotFound(m) },
}

// nodeSaveColumns are the columns SaveNode writes from the struct. id,
// uuid and created_at never change; reservation and reservation_epoch
// belong to Reserve/Release;
// updated_at and provision_updated_at are set by the statement itself.
var nodeSaveColumns = slices.DeleteFunc(slices.Clone(nodeColumns.all), func(c string) bool {
	switch c {
	case "id", "uuid", "created_at", "reservation", "reservation_epoch", "updated_at", "provision_updated_at":
		return true
	}
	return false
})

// CreateNode inserts n, filling ID and CreatedAt (and UUID when empty).
// A duplicate uuid, name or instance_uuid is a 409 error.
func (s *Store) CreateNode(ctx context.Context, n *model.Node) error {
	n.ProvisionUpdatedAt = normTime(n.ProvisionUpdatedAt)
	n.InspectionStartedAt = normTime(n.InspectionStartedAt)
	n.InspectionFinishedAt = normTime(n.InspectionFinishedAt)
	// A new node's lock, if any, was taken in no conductor epoch, and no
	// allocation has reserved it yet; leaving the columns out also keeps a
	// node insertable before the migrations that added them (5 and 8).
	n.AllocationID = nil
	if err := s.create(ctx, nodeColumns, n, "reservation_epoch", "allocation_id"); err != nil {
		return fmt.Errorf("create node %s: %w", n.UUID, nodeWriteError(err, identOf(n)))
	}
	return nil
}

func identOf(n *model.Node) nodeIdent {
	id := nodeIdent{uuid: n.UUID}
	if n.Name != nil {
		id.name = *n.Name
	}
	if n.InstanceUUID != nil {
		id.instanceUUID = *n.InstanceUUID
	}
	return id
}

// GetNode loads a node by uuid; errs.NodeNotFound if there is none.
func (s *Store) GetNode(ctx context.Context, uuid string) (*model.Node, error) {
	return s.getNode(ctx, "uuid", uuid, uuid)
}

// GetNodeByName loads a node by name; errs.NodeNotFound if there is none.
func (s *Store) GetNodeByName(ctx context.Context, name string) (*model.Node, error) {
	return s.getNode(ctx, "name", name, name)
}

// GetNodeByID loads a node by its internal id.
func (s *Store) GetNodeByID(ctx context.Context, id int64) (*model.Node, error) {
	return s.getNode(ctx, "id", id, strconv.FormatInt(id, 10))
}

// nodeSelectAll reads every node column; the single-node reads are the
// API's hottest statements, so they skip gorm and scan directly.
var (
	nodeSelectAll = "SELECT " + quotedColumns("nodes", nodeColumns.all) + " FROM nodes"
	nodeLayout    = nodeColumns.layout(nodeColumns.all)
)

// getNode reads the node whose (unique) column col equals val.
func (s *Store) getNode(ctx context.Context, col string, val any, ident string) (*model.Node, error) {
	stmt, err := s.prepared(ctx, nodeSelectAll+" WHERE nodes.`"+col+"` = ? LIMIT 1")
	if err != nil {
		return nil, fmt.Errorf("get node %s: %w", ident, err)
	}
	rows, err := stmt.QueryContext(ctx, val)
	if err != nil {
		return nil, fmt.Errorf("get node %s: %w", ident, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("get node %s: %w", ident, err)
		}
		return nil, errs.NodeNotFound(ident)
	}
	var n model.Node
	sc := nodeLayout.scanner()
	defer sc.release()
	if err := sc.scan(rows, &n); err != nil {
		return nil, fmt.Errorf("get node %s: %w", ident, err)
	}
	return &n, rows.Close()
}

// ListNodes returns the nodes matching f, one page of them. columns limits
// the SELECT to those columns (id and uuid are always loaded); fields not
// selected keep their zero value. nil loads every column.
func (s *Store) ListNodes(ctx context.Context, f NodeFilter, p Page, columns []string) ([]model.Node, error) {
	cols, err := nodeColumns.selection(columns)
	if err != nil {
		return nil, err
	}
	q := s.db.WithContext(ctx).Model(&model.Node{}).Select(cols)
	if index := filterIndex(f, p.SortKey); index != "" && s.dialect == DialectMySQL {
		q = q.Table("nodes FORCE INDEX (" + index + ")")
	}
	for _, cond := range nodeConditions(f) {
		q = q.Where(cond)
	}
	markers := s.db
	if f.Project != nil {
		// A project's list takes no marker among other projects' nodes:
		// it would place them, and tell that they exist.
		markers = s.db.Where(projectNodes(*f.Project))
	}
	q, err = nodeList.paginate(ctx, markers, q, p)
	if err != nil {
		return nil, err
	}
	nodes, err := scanRows[model.Node, string](q, nodeColumns, nil)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return nodes, nil
}

// filterIndex names the index that serves a page of nodes ordered by id
// and filtered on one indexed column's value, or "" for any other list.
// Each such index carries id after its column, so the page is a range of
// it, (value, marker id) to (value, last id), read in order. MariaDB does
// not see that on its own: for a value most nodes share it reads the
// index from the value's first entry and skips the entries up to the
// marker one by one, or walks the primary key, or picks
// idx_nodes_timeouts and sorts; deep pages of 100,000 nodes cost tens of
// milliseconds instead of one.
//
// Conditions no index serves may come along: they filter the range. Any
// other indexed condition (a second filter, several states, a project)
// leaves the choice to the planner, as does any other order.
func filterIndex(f NodeFilter, sortKey string) string {
	if sortKey != "" && sortKey != "id" {
		return ""
	}
	rest := f
	rest.Match, rest.ProvisionStates, rest.Maintenance = nil, nil, nil
	if !reflect.DeepEqual(rest, NodeFilter{}) {
		return ""
	}
	return nodeColumns.servingIndex(f.conditions())
}

func nodeConditions(f NodeFilter) []clause.Expression {
	col := func(name string) clause.Column { return clause.Column{Table: "nodes", Name: name} }
	out := where("nodes", f.conditions(), nil)
	in := func(name string, values []string) {
		if values != nil {
			out = append(out, condition(col(name), filter.Condition{Op: filter.In, Value: values}))
		}
	}
	if f.Project != nil {
		out = append(out, projectNodes(*f.Project))
	}
	if f.Reserved != nil {
		out = append(out, condition(col("reservation"), filter.Condition{Op: filter.Set, Value: *f.Reserved}))
	}
	in("reservation", f.ReservedBy)
	if f.ProvisionUpdatedBefore != nil {
		out = append(out, clause.Lt{Column: col("provision_updated_at"), Value: *normTime(f.ProvisionUpdatedBefore)})
	}
	in("uuid", f.UUIDs)
	in("driver", f.Drivers)
	if f.ConductorGroupFold != nil {
		out = append(out, clause.Expr{SQL: "LOWER(?) = ?", Vars: []any{col("conductor_group"), strings.ToLower(*f.ConductorGroupFold)}})
	}
	if f.IDAbove > 0 {
		out = append(out, clause.Gt{Column: col("id"), Value: f.IDAbove})
	}
	return out
}

// SaveNode writes every column of n except id, uuid, created_at and
// reservation, by id, in one UPDATE. It sets updated_at, and sets
// provision_updated_at to now when provision_state differs from the stored
// one, so no caller can forget the bump; otherwise provision_updated_at
// keeps its stored value (n's may be stale: a heartbeat may have touched
// it since n was read). n's UpdatedAt and ProvisionUpdatedAt are refreshed
// from the row.
func (s *Store) SaveNode(ctx context.Context, n *model.Node) error {
	_, stmt, args := s.nodeUpdate(ctx, n, "", 0, false)
	return s.transaction(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(stmt, args...)
		if res.Error != nil {
			return fmt.Errorf("save node %s: %w", n.UUID, nodeWriteError(res.Error, identOf(n)))
		}
		if res.RowsAffected == 0 {
			return errs.NodeNotFound(n.UUID)
		}
		return s.rereadTimes(tx, n)
	})
}

// SaveLockedNode is SaveNode for the holder of the node lock: the UPDATE
// matches only while host, in its registration epoch, still holds the
// reservation, so a conductor judged dead, whose locks were cleared and
// whose node another conductor took over, cannot overwrite the survivor's
// work, and neither can a worker of an earlier run of a restarted host. A lost lock is
// errs.NodeLocked (or errs.NodeNotFound when the node is gone) and writes
// nothing.
//
// from is the provision state the row holds ("" for NULL): only the lock
// holder moves it, so the holder knows it, and n's timestamps are set
// without reading the row back. n.UpdatedAt becomes the write's time, as
// does n.ProvisionUpdatedAt when the state moved; otherwise the latter
// keeps the value n was read with, which a heartbeat may since have moved
// on in the row.
func (s *Store) SaveLockedNode(ctx context.Context, n *model.Node, host string, epoch int64, from string) error {
	ts, err := s.saveFenced(ctx, n, host, epoch, false)
	if err != nil {
		return err
	}
	n.UpdatedAt = &ts
	if to := n.ProvisionState; (to == nil) != (from == "") || (to != nil && *to != from) {
		n.ProvisionUpdatedAt = &ts
	}
	return nil
}

// SaveAndReleaseNode is SaveLockedNode that also drops host's lock, in the
// same UPDATE: the end of a conductor's work on a node costs one statement.
// The row is no longer the caller's afterwards, so n's timestamps are not
// refreshed from it.
func (s *Store) SaveAndReleaseNode(ctx context.Context, n *model.Node, host string, epoch int64) error {
	_, err := s.saveFenced(ctx, n, host, epoch, true)
	return err
}

func (s *Store) saveFenced(ctx context.Context, n *model.Node, host string, epoch int64, release bool) (time.Time, error) {
	if host == "" {
		return time.Time{}, fmt.Errorf("save node %s: empty host", n.UUID)
	}
	ts, stmt, args := s.nodeUpdate(ctx, n, host, epoch, release)
	res := s.db.WithContext(ctx).Exec(stmt, args...)
	if res.Error != nil {
		return time.Time{}, fmt.Errorf("save node %s: %w", n.UUID, nodeWriteError(res.Error, identOf(n)))
	}
	if res.RowsAffected == 1 {
		return ts, nil
	}
	holder, err := s.reservationOf(ctx, n.UUID)
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("save node %s: %w", n.UUID, err)
	case holder == nil:
		return time.Time{}, errs.NodeLocked(n.UUID, "None")
	default:
		// Held by host in another epoch is still not ours.
		return time.Time{}, errs.NodeLocked(n.UUID, *holder)
	}
}

// nodeUpdate is the UPDATE writing n's saved columns at time ts, fenced by
// the reservation of host in epoch when host is set, and releasing it when
// release is set.
func (s *Store) nodeUpdate(ctx context.Context, n *model.Node, host string, epoch int64, release bool) (ts time.Time, stmt string, args []any) {
	ts = now()
	n.LastError = clipText(n.LastError)
	// MySQL evaluates SET assignments left to right, each seeing the
	// previous ones: the CASE must come before provision_state is assigned.
	stateUnchanged := "provision_state <=> ?"
	if s.dialect == DialectSQLite {
		stateUnchanged = "provision_state IS ?"
	}
	sets := []string{"provision_updated_at = CASE WHEN " + stateUnchanged + " THEN provision_updated_at ELSE ? END", "updated_at = ?"}
	args = []any{n.ProvisionState, ts, ts}
	for _, c := range nodeSaveColumns {
		sets = append(sets, s.quote(c)+" = ?")
	}
	args = append(args, nodeColumns.values(ctx, n, nodeSaveColumns)...)
	if release {
		sets = append(sets, "reservation = NULL", "reservation_epoch = NULL")
	}
	stmt = "UPDATE nodes SET " + strings.Join(sets, ", ") + " WHERE id = ?"
	args = append(args, n.ID)
	if host != "" {
		stmt += " AND reservation = ? AND reservation_epoch = ?"
		args = append(args, host, epoch)
	}
	return ts, stmt, args
}

// rereadTimes refreshes n's timestamps from the row.
func (s *Store) rereadTimes(conn *gorm.DB, n *model.Node) error {
	var stored model.Node
	if err := conn.Select("updated_at", "provision_updated_at").Where("id = ?", n.ID).Take(&stored).Error; err != nil {
		return fmt.Errorf("save node %s: re-read: %w", n.UUID, err)
	}
	n.UpdatedAt, n.ProvisionUpdatedAt = stored.UpdatedAt, stored.ProvisionUpdatedAt
	return nil
}

func (s *Store) quote(name string) string {
	var b strings.Builder
	s.db.Dialector.QuoteTo(&b, name)
	return b.String()
}

// DestroyNode deletes a node and everything hanging off it, in one
// transaction.
func (s *Store) DestroyNode(ctx context.Context, uuid string) error {
	return s.transaction(ctx, func(tx *gorm.DB) error {
		var n model.Node
		if err := tx.Select("id").Where("uuid = ?", uuid).Take(&n).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return errs.NodeNotFound(uuid)
			}
			return fmt.Errorf("destroy node %s: %w", uuid, err)
		}
		// Ports before port groups: a port refers to its group.
		for _, child := range []string{"ports", "portgroups", "volume_connectors", "volume_targets", "node_configdrives", "allocations"} {
			if err := tx.Exec("DELETE FROM "+child+" WHERE node_id = ?", n.ID).Error; err != nil {
				return fmt.Errorf("destroy node %s: delete %s: %w", uuid, strings.ReplaceAll(child, "_", " "), err)
			}
		}
		res := tx.Where("id = ?", n.ID).Delete(&model.Node{})
		if res.Error != nil {
			return fmt.Errorf("destroy node %s: %w", uuid, res.Error)
		}
		if res.RowsAffected == 0 {
			return errs.NodeNotFound(uuid)
		}
		return nil
	})
}

// ReserveNode takes the node lock for host in its registration epoch with
// one compare-and-set UPDATE and returns the node as locked. A node locked
// by anyone (host included) is errs.NodeLocked; retrying is the caller's
// business.
func (s *Store) ReserveNode(ctx context.Context, uuid, host string, epoch int64) (*model.Node, error) {
	if host == "" {
		return nil, fmt.Errorf("reserve node %s: empty host", uuid)
	}
	res := s.db.WithContext(ctx).Exec("UPDATE nodes SET reservation = ?, reservation_epoch = ? WHERE uuid = ? AND reservation IS NULL",
		host, epoch, uuid)
	if res.Error != nil {
		return nil, fmt.Errorf("reserve node %s: %w", uuid, res.Error)
	}
	if res.RowsAffected == 1 {
		return s.GetNode(ctx, uuid)
	}
	holder, err := s.reservationOf(ctx, uuid)
	if err != nil {
		return nil, fmt.Errorf("reserve node %s: %w", uuid, err)
	}
	if holder == nil {
		// Released between the UPDATE and this read; upstream reports the
		// same NodeLocked, with no holder, and the caller retries.
		return nil, errs.NodeLocked(uuid, "None")
	}
	return nil, errs.NodeLocked(uuid, *holder)
}

// reservationOf reads a node's lock holder; errs.NodeNotFound when the
// node does not exist.
func (s *Store) reservationOf(ctx context.Context, uuid string) (*string, error) {
	var n model.Node
	if err := s.db.WithContext(ctx).Select("reservation").Where("uuid = ?", uuid).Take(&n).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, errs.NodeNotFound(uuid)
		}
		return nil, err
	}
	return n.Reservation, nil
}

// ReleaseNode drops host's lock on the node, taken in epoch (0: in any
// epoch, to clear the locks of a conductor judged dead). A node that is
// gone is not an error; one that is not locked is errs.KindInvalidState,
// one locked by another host, or by host in another epoch, errs.NodeLocked.
func (s *Store) ReleaseNode(ctx context.Context, uuid, host string, epoch int64) error {
	stmt, args := "UPDATE nodes SET reservation = NULL, reservation_epoch = NULL WHERE uuid = ? AND reservation = ?", []any{uuid, host}
	if epoch != 0 {
		stmt += " AND reservation_epoch = ?"
		args = append(args, epoch)
	}
	res := s.db.WithContext(ctx).Exec(stmt, args...)
	if res.Error != nil {
		return fmt.Errorf("release node %s: %w", uuid, res.Error)
	}
	if res.RowsAffected == 1 {
		return nil
	}
	holder, err := s.reservationOf(ctx, uuid)
	switch {
	case errs.Is(err, errs.KindNodeNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("release node %s: %w", uuid, err)
	case holder == nil:
		return errs.New(errs.KindInvalidState, "Node %s found not to be locked on release", uuid)
	default:
		return errs.NodeLocked(uuid, *holder)
	}
}

// ReleaseReservationsOf clears every lock held by host (a conductor
// starting after a crash, or stopping) and returns how many it cleared.
func (s *Store) ReleaseReservationsOf(ctx context.Context, host string) (int64, error) {
	res := s.db.WithContext(ctx).Exec("UPDATE nodes SET reservation = NULL, reservation_epoch = NULL WHERE reservation = ?", host)
	if res.Error != nil {
		return 0, fmt.Errorf("release reservations of %s: %w", host, res.Error)
	}
	return res.RowsAffected, nil
}

// TouchProvisioning sets provision_updated_at to now: a heartbeat from the
// ramdisk resets the node's wait timeout.
func (s *Store) TouchProvisioning(ctx context.Context, uuid string) error {
	res := s.db.WithContext(ctx).Exec("UPDATE nodes SET provision_updated_at = ? WHERE uuid = ?", now(), uuid)
	if res.Error != nil {
		return fmt.Errorf("touch provisioning of %s: %w", uuid, res.Error)
	}
	if res.RowsAffected == 0 {
		return errs.NodeNotFound(uuid)
	}
	return nil
}

// clipText keeps the head of a last_error longer than its TEXT column,
// cut on a character boundary. The message is the conductor's, but it
// quotes what a driver, an agent or a ramdisk said, of any length: refusing
// it would lose the state change it records, and MySQL would either refuse
// the whole write or cut the text itself.
func clipText(s *string) *string {
	if s == nil || len(*s) <= model.MaxText {
		return s
	}
	cut := model.MaxText
	for cut > 0 && !utf8.RuneStart((*s)[cut]) {
		cut--
	}
	clipped := (*s)[:cut]
	return &clipped
}

// projectNodes matches the nodes project owns or leases.
func projectNodes(project string) clause.Expression {
	col := func(name string) clause.Column { return clause.Column{Table: "nodes", Name: name} }
	return clause.Or(clause.Eq{Column: col("owner"), Value: project}, clause.Eq{Column: col("lessee"), Value: project})
}
