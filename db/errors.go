package db

import (
	"errors"
	"strings"

	gosqlite "github.com/glebarez/go-sqlite"
	mysqldriver "github.com/go-sql-driver/mysql"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// Unique indexes, named as in the schema. SQLite reports the columns, not
// the index name, so sqliteUniqueColumns maps them back.
const (
	uniqNodeUUID         = "uniq_nodes_uuid"
	uniqNodeName         = "uniq_nodes_name"
	uniqNodeInstanceUUID = "uniq_nodes_instance_uuid"
	uniqPortUUID         = "uniq_ports_uuid"
	uniqPortAddress      = "uniq_ports_address"

	uniqVolumeConnectorUUID     = "uniq_volume_connectors_uuid"
	uniqVolumeConnectorTypeID   = "uniq_volume_connectors_type_connector_id"
	uniqVolumeTargetUUID        = "uniq_volume_targets_uuid"
	uniqVolumeTargetNodeBootIdx = "uniq_volume_targets_node_id_boot_index"

	uniqChassisUUID      = "uniq_chassis_uuid"
	uniqPortgroupUUID    = "uniq_portgroups_uuid"
	uniqPortgroupName    = "uniq_portgroups_name"
	uniqPortgroupAddress = "uniq_portgroups_address"

	uniqAllocationUUID = "uniq_allocations_uuid"
	uniqAllocationName = "uniq_allocations_name"
)

var sqliteUniqueColumns = map[string]string{
	"nodes.uuid":          uniqNodeUUID,
	"nodes.name":          uniqNodeName,
	"nodes.instance_uuid": uniqNodeInstanceUUID,
	"ports.uuid":          uniqPortUUID,
	"ports.address":       uniqPortAddress,

	"volume_connectors.uuid":                                 uniqVolumeConnectorUUID,
	"volume_connectors.type, volume_connectors.connector_id": uniqVolumeConnectorTypeID,
	"volume_targets.uuid":                                    uniqVolumeTargetUUID,
	"volume_targets.node_id, volume_targets.boot_index":      uniqVolumeTargetNodeBootIdx,

	"chassis.uuid":       uniqChassisUUID,
	"portgroups.uuid":    uniqPortgroupUUID,
	"portgroups.name":    uniqPortgroupName,
	"portgroups.address": uniqPortgroupAddress,

	"allocations.uuid": uniqAllocationUUID,
	"allocations.name": uniqAllocationName,
}

// Driver error codes.
const (
	mysqlDuplicateEntry       = 1062
	mysqlDeadlock             = 1213
	mysqlNoReferencedRow      = 1452
	mysqlNoReferencedRowOld   = 1216
	mysqlRowIsReferenced      = 1451
	mysqlDuplicateColumn      = 1060
	mysqlDuplicateKeyName     = 1061
	mysqlDuplicateForeignKey  = 1826
	sqliteConstraintUnique    = 2067 // SQLITE_CONSTRAINT_UNIQUE
	sqliteConstraintForeign   = 787  // SQLITE_CONSTRAINT_FOREIGNKEY
	sqliteUniqueMessagePrefix = "UNIQUE constraint failed: "
)

// uniqueViolation names the unique index err violated, if it is a
// duplicate-key error. The database, not a prior SELECT, is the judge:
// a check-then-insert would race with a concurrent writer.
func uniqueViolation(err error) (string, bool) {
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) && me.Number == mysqlDuplicateEntry {
		// "Duplicate entry 'x' for key 'uniq_nodes_name'" (MariaDB) or
		// "... for key 'nodes.uniq_nodes_name'" (MySQL 8).
		msg := me.Message
		i := strings.LastIndex(msg, " for key '")
		if i < 0 {
			return "", false
		}
		key := strings.TrimSuffix(msg[i+len(" for key '"):], "'")
		if dot := strings.LastIndexByte(key, '.'); dot >= 0 {
			key = key[dot+1:]
		}
		return key, true
	}
	var se *gosqlite.Error
	if errors.As(err, &se) && se.Code() == sqliteConstraintUnique {
		// "constraint failed: UNIQUE constraint failed: nodes.name (2067)"
		msg := se.Error()
		i := strings.Index(msg, sqliteUniqueMessagePrefix)
		if i < 0 {
			return "", false
		}
		cols := msg[i+len(sqliteUniqueMessagePrefix):]
		if j := strings.Index(cols, " ("); j >= 0 {
			cols = cols[:j]
		}
		key, ok := sqliteUniqueColumns[cols]
		return key, ok
	}
	return "", false
}

