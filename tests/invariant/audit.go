package invariant

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The audit trigger is the per-node action record the API does not give:
// every UPDATE that moves a node's lock or its provision state leaves a row
// naming the lock holder before and after, and the registration epoch and
// last heartbeat the holder (the new one when a lock is taken) had at that
// instant. Writes go through compare-and-set UPDATEs,
// so a row here is a write the database accepted; the checker looks for
// accepted writes that the fencing should have refused.
var auditDDL = []string{
	`CREATE TABLE IF NOT EXISTS invariant_node_audit (
		id BIGINT AUTO_INCREMENT PRIMARY KEY,
		node_uuid VARCHAR(36) NOT NULL,
		old_reservation VARCHAR(255) NULL,
		new_reservation VARCHAR(255) NULL,
		old_epoch BIGINT NULL,
		new_epoch BIGINT NULL,
		old_state VARCHAR(64) NULL,
		new_state VARCHAR(64) NULL,
		old_target VARCHAR(64) NULL,
		new_target VARCHAR(64) NULL,
		holder_epoch BIGINT NULL,
		holder_beat DATETIME(6) NULL,
		written_at DATETIME(6) NOT NULL
	)`,
	`DROP TRIGGER IF EXISTS invariant_node_audit_update`,
	`CREATE TRIGGER invariant_node_audit_update AFTER UPDATE ON nodes FOR EACH ROW
	 IF NOT (OLD.reservation <=> NEW.reservation AND OLD.reservation_epoch <=> NEW.reservation_epoch
	         AND OLD.provision_state <=> NEW.provision_state
	         AND OLD.target_provision_state <=> NEW.target_provision_state) THEN
		INSERT INTO invariant_node_audit (node_uuid, old_reservation, new_reservation, old_epoch, new_epoch,
			old_state, new_state, old_target, new_target, holder_epoch, holder_beat, written_at)
		VALUES (NEW.uuid, OLD.reservation, NEW.reservation, OLD.reservation_epoch, NEW.reservation_epoch,
			OLD.provision_state, NEW.provision_state, OLD.target_provision_state, NEW.target_provision_state,
			(SELECT epoch FROM conductors WHERE hostname = COALESCE(NEW.reservation, OLD.reservation)),
			(SELECT updated_at FROM conductors WHERE hostname = COALESCE(NEW.reservation, OLD.reservation)),
			UTC_TIMESTAMP(6));
	 END IF`,
}

func installAudit(ctx context.Context, db *sql.DB) error {
	for _, stmt := range auditDDL {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("install node audit: %w", err)
		}
	}
	return nil
}

// checkAudit reads the audit rows written since the last poll.
func (c *Checker) checkAudit(ctx context.Context) error {
	rows, err := c.db.QueryContext(ctx, `SELECT id, node_uuid, old_reservation, new_reservation, old_epoch, new_epoch,
		old_state, new_state, old_target, new_target, holder_epoch, holder_beat, written_at FROM invariant_node_audit WHERE id > ? ORDER BY id`, c.lastAudit)
	if err != nil {
		return fmt.Errorf("read node audit: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id                              int64
			node                            string
			oldRes, newRes                  sql.NullString
			oldEpoch, newEpoch, holderEpoch sql.NullInt64
			oldState, newState              sql.NullString
			oldTarget, newTarget            sql.NullString
			holderBeat                      sql.NullTime
			at                              time.Time
		)
		if err := rows.Scan(&id, &node, &oldRes, &newRes, &oldEpoch, &newEpoch, &oldState, &newState,
			&oldTarget, &newTarget, &holderEpoch, &holderBeat, &at); err != nil {
			return fmt.Errorf("read node audit: %w", err)
		}
		c.lastAudit = id
		moved := oldState != newState || oldTarget != newTarget
		switch {
		case oldRes.Valid && newRes.Valid && oldRes.String != newRes.String:
			c.report(SharedNode, node, fmt.Sprintf("lock passed from %s to %s without a release", oldRes.String, newRes.String))
		case oldRes.Valid && newRes.Valid && oldEpoch.Valid && newEpoch.Valid && oldEpoch.Int64 != newEpoch.Int64:
			c.report(SharedNode, node, fmt.Sprintf("lock of %s passed from epoch %d to %d without a release",
				oldRes.String, oldEpoch.Int64, newEpoch.Int64))
		case moved && !oldRes.Valid:
			c.report(Unlocked, node, fmt.Sprintf("%s -> %s (target %s -> %s)", oldState.String, newState.String,
				oldTarget.String, newTarget.String))
		case !oldRes.Valid && newRes.Valid && newEpoch.Valid && holderEpoch.Valid && newEpoch.Int64 < holderEpoch.Int64:
			c.report(StaleEpoch, node, fmt.Sprintf("%s locked it in epoch %d while registered in epoch %d",
				newRes.String, newEpoch.Int64, holderEpoch.Int64))
		case !oldRes.Valid && newRes.Valid && holderBeat.Valid && at.Sub(holderBeat.Time) > c.bounds.HeartbeatTimeout:
			c.report(LapsedLock, node, fmt.Sprintf("%s locked it %s after its last heartbeat",
				newRes.String, at.Sub(holderBeat.Time).Round(time.Millisecond)))
		}
	}
	return rows.Err()
}
