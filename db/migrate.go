package db

import (
	"context"
	"database/sql"
	"fmt"

	"gorm.io/gorm"
)

// migration is one released schema step. Its statements are frozen SQL,
// written out per dialect, so that a step never changes meaning when the
// model structs evolve: a database at version N has the same schema
// whichever binary brought it there. Never edit a released step; add one.
type migration struct {
	version int
	name    string
	mysql   []string
	sqlite  []string
}

var migrations = []migration{
	{
		version: 1,
		name:    "nodes, ports, conductors, conductor hardware interfaces",
		mysql: []string{
			`CREATE TABLE IF NOT EXISTS nodes (
				id BIGINT NOT NULL AUTO_INCREMENT,
				uuid VARCHAR(36) NOT NULL,
				name VARCHAR(255) NULL,
				driver VARCHAR(255) NOT NULL,
				driver_info MEDIUMTEXT NULL,
				driver_internal_info MEDIUMTEXT NULL,
				properties MEDIUMTEXT NULL,
				instance_info LONGTEXT NULL,
				instance_uuid VARCHAR(36) NULL,
				chassis_uuid VARCHAR(36) NULL,
				extra MEDIUMTEXT NULL,
				power_state VARCHAR(15) NULL,
				target_power_state VARCHAR(15) NULL,
				provision_state VARCHAR(15) NULL,
				target_provision_state VARCHAR(15) NULL,
				provision_updated_at DATETIME(6) NULL,
				maintenance BOOLEAN NOT NULL DEFAULT FALSE,
				maintenance_reason TEXT NULL,
				fault VARCHAR(255) NULL,
				last_error TEXT NULL,
				reservation VARCHAR(255) NULL,
				conductor_affinity BIGINT NULL,
				conductor_group VARCHAR(255) NOT NULL DEFAULT '',
				console_enabled BOOLEAN NOT NULL DEFAULT FALSE,
				clean_step MEDIUMTEXT NULL,
				deploy_step MEDIUMTEXT NULL,
				raid_config MEDIUMTEXT NULL,
				target_raid_config MEDIUMTEXT NULL,
				inspection_started_at DATETIME(6) NULL,
				inspection_finished_at DATETIME(6) NULL,
				resource_class VARCHAR(80) NULL,
				bios_interface VARCHAR(255) NULL,
				boot_interface VARCHAR(255) NULL,
				console_interface VARCHAR(255) NULL,
				deploy_interface VARCHAR(255) NULL,
				inspect_interface VARCHAR(255) NULL,
				management_interface VARCHAR(255) NULL,
				network_interface VARCHAR(255) NULL,
				power_interface VARCHAR(255) NULL,
				raid_interface VARCHAR(255) NULL,
				rescue_interface VARCHAR(255) NULL,
				storage_interface VARCHAR(255) NULL,
				vendor_interface VARCHAR(255) NULL,
				traits TEXT NULL,
				automated_clean BOOLEAN NULL,
				protected BOOLEAN NOT NULL DEFAULT FALSE,
				protected_reason TEXT NULL,
				owner VARCHAR(255) NULL,
				lessee VARCHAR(255) NULL,
				description TEXT NULL,
				retired BOOLEAN NOT NULL DEFAULT FALSE,
				retired_reason TEXT NULL,
				created_at DATETIME(6) NOT NULL,
				updated_at DATETIME(6) NULL,
				PRIMARY KEY (id),
				UNIQUE KEY uniq_nodes_uuid (uuid),
				UNIQUE KEY uniq_nodes_name (name),
				UNIQUE KEY uniq_nodes_instance_uuid (instance_uuid),
				KEY idx_nodes_reservation (reservation),
				KEY idx_nodes_provision_state (provision_state),
				KEY idx_nodes_driver (driver),
				KEY idx_nodes_conductor_group (conductor_group),
				KEY idx_nodes_timeouts (provision_state, reservation, maintenance, provision_updated_at)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`CREATE TABLE IF NOT EXISTS ports (
				id BIGINT NOT NULL AUTO_INCREMENT,
				uuid VARCHAR(36) NOT NULL,
				address VARCHAR(18) NOT NULL,
				node_id BIGINT NOT NULL,
				extra MEDIUMTEXT NULL,
				internal_info MEDIUMTEXT NULL,
				local_link_connection MEDIUMTEXT NULL,
				pxe_enabled BOOLEAN NOT NULL DEFAULT TRUE,
				physical_network VARCHAR(64) NULL,
				created_at DATETIME(6) NOT NULL,
				updated_at DATETIME(6) NULL,
				PRIMARY KEY (id),
				UNIQUE KEY uniq_ports_uuid (uuid),
				UNIQUE KEY uniq_ports_address (address),
				KEY idx_ports_node_id (node_id),
				CONSTRAINT fk_ports_node_id FOREIGN KEY (node_id) REFERENCES nodes (id)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`CREATE TABLE IF NOT EXISTS conductors (
				id BIGINT NOT NULL AUTO_INCREMENT,
				hostname VARCHAR(255) NOT NULL,
				online BOOLEAN NOT NULL DEFAULT TRUE,
				conductor_group VARCHAR(255) NOT NULL DEFAULT '',
				created_at DATETIME(6) NOT NULL,
				updated_at DATETIME(6) NULL,
				PRIMARY KEY (id),
				UNIQUE KEY uniq_conductors_hostname (hostname)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			"CREATE TABLE IF NOT EXISTS conductor_hardware_interfaces (" + `
				id BIGINT NOT NULL AUTO_INCREMENT,
				conductor_id BIGINT NOT NULL,
				hardware_type VARCHAR(255) NOT NULL,
				interface_type VARCHAR(16) NOT NULL,
				interface_name VARCHAR(255) NOT NULL,
				` + "`default`" + ` BOOLEAN NOT NULL DEFAULT FALSE,
				PRIMARY KEY (id),
				UNIQUE KEY uniq_chi (conductor_id, hardware_type, interface_type, interface_name),
				CONSTRAINT fk_chi_conductor_id FOREIGN KEY (conductor_id) REFERENCES conductors (id)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
		sqlite: []string{
			`CREATE TABLE nodes (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				uuid VARCHAR(36) NOT NULL,
				name VARCHAR(255) NULL,
				driver VARCHAR(255) NOT NULL,
				driver_info TEXT NULL,
				driver_internal_info TEXT NULL,
				properties TEXT NULL,
				instance_info TEXT NULL,
				instance_uuid VARCHAR(36) NULL,
				chassis_uuid VARCHAR(36) NULL,
				extra TEXT NULL,
				power_state VARCHAR(15) NULL,
				target_power_state VARCHAR(15) NULL,
				provision_state VARCHAR(15) NULL,
				target_provision_state VARCHAR(15) NULL,
				provision_updated_at DATETIME NULL,
				maintenance BOOLEAN NOT NULL DEFAULT 0,
				maintenance_reason TEXT NULL,
				fault VARCHAR(255) NULL,
				last_error TEXT NULL,
				reservation VARCHAR(255) NULL,
				conductor_affinity BIGINT NULL,
				conductor_group VARCHAR(255) NOT NULL DEFAULT '',
				console_enabled BOOLEAN NOT NULL DEFAULT 0,
				clean_step TEXT NULL,
				deploy_step TEXT NULL,
				raid_config TEXT NULL,
				target_raid_config TEXT NULL,
				inspection_started_at DATETIME NULL,
				inspection_finished_at DATETIME NULL,
				resource_class VARCHAR(80) NULL,
				bios_interface VARCHAR(255) NULL,
				boot_interface VARCHAR(255) NULL,
				console_interface VARCHAR(255) NULL,
				deploy_interface VARCHAR(255) NULL,
				inspect_interface VARCHAR(255) NULL,
				management_interface VARCHAR(255) NULL,
				network_interface VARCHAR(255) NULL,
				power_interface VARCHAR(255) NULL,
				raid_interface VARCHAR(255) NULL,
				rescue_interface VARCHAR(255) NULL,
				storage_interface VARCHAR(255) NULL,
				vendor_interface VARCHAR(255) NULL,
				traits TEXT NULL,
				automated_clean BOOLEAN NULL,
				protected BOOLEAN NOT NULL DEFAULT 0,
				protected_reason TEXT NULL,
				owner VARCHAR(255) NULL,
				lessee VARCHAR(255) NULL,
				description TEXT NULL,
				retired BOOLEAN NOT NULL DEFAULT 0,
				retired_reason TEXT NULL,
				created_at DATETIME NOT NULL,
				updated_at DATETIME NULL
			)`,
			`CREATE UNIQUE INDEX uniq_nodes_uuid ON nodes (uuid)`,
			`CREATE UNIQUE INDEX uniq_nodes_name ON nodes (name)`,
			`CREATE UNIQUE INDEX uniq_nodes_instance_uuid ON nodes (instance_uuid)`,
			`CREATE INDEX idx_nodes_reservation ON nodes (reservation)`,
			`CREATE INDEX idx_nodes_provision_state ON nodes (provision_state)`,
			`CREATE INDEX idx_nodes_driver ON nodes (driver)`,
			`CREATE INDEX idx_nodes_conductor_group ON nodes (conductor_group)`,
			`CREATE INDEX idx_nodes_timeouts ON nodes (provision_state, reservation, maintenance, provision_updated_at)`,
			`CREATE TABLE ports (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				uuid VARCHAR(36) NOT NULL,
				address VARCHAR(18) NOT NULL,
				node_id BIGINT NOT NULL REFERENCES nodes (id),
				extra TEXT NULL,
				internal_info TEXT NULL,
				local_link_connection TEXT NULL,
				pxe_enabled BOOLEAN NOT NULL DEFAULT 1,
				physical_network VARCHAR(64) NULL,
				created_at DATETIME NOT NULL,
				updated_at DATETIME NULL
			)`,
			`CREATE UNIQUE INDEX uniq_ports_uuid ON ports (uuid)`,
			`CREATE UNIQUE INDEX uniq_ports_address ON ports (address)`,
			`CREATE INDEX idx_ports_node_id ON ports (node_id)`,
			`CREATE TABLE conductors (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				hostname VARCHAR(255) NOT NULL,
				online BOOLEAN NOT NULL DEFAULT 1,
				conductor_group VARCHAR(255) NOT NULL DEFAULT '',
				created_at DATETIME NOT NULL,
				updated_at DATETIME NULL
			)`,
			`CREATE UNIQUE INDEX uniq_conductors_hostname ON conductors (hostname)`,
			`CREATE TABLE conductor_hardware_interfaces (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				conductor_id BIGINT NOT NULL REFERENCES conductors (id),
				hardware_type VARCHAR(255) NOT NULL,
				interface_type VARCHAR(16) NOT NULL,
				interface_name VARCHAR(255) NOT NULL,
				"default" BOOLEAN NOT NULL DEFAULT 0
			)`,
			`CREATE UNIQUE INDEX uniq_chi ON conductor_hardware_interfaces (conductor_id, hardware_type, interface_type, interface_name)`,
		},
	},
	{
		version: 2,
		name:    "volume connectors and volume targets",
		// A target's unique (node_id, boot_index) leads with node_id, so it
		// also serves "the targets of node N" and the foreign key: a
		// separate node_id index would only slow writes down.
		mysql: []string{
			`CREATE TABLE IF NOT EXISTS volume_connectors (
				id BIGINT NOT NULL AUTO_INCREMENT,
				uuid VARCHAR(36) NOT NULL,
				node_id BIGINT NOT NULL,
				type VARCHAR(32) NOT NULL,
				connector_id VARCHAR(255) NOT NULL,
				extra MEDIUMTEXT NULL,
				created_at DATETIME(6) NOT NULL,
				updated_at DATETIME(6) NULL,
				PRIMARY KEY (id),
				UNIQUE KEY uniq_volume_connectors_uuid (uuid),
				UNIQUE KEY uniq_volume_connectors_type_connector_id (type, connector_id),
				KEY idx_volume_connectors_node_id (node_id),
				CONSTRAINT fk_volume_connectors_node_id FOREIGN KEY (node_id) REFERENCES nodes (id)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`CREATE TABLE IF NOT EXISTS volume_targets (
				id BIGINT NOT NULL AUTO_INCREMENT,
				uuid VARCHAR(36) NOT NULL,
				node_id BIGINT NOT NULL,
				volume_type VARCHAR(64) NOT NULL,
				properties MEDIUMTEXT NULL,
				boot_index INT NOT NULL,
				volume_id VARCHAR(36) NOT NULL,
				extra MEDIUMTEXT NULL,
				created_at DATETIME(6) NOT NULL,
				updated_at DATETIME(6) NULL,
				PRIMARY KEY (id),
				UNIQUE KEY uniq_volume_targets_uuid (uuid),
				UNIQUE KEY uniq_volume_targets_node_id_boot_index (node_id, boot_index),
				CONSTRAINT fk_volume_targets_node_id FOREIGN KEY (node_id) REFERENCES nodes (id)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
		sqlite: []string{
			`CREATE TABLE volume_connectors (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				uuid VARCHAR(36) NOT NULL,
				node_id BIGINT NOT NULL REFERENCES nodes (id),
				type VARCHAR(32) NOT NULL,
				connector_id VARCHAR(255) NOT NULL,
				extra TEXT NULL,
				created_at DATETIME NOT NULL,
				updated_at DATETIME NULL
			)`,
			`CREATE UNIQUE INDEX uniq_volume_connectors_uuid ON volume_connectors (uuid)`,
			`CREATE UNIQUE INDEX uniq_volume_connectors_type_connector_id ON volume_connectors (type, connector_id)`,
			`CREATE INDEX idx_volume_connectors_node_id ON volume_connectors (node_id)`,
			`CREATE TABLE volume_targets (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				uuid VARCHAR(36) NOT NULL,
				node_id BIGINT NOT NULL REFERENCES nodes (id),
				volume_type VARCHAR(64) NOT NULL,
				properties TEXT NULL,
				boot_index INTEGER NOT NULL,
				volume_id VARCHAR(36) NOT NULL,
				extra TEXT NULL,
				created_at DATETIME NOT NULL,
				updated_at DATETIME NULL
			)`,
			`CREATE UNIQUE INDEX uniq_volume_targets_uuid ON volume_targets (uuid)`,
			`CREATE UNIQUE INDEX uniq_volume_targets_node_id_boot_index ON volume_targets (node_id, boot_index)`,
		},
	},
	{
		version: 3,
		name:    "chassis, port groups, ports.portgroup_id",
		// nodes.chassis_uuid stays the link to a chassis (the API speaks
		// uuids); its index serves "the nodes of chassis C" and the
		// not-empty check on chassis deletion.
		mysql: []string{
			`CREATE TABLE IF NOT EXISTS chassis (
				id BIGINT NOT NULL AUTO_INCREMENT,
				uuid VARCHAR(36) NOT NULL,
				description VARCHAR(255) NULL,
				extra MEDIUMTEXT NULL,
				created_at DATETIME(6) NOT NULL,
				updated_at DATETIME(6) NULL,
				PRIMARY KEY (id),
				UNIQUE KEY uniq_chassis_uuid (uuid)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`CREATE TABLE IF NOT EXISTS portgroups (
				id BIGINT NOT NULL AUTO_INCREMENT,
				uuid VARCHAR(36) NOT NULL,
				name VARCHAR(255) NULL,
				address VARCHAR(18) NULL,
				node_id BIGINT NOT NULL,
				extra MEDIUMTEXT NULL,
				internal_info MEDIUMTEXT NULL,
				standalone_ports_supported BOOLEAN NOT NULL DEFAULT TRUE,
				mode VARCHAR(255) NULL,
				properties MEDIUMTEXT NULL,
				created_at DATETIME(6) NOT NULL,
				updated_at DATETIME(6) NULL,
				PRIMARY KEY (id),
				UNIQUE KEY uniq_portgroups_uuid (uuid),
				UNIQUE KEY uniq_portgroups_name (name),
				UNIQUE KEY uniq_portgroups_address (address),
				KEY idx_portgroups_node_id (node_id),
				CONSTRAINT fk_portgroups_node_id FOREIGN KEY (node_id) REFERENCES nodes (id)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			// MySQL has no ADD COLUMN IF NOT EXISTS: one ALTER per table is
			// atomic, and a re-run after a crash skips it as already applied
			// (see ddlAlreadyApplied).
			`ALTER TABLE ports ADD COLUMN portgroup_id BIGINT NULL,
				ADD KEY idx_ports_portgroup_id (portgroup_id),
				ADD CONSTRAINT fk_ports_portgroup_id FOREIGN KEY (portgroup_id) REFERENCES portgroups (id)`,
			`ALTER TABLE nodes ADD KEY idx_nodes_chassis_uuid (chassis_uuid)`,
		},
		sqlite: []string{
			`CREATE TABLE chassis (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				uuid VARCHAR(36) NOT NULL,
				description VARCHAR(255) NULL,
				extra TEXT NULL,
				created_at DATETIME NOT NULL,
				updated_at DATETIME NULL
			)`,
			`CREATE UNIQUE INDEX uniq_chassis_uuid ON chassis (uuid)`,
			`CREATE TABLE portgroups (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				uuid VARCHAR(36) NOT NULL,
				name VARCHAR(255) NULL,
				address VARCHAR(18) NULL,
				node_id BIGINT NOT NULL REFERENCES nodes (id),
				extra TEXT NULL,
				internal_info TEXT NULL,
				standalone_ports_supported BOOLEAN NOT NULL DEFAULT 1,
				mode VARCHAR(255) NULL,
				properties TEXT NULL,
				created_at DATETIME NOT NULL,
				updated_at DATETIME NULL
			)`,
			`CREATE UNIQUE INDEX uniq_portgroups_uuid ON portgroups (uuid)`,
			`CREATE UNIQUE INDEX uniq_portgroups_name ON portgroups (name)`,
			`CREATE UNIQUE INDEX uniq_portgroups_address ON portgroups (address)`,
			`CREATE INDEX idx_portgroups_node_id ON portgroups (node_id)`,
			`ALTER TABLE ports ADD COLUMN portgroup_id BIGINT NULL REFERENCES portgroups (id)`,
			`CREATE INDEX idx_ports_portgroup_id ON ports (portgroup_id)`,
			`CREATE INDEX idx_nodes_chassis_uuid ON nodes (chassis_uuid)`,
		},
	},
	{
		// A config drive (up to 64 MiB) kept in instance_info made every
		// read of its node row carry it. It lives here instead, in chunks
		// well below MySQL's default 16 MiB max_allowed_packet; drive_id
		// tells a new upload from the one a running deploy reads.
		version: 4,
		name:    "node config drives",
		mysql: []string{
			`CREATE TABLE IF NOT EXISTS node_configdrives (
				node_id BIGINT NOT NULL,
				drive_id VARCHAR(36) NOT NULL,
				seq INT NOT NULL,
				data MEDIUMBLOB NOT NULL,
				created_at DATETIME(6) NOT NULL,
				PRIMARY KEY (node_id, drive_id, seq),
				KEY idx_node_configdrives_drive_id (drive_id),
				CONSTRAINT fk_node_configdrives_node_id FOREIGN KEY (node_id) REFERENCES nodes (id)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
		sqlite: []string{
			`CREATE TABLE node_configdrives (
				node_id BIGINT NOT NULL REFERENCES nodes (id),
				drive_id VARCHAR(36) NOT NULL,
				seq INTEGER NOT NULL,
				data BLOB NOT NULL,
				created_at DATETIME NOT NULL,
				PRIMARY KEY (node_id, drive_id, seq)
			)`,
			`CREATE INDEX idx_node_configdrives_drive_id ON node_configdrives (drive_id)`,
		},
	},
	{
		// Each registration of a hostname is a new epoch, and a node lock
		// records the epoch it was taken under: a worker left over from an
		// earlier run of a restarted conductor holds the hostname but not
		// the epoch, so its writes are refused.
		version: 5,
		name:    "conductor epochs fence node locks",
		mysql: []string{
			`ALTER TABLE conductors ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0`,
			`ALTER TABLE nodes ADD COLUMN reservation_epoch BIGINT NULL`,
		},
		sqlite: []string{
			`ALTER TABLE conductors ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0`,
			`ALTER TABLE nodes ADD COLUMN reservation_epoch BIGINT NULL`,
		},
	},
	{
		// A partition image's generated boot ISO is shared by every node
		// deploying the same image, kernel and ramdisk; its row counts
		// them, and its lock serialises conductors publishing and
		// deleting it.
		version: 6,
		name:    "shared boot ISOs",
		mysql: []string{
			`CREATE TABLE IF NOT EXISTS boot_isos (
				name VARCHAR(255) NOT NULL,
				usage_count INT NOT NULL DEFAULT 0,
				created_at DATETIME(6) NOT NULL,
				updated_at DATETIME(6) NOT NULL,
				PRIMARY KEY (name)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
		sqlite: []string{
			`CREATE TABLE boot_isos (
				name VARCHAR(255) NOT NULL PRIMARY KEY,
				usage_count INTEGER NOT NULL DEFAULT 0,
				created_at DATETIME NOT NULL,
				updated_at DATETIME NOT NULL
			)`,
		},
	},
	{
		// The node list's filters not indexed by version 1, so that a
		// filtered page reads its rows and not the table (docs/scale.md).
		version: 7,
		name:    "index the node list filters",
		mysql: []string{
			`ALTER TABLE nodes ADD KEY idx_nodes_resource_class (resource_class)`,
			`ALTER TABLE nodes ADD KEY idx_nodes_owner (owner)`,
			`ALTER TABLE nodes ADD KEY idx_nodes_lessee (lessee)`,
		},
		sqlite: []string{
			`CREATE INDEX idx_nodes_resource_class ON nodes (resource_class)`,
			`CREATE INDEX idx_nodes_owner ON nodes (owner)`,
			`CREATE INDEX idx_nodes_lessee ON nodes (lessee)`,
		},
	},
	{
		// The allocation API (1.52). A node reserved by an allocation
		// points at it; the allocation's node_id is the node it got.
		version: 8,
		name:    "allocations",
		mysql: []string{
			`CREATE TABLE IF NOT EXISTS allocations (
				id BIGINT NOT NULL AUTO_INCREMENT,
				uuid VARCHAR(36) NOT NULL,
				name VARCHAR(255) NULL,
				node_id BIGINT NULL,
				state VARCHAR(15) NOT NULL,
				last_error TEXT NULL,
				resource_class VARCHAR(80) NULL,
				traits TEXT NULL,
				candidate_nodes TEXT NULL,
				extra MEDIUMTEXT NULL,
				conductor_affinity BIGINT NULL,
				created_at DATETIME(6) NOT NULL,
				updated_at DATETIME(6) NULL,
				PRIMARY KEY (id),
				UNIQUE KEY uniq_allocations_uuid (uuid),
				UNIQUE KEY uniq_allocations_name (name),
				KEY idx_allocations_node_id (node_id),
				KEY idx_allocations_state (state),
				KEY idx_allocations_resource_class (resource_class),
				CONSTRAINT fk_allocations_node_id FOREIGN KEY (node_id) REFERENCES nodes (id)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`ALTER TABLE nodes ADD COLUMN allocation_id BIGINT NULL, ADD KEY idx_nodes_allocation_id (allocation_id)`,
		},
		sqlite: []string{
			`CREATE TABLE allocations (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				uuid VARCHAR(36) NOT NULL,
				name VARCHAR(255) NULL,
				node_id BIGINT NULL REFERENCES nodes (id),
				state VARCHAR(15) NOT NULL,
				last_error TEXT NULL,
				resource_class VARCHAR(80) NULL,
				traits TEXT NULL,
				candidate_nodes TEXT NULL,
				extra TEXT NULL,
				conductor_affinity BIGINT NULL,
				created_at DATETIME NOT NULL,
				updated_at DATETIME NULL
			)`,
			`CREATE UNIQUE INDEX uniq_allocations_uuid ON allocations (uuid)`,
			`CREATE UNIQUE INDEX uniq_allocations_name ON allocations (name)`,
			`CREATE INDEX idx_allocations_node_id ON allocations (node_id)`,
			`CREATE INDEX idx_allocations_state ON allocations (state)`,
			`CREATE INDEX idx_allocations_resource_class ON allocations (resource_class)`,
			`ALTER TABLE nodes ADD COLUMN allocation_id BIGINT NULL`,
			`CREATE INDEX idx_nodes_allocation_id ON nodes (allocation_id)`,
		},
	},
	{
		// Ports on Smart NICs (1.53).
		version: 9,
		name:    "port is_smartnic",
		mysql:   []string{`ALTER TABLE ports ADD COLUMN is_smartnic BOOLEAN NOT NULL DEFAULT FALSE`},
		sqlite:  []string{`ALTER TABLE ports ADD COLUMN is_smartnic BOOLEAN NOT NULL DEFAULT 0`},
	},
}

// LatestSchemaVersion is the schema version this binary's Upgrade brings a
// database to.
func LatestSchemaVersion() int { return migrations[len(migrations)-1].version }

const (
	mysqlMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INT NOT NULL,
		applied_at DATETIME(6) NOT NULL,
		PRIMARY KEY (version)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`
	sqliteMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER NOT NULL PRIMARY KEY,
		applied_at DATETIME NOT NULL
	)`
	// migrationLock is the MySQL named lock that serialises Upgrade across
	// processes (DDL is not transactional there).
	migrationLock        = "ferric_schema_migrations"
	migrationLockSeconds = 300
)

// Upgrade applies every migration the database lacks, in order. It is
// idempotent, and safe when several processes run it at once: MySQL
// serialises them with a named lock, SQLite with a write transaction.
func (s *Store) Upgrade(ctx context.Context) error {
	if s.dialect == DialectSQLite {
		// The transaction begins IMMEDIATE (see openSQLite): a second
		// process waits here for the first to commit, then finds the
		// versions applied. SQLite DDL is transactional, so a failed step
		// leaves nothing behind.
		return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(sqliteMigrationsTable).Error; err != nil {
				return fmt.Errorf("upgrade schema: create schema_migrations: %w", err)
			}
			return applyMigrations(tx, func(m migration) []string { return m.sqlite })
		})
	}
	// GET_LOCK belongs to a session: pin one connection for lock, work and
	// release.
	return s.db.WithContext(ctx).Connection(func(conn *gorm.DB) error {
		var got sql.NullInt64
		if err := conn.Raw("SELECT GET_LOCK(?, ?)", migrationLock, migrationLockSeconds).Row().Scan(&got); err != nil {
			return fmt.Errorf("upgrade schema: take migration lock: %w", err)
		}
		if !got.Valid || got.Int64 != 1 {
			return fmt.Errorf("upgrade schema: migration lock %q not acquired within %ds", migrationLock, migrationLockSeconds)
		}
		// Release even when ctx is cancelled: the pooled connection would
		// otherwise keep the lock for as long as it lives.
		defer conn.WithContext(context.WithoutCancel(ctx)).Exec("SELECT RELEASE_LOCK(?)", migrationLock)
		if err := conn.Exec(mysqlMigrationsTable).Error; err != nil {
			return fmt.Errorf("upgrade schema: create schema_migrations: %w", err)
		}
		// Statements are IF NOT EXISTS: MySQL commits each DDL statement,
		// so a step interrupted half-way must be re-runnable.
		// A session: a statement skipped as already applied must not leave
		// its error on conn for the next one.
		return applyMigrations(conn.Session(&gorm.Session{}), func(m migration) []string { return m.mysql })
	})
}

func applyMigrations(conn *gorm.DB, statements func(migration) []string) error {
	applied, err := appliedVersions(conn)
	if err != nil {
		return err
	}
	for v := range applied {
		if v > LatestSchemaVersion() {
			return fmt.Errorf("upgrade schema: database is at version %d, newer than this release knows (%d)", v, LatestSchemaVersion())
		}
	}
	for _, m := range migrations {
		if applied[m.version] {
			continue
		}
		for _, stmt := range statements(m) {
			if err := conn.Exec(stmt).Error; err != nil && !ddlAlreadyApplied(err) {
				return fmt.Errorf("upgrade schema: migration %d (%s): %w", m.version, m.name, err)
			}
		}
		if err := conn.Exec("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", m.version, now()).Error; err != nil {
			return fmt.Errorf("upgrade schema: record migration %d: %w", m.version, err)
		}
	}
	return nil
}

func appliedVersions(conn *gorm.DB) (map[int]bool, error) {
	var versions []int
	if err := conn.Raw("SELECT version FROM schema_migrations").Scan(&versions).Error; err != nil {
		return nil, fmt.Errorf("upgrade schema: read schema_migrations: %w", err)
	}
	applied := make(map[int]bool, len(versions))
	for _, v := range versions {
		applied[v] = true
	}
	return applied, nil
}

// SchemaVersion is the highest applied migration, 0 for an empty database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	db := s.db.WithContext(ctx)
	exists := "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'schema_migrations'"
	if s.dialect == DialectSQLite {
		exists = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
	}
	var n int64
	if err := db.Raw(exists).Row().Scan(&n); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	var v sql.NullInt64
	if err := db.Raw("SELECT MAX(version) FROM schema_migrations").Row().Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return int(v.Int64), nil
}
