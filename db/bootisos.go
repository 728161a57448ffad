package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"gorm.io/gorm"
)

// errBootISOGone ends an attempt whose row a release deleted between the
// insert and the lock; the next attempt inserts it again.
var errBootISOGone = errors.New("boot ISO row deleted meanwhile")

// AcquireBootISO counts one more node booting the shared boot ISO name
// and returns the new count. When nobody used it, publish runs first,
// with the row locked: a conductor acquiring the same ISO meanwhile waits
// and then reuses it, and a failed publish counts nothing (the error is
// returned and no row is left).
func (s *Store) AcquireBootISO(ctx context.Context, name string, publish func(context.Context) error) (int, error) {
	for range 3 {
		if err := s.ensureBootISO(ctx, name); err != nil {
			return 0, err
		}
		var count int
		var pubErr error
		err := s.transaction(ctx, func(tx *gorm.DB) error {
			pubErr = nil
			c, err := s.lockBootISO(tx, name)
			if err != nil {
				return err
			}
			if c == 0 {
				if pubErr = publish(ctx); pubErr != nil {
					return tx.Exec("DELETE FROM boot_isos WHERE name = ? AND usage_count = 0", name).Error
				}
			}
			count = c + 1
			return tx.Exec("UPDATE boot_isos SET usage_count = ?, updated_at = ? WHERE name = ?", count, now(), name).Error
		})
		if errors.Is(err, errBootISOGone) {
			continue
		}
		if err == nil && pubErr != nil {
			// The transaction committed the removal of the unused row.
			return 0, pubErr
		}
		if err != nil {
			return 0, fmt.Errorf("acquire boot ISO %s: %w", name, err)
		}
		return count, nil
	}
	return 0, fmt.Errorf("acquire boot ISO %s: %w", name, errBootISOGone)
}

// ReleaseBootISO counts one node fewer booting the shared boot ISO name
// and returns the new count. At zero, remove runs with the row locked
// (so nobody acquires the ISO while it is being deleted) and the row
// goes; if remove fails nothing changes and its error is returned, so a
// retried tear down deletes it. An ISO nobody counts is not an error.
func (s *Store) ReleaseBootISO(ctx context.Context, name string, remove func(context.Context) error) (int, error) {
	var count int
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		c, err := s.lockBootISO(tx, name)
		if errors.Is(err, errBootISOGone) {
			count = 0
			return nil
		}
		if err != nil {
			return err
		}
		count = max(c-1, 0)
		if count > 0 {
			return tx.Exec("UPDATE boot_isos SET usage_count = ?, updated_at = ? WHERE name = ?", count, now(), name).Error
		}
		if err := remove(ctx); err != nil {
			return err
		}
		return tx.Exec("DELETE FROM boot_isos WHERE name = ?", name).Error
	})
	if err != nil {
		return 0, fmt.Errorf("release boot ISO %s: %w", name, err)
	}
	return count, nil
}

// BootISOUsage is how many nodes boot the shared boot ISO name (0 for an
// ISO nobody counts).
func (s *Store) BootISOUsage(ctx context.Context, name string) (int, error) {
	var count int
	err := s.db.WithContext(ctx).Raw("SELECT usage_count FROM boot_isos WHERE name = ?", name).Row().Scan(&count)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read usage of boot ISO %s: %w", name, err)
	}
	return count, nil
}

// ensureBootISO inserts name's row with no users unless it exists, so
// that the transaction can lock an existing row: locking a missing one
// takes a gap lock in InnoDB, where two inserters deadlock.
func (s *Store) ensureBootISO(ctx context.Context, name string) error {
	q := "INSERT INTO boot_isos (name, usage_count, created_at, updated_at) VALUES (?, 0, ?, ?) ON CONFLICT (name) DO NOTHING"
	if s.dialect == DialectMySQL {
		q = "INSERT INTO boot_isos (name, usage_count, created_at, updated_at) VALUES (?, 0, ?, ?) ON DUPLICATE KEY UPDATE name = name"
	}
	ts := now()
	if err := s.db.WithContext(ctx).Exec(q, name, ts, ts).Error; err != nil {
		return fmt.Errorf("acquire boot ISO %s: %w", name, err)
	}
	return nil
}

// lockBootISO reads name's count with the row locked until the end of tx
// (SQLite's immediate transactions lock the whole database).
func (s *Store) lockBootISO(tx *gorm.DB, name string) (int, error) {
	q := "SELECT usage_count FROM boot_isos WHERE name = ?"
	if s.dialect == DialectMySQL {
		q += " FOR UPDATE"
	}
	var count int
	err := tx.Raw(q, name).Row().Scan(&count)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, errBootISOGone
	}
	return count, err
}