// foreignKeyViolation reports an insert or update that references a
// missing parent row.
func foreignKeyViolation(err error) bool {
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) {
		return me.Number == mysqlNoReferencedRow || me.Number == mysqlNoReferencedRowOld
	}
	var se *gosqlite.Error
	return errors.As(err, &se) && se.Code() == sqliteConstraintForeign
}

// nodeWriteError turns a node INSERT/UPDATE failure into the API's 409s.
func nodeWriteError(err error, n nodeIdent) error {
	key, ok := uniqueViolation(err)
	if !ok {
		return err
	}
	switch key {
	case uniqNodeUUID:
		return errs.New(errs.KindAlreadyExists, "A node with UUID %s already exists.", n.uuid)
	case uniqNodeName:
		return errs.New(errs.KindDuplicateName, "A node with name %s already exists.", n.name)
	case uniqNodeInstanceUUID:
		return errs.New(errs.KindConflict, "Instance %s is already associated with a node.", n.instanceUUID)
	}
	return err
}

type nodeIdent struct{ uuid, name, instanceUUID string }

// portWriteError turns a port INSERT/UPDATE failure into the API's 409s
// (and the owner vanishing underneath into NodeNotFound).
func portWriteError(err error, uuid, address string, nodeID int64) error {
	if foreignKeyViolation(err) {
		return errs.New(errs.KindNodeNotFound, "Node %d could not be found.", nodeID)
	}
	key, ok := uniqueViolation(err)
	if !ok {
		return err
	}
	switch key {
	case uniqPortUUID:
		return errs.New(errs.KindAlreadyExists, "A port with UUID %s already exists.", uuid)
	case uniqPortAddress:
		return errs.New(errs.KindAlreadyExists, "A port with MAC address %s already exists.", address)
	}
	return err
}

// connectorDuplicate is the 409 for a connector's unique key.
func connectorDuplicate(key string, c *model.VolumeConnector) error {
	switch key {
	case uniqVolumeConnectorUUID:
		return errs.New(errs.KindAlreadyExists, "A volume connector with UUID %s already exists.", c.UUID)
	case uniqVolumeConnectorTypeID:
		return errs.New(errs.KindAlreadyExists, "A volume connector with type %s and connector ID %s already exists.", c.Type, c.ConnectorID)
	}
	return nil
}

// targetDuplicate is the 409 for a target's unique key.
func targetDuplicate(key string, t *model.VolumeTarget) error {
	switch key {
	case uniqVolumeTargetUUID:
		return errs.New(errs.KindAlreadyExists, "A volume target with UUID %s already exists.", t.UUID)
	case uniqVolumeTargetNodeBootIdx:
		return errs.New(errs.KindAlreadyExists, "A volume target with boot index '%d' for the same node already exists.", t.BootIndex)
	}
	return nil
}

// ownerNotFound names the missing node by the uuid the caller knew it by,
// or by its id.
func ownerNotFound(nodeUUID string, nodeID int64) error {
	if nodeUUID != "" {
		return errs.NodeNotFound(nodeUUID)
	}
	return errs.New(errs.KindNodeNotFound, "Node %d could not be found.", nodeID)
}

// rowReferenced reports a DELETE refused because child rows still refer
// to the row.
func rowReferenced(err error) bool {
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) {
		return me.Number == mysqlRowIsReferenced
	}
	var se *gosqlite.Error
	return errors.As(err, &se) && se.Code() == sqliteConstraintForeign
}

// ddlAlreadyApplied reports a MySQL ALTER TABLE that failed because what
// it adds is there already: a migration step interrupted after that
// statement (MySQL commits each DDL statement) is being run again.
func ddlAlreadyApplied(err error) bool {
	var me *mysqldriver.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case mysqlDuplicateColumn, mysqlDuplicateKeyName, mysqlDuplicateForeignKey:
		return true
	}
	return false
}

// deadlock reports an InnoDB deadlock: the transaction was rolled back and
// may simply be run again.
func deadlock(err error) bool {
	var me *mysqldriver.MySQLError
	return errors.As(err, &me) && me.Number == mysqlDeadlock
}
