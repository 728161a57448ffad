package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

// configDriveChunk is the size of one stored piece of a config drive. The
// MySQL driver sends a piece escaped inside its INSERT, up to twice its
// size, which must stay well below max_allowed_packet (16 MiB by default).
const configDriveChunk = 1 << 20

// SaveConfigDrive stores the config drive read from r (the configdrive
// string exactly as the client gave it) for the node with id nodeID, and
// returns the drive's id. Either all of it is stored or nothing: the
// pieces go in one transaction. Memory stays at one piece whatever the
// drive's size.
func (s *Store) SaveConfigDrive(ctx context.Context, nodeID int64, r io.Reader) (string, error) {
	id := uuid.NewString()
	buf := make([]byte, configDriveChunk)
	// Not s.transaction: a retry could not read r again.
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ts := now()
		for seq := 0; ; seq++ {
			n, err := io.ReadFull(r, buf)
			if n > 0 || seq == 0 {
				if ierr := tx.Exec("INSERT INTO node_configdrives (node_id, drive_id, seq, data, created_at) VALUES (?, ?, ?, ?, ?)",
					nodeID, id, seq, buf[:n], ts).Error; ierr != nil {
					return ierr
				}
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			if err != nil {
				return err
			}
		}
	})
	if err != nil {
		return "", fmt.Errorf("store config drive of node %d: %w", nodeID, err)
	}
	return id, nil
}

// ConfigDrive reads back the config drive driveID of the node with id
// nodeID; a drive of another node is not found.
func (s *Store) ConfigDrive(ctx context.Context, nodeID int64, driveID string) (string, error) {
	db := s.db.WithContext(ctx)
	var size, pieces int64
	if err := db.Raw("SELECT COALESCE(SUM(LENGTH(data)), 0), COUNT(*) FROM node_configdrives WHERE node_id = ? AND drive_id = ?",
		nodeID, driveID).Row().Scan(&size, &pieces); err != nil {
		return "", fmt.Errorf("read config drive %s of node %d: %w", driveID, nodeID, err)
	}
	if pieces == 0 {
		return "", fmt.Errorf("read config drive %s of node %d: not found", driveID, nodeID)
	}
	rows, err := db.Raw("SELECT data FROM node_configdrives WHERE node_id = ? AND drive_id = ? ORDER BY seq", nodeID, driveID).Rows()
	if err != nil {
		return "", fmt.Errorf("read config drive %s of node %d: %w", driveID, nodeID, err)
	}
	defer rows.Close()
	var b strings.Builder
	b.Grow(int(size))
	for rows.Next() {
		var piece sql.RawBytes
		if err := rows.Scan(&piece); err != nil {
			return "", fmt.Errorf("read config drive %s of node %d: %w", driveID, nodeID, err)
		}
		b.Write(piece)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("read config drive %s of node %d: %w", driveID, nodeID, err)
	}
	return b.String(), nil
}

// DeleteConfigDrive removes the config drive driveID, if it exists.
func (s *Store) DeleteConfigDrive(ctx context.Context, driveID string) error {
	if err := s.db.WithContext(ctx).Exec("DELETE FROM node_configdrives WHERE drive_id = ?", driveID).Error; err != nil {
		return fmt.Errorf("delete config drive %s: %w", driveID, err)
	}
	return nil
}

// DeleteNodeConfigDrives removes every config drive of the node with id
// nodeID except keep ("" keeps none).
func (s *Store) DeleteNodeConfigDrives(ctx context.Context, nodeID int64, keep string) error {
	if err := s.db.WithContext(ctx).Exec("DELETE FROM node_configdrives WHERE node_id = ? AND drive_id <> ?", nodeID, keep).Error; err != nil {
		return fmt.Errorf("delete config drives of node %d: %w", nodeID, err)
	}
	return nil
}
