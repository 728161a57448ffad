package db

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"gorm.io/gorm/logger"

	"github.com/ferricbm/ferric/pkg/model"
)

var allTables = []string{"nodes", "ports", "conductors", "conductor_hardware_interfaces", "volume_connectors", "volume_targets", "chassis", "portgroups", "node_configdrives", "schema_migrations"}

func openSpecs(backend string) {
	Describe("Open", func() {
		It("never logs SQL: statements carry secrets as parameters", func() {
			Expect(sharedStores[backend].db.Config.Logger).To(Equal(logger.Discard))
		})

		It("rejects unknown URL schemes", func(ctx SpecContext) {
			_, err := Open(ctx, "postgres://u:p@h/db")
			Expect(err).To(MatchError(ContainSubstring("unsupported connection URL")))
		})

		if backend == DialectMySQL {
			It("never repeats the password in its errors", func(ctx SpecContext) {
				_, err := Open(ctx, "mysql://root:s3cr3tpw@127.0.0.1:1/nothing")
				Expect(err).To(HaveOccurred())
				Expect(err.Error()).NotTo(ContainSubstring("s3cr3tpw"))

				_, err = Open(ctx, "mysql://root:s3cr3tpw@127.0.0.1:3306/nothing?bogus=1")
				Expect(err).To(MatchError(ContainSubstring(`unknown mysql connection parameter "bogus"`)))
				Expect(err.Error()).NotTo(ContainSubstring("s3cr3tpw"))
			})

			It("sizes the pool from the URL", func(ctx SpecContext) {
				// The options under test replace any the test server's URL carries.
				u, _, _ := strings.Cut(freshURL(ctx, backend, "pool"), "?")
				s, err := Open(ctx, u+"?max_open_conns=3&max_idle_conns=2&conn_max_lifetime=1m")
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(s.Close)
				sqlDB, err := s.db.DB()
				Expect(err).NotTo(HaveOccurred())
				Expect(sqlDB.Stats().MaxOpenConnections).To(Equal(3))
				Expect(s.Dialect()).To(Equal(DialectMySQL))

				_, err = Open(ctx, u+"?max_open_conns=0")
				Expect(err).To(MatchError(ContainSubstring("bad max_open_conns")))
			})

			It("talks UTC with microsecond DATETIME columns", func(ctx SpecContext) {
				s := sharedStores[backend]
				var tz string
				Expect(s.db.WithContext(ctx).Raw("SELECT @@session.time_zone").Row().Scan(&tz)).To(Succeed())
				Expect(tz).To(Equal("+00:00"))
				var mode string
				Expect(s.db.WithContext(ctx).Raw("SELECT @@session.sql_mode").Row().Scan(&mode)).To(Succeed())
				Expect(mode).To(ContainSubstring("STRICT_ALL_TABLES"))
				long := newNode(strings.Repeat("x", 256))
				Expect(s.CreateNode(ctx, long)).To(MatchError(ContainSubstring("Data too long")))
				var precision int
				Expect(s.db.WithContext(ctx).Raw(`SELECT DATETIME_PRECISION FROM information_schema.columns
					WHERE table_schema = DATABASE() AND table_name = 'nodes' AND column_name = 'provision_updated_at'`).
					Row().Scan(&precision)).To(Succeed())
				Expect(precision).To(Equal(6))
			})
		}

		if backend == DialectSQLite {
			It("creates parent directories and enables WAL and foreign keys", func(ctx SpecContext) {
				path := filepath.Join(GinkgoT().TempDir(), "a", "b", "c.db")
				s, err := Open(ctx, "sqlite://"+path)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(s.Close)
				Expect(path).To(BeAnExistingFile())
				Expect(s.Dialect()).To(Equal(DialectSQLite))

				var mode string
				Expect(s.db.WithContext(ctx).Raw("PRAGMA journal_mode").Row().Scan(&mode)).To(Succeed())
				Expect(mode).To(Equal("wal"))
				var fk, busy int
				Expect(s.db.WithContext(ctx).Raw("PRAGMA foreign_keys").Row().Scan(&fk)).To(Succeed())
				Expect(fk).To(Equal(1))
				Expect(s.db.WithContext(ctx).Raw("PRAGMA busy_timeout").Row().Scan(&busy)).To(Succeed())
				Expect(busy).To(Equal(sqliteBusyTimeoutMS))
			})

			It("creates the file 0600 and its new directories 0700, whatever the umask", func(ctx SpecContext) {
				old := syscall.Umask(0)
				DeferCleanup(func() { syscall.Umask(old) })
				root := GinkgoT().TempDir()
				path := filepath.Join(root, "a", "b", "c.db")
				s, err := Open(ctx, "sqlite://"+path)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(s.Close)
				Expect(s.Upgrade(ctx)).To(Succeed())
				for _, p := range []string{path, path + "-wal", path + "-shm"} {
					info, err := os.Stat(p)
					Expect(err).NotTo(HaveOccurred())
					Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), p)
				}
				for _, d := range []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b")} {
					info, err := os.Stat(d)
					Expect(err).NotTo(HaveOccurred())
					Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o700)), d)
				}
			})

			It("narrows an existing database file to its owner", func(ctx SpecContext) {
				path := filepath.Join(GinkgoT().TempDir(), "old.db")
				Expect(os.WriteFile(path, nil, 0o644)).To(Succeed())
				Expect(os.Chmod(path, 0o644)).To(Succeed())
				s, err := Open(ctx, "sqlite://"+path)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(s.Close)
				info, err := os.Stat(path)
				Expect(err).NotTo(HaveOccurred())
				Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
			})

			It("opens an in-memory database", func(ctx SpecContext) {
				s, err := Open(ctx, "sqlite://:memory:")
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(s.Close)
				Expect(s.Upgrade(ctx)).To(Succeed())
				n := newNode("mem")
				Expect(s.CreateNode(ctx, n)).To(Succeed())
				got, err := s.GetNodeByName(ctx, "mem")
				Expect(err).NotTo(HaveOccurred())
				Expect(got.UUID).To(Equal(n.UUID))
			})

			It("lets two stores on one file write at once without SQLITE_BUSY", func(ctx SpecContext) {
				url := freshURL(ctx, backend, "writers")
				var stores []*Store
				for range 2 {
					s, err := Open(ctx, url)
					Expect(err).NotTo(HaveOccurred())
					DeferCleanup(s.Close)
					stores = append(stores, s)
				}
				Expect(stores[0].Upgrade(ctx)).To(Succeed())
				errCh := make(chan error, 40)
				var wg sync.WaitGroup
				for i := range 40 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						s := stores[i%2]
						n := newNode(fmt.Sprintf("w%d", i))
						if err := s.CreateNode(ctx, n); err != nil {
							errCh <- err
							return
						}
						n.ProvisionState = ptr("manageable")
						errCh <- s.SaveNode(ctx, n)
					}()
				}
				wg.Wait()
				close(errCh)
				for err := range errCh {
					Expect(err).NotTo(HaveOccurred())
				}
				Expect(countRows(ctx, stores[1], "nodes")).To(Equal(int64(40)))
			})
		}
	})
}

func migrationSpecs(backend string) {
	Describe("Upgrade", func() {
		It("migrates an empty database to the latest version, and again is a no-op", func(ctx SpecContext) {
			s := freshStore(ctx, backend, "migrate")
			v, err := s.SchemaVersion(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(v).To(Equal(0))

			Expect(s.Upgrade(ctx)).To(Succeed())
			v, err = s.SchemaVersion(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(v).To(Equal(LatestSchemaVersion()))
			m := s.db.WithContext(ctx).Migrator()
			for _, t := range allTables {
				Expect(m.HasTable(t)).To(BeTrue(), t)
			}
			for _, idx := range []string{"uniq_nodes_uuid", "uniq_nodes_name", "uniq_nodes_instance_uuid",
				"idx_nodes_reservation", "idx_nodes_provision_state", "idx_nodes_driver",
				"idx_nodes_conductor_group", "idx_nodes_timeouts"} {
				Expect(m.HasIndex("nodes", idx)).To(BeTrue(), idx)
			}
			Expect(m.HasIndex("ports", "uniq_ports_address")).To(BeTrue())
			for table, indexes := range map[string][]string{
				"volume_connectors": {"uniq_volume_connectors_uuid", "uniq_volume_connectors_type_connector_id", "idx_volume_connectors_node_id"},
				"volume_targets":    {"uniq_volume_targets_uuid", "uniq_volume_targets_node_id_boot_index"},
				"chassis":           {"uniq_chassis_uuid"},
				"portgroups":        {"uniq_portgroups_uuid", "uniq_portgroups_name", "uniq_portgroups_address", "idx_portgroups_node_id"},
				"ports":             {"idx_ports_portgroup_id"},
				"nodes":             {"idx_nodes_chassis_uuid"},
			} {
				for _, idx := range indexes {
					Expect(m.HasIndex(table, idx)).To(BeTrue(), table+"."+idx)
				}
			}

			Expect(s.Upgrade(ctx)).To(Succeed())
			Expect(appliedCount(ctx, s)).To(Equal(int64(len(migrations))))
		})

		It("is safe when several processes upgrade at once", func(ctx SpecContext) {
			url := freshURL(ctx, backend, "race")
			const n = 4
			stores := make([]*Store, n)
			for i := range stores {
				s, err := Open(ctx, url)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(s.Close)
				stores[i] = s
			}
			errCh := make(chan error, n)
			var wg sync.WaitGroup
			for _, s := range stores {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errCh <- s.Upgrade(ctx)
				}()
			}
			wg.Wait()
			close(errCh)
			for err := range errCh {
				Expect(err).NotTo(HaveOccurred())
			}
			Expect(appliedCount(ctx, stores[0])).To(Equal(int64(len(migrations))))
			v, err := stores[n-1].SchemaVersion(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(v).To(Equal(LatestSchemaVersion()))
		})

		if backend == DialectMySQL {
			It("resumes a step that a crash interrupted half-way", func(ctx SpecContext) {
				s := freshStore(ctx, backend, "resume")
				// MySQL commits each DDL statement: a crash can leave the
				// first tables of a step behind without its version row.
				Expect(s.db.WithContext(ctx).Exec(migrations[0].mysql[0]).Error).To(Succeed())
				Expect(s.Upgrade(ctx)).To(Succeed())
				v, err := s.SchemaVersion(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(v).To(Equal(LatestSchemaVersion()))
			})

			It("resumes step 3 after its ALTER TABLE statements committed", func(ctx SpecContext) {
				s := freshStore(ctx, backend, "resume3")
				Expect(s.Upgrade(ctx)).To(Succeed())
				// Forget step 3 was recorded: its tables and columns stay,
				// as after a crash just before the version row was written.
				Expect(s.db.WithContext(ctx).Exec("DELETE FROM schema_migrations WHERE version = 3").Error).To(Succeed())
				Expect(s.Upgrade(ctx)).To(Succeed())
				Expect(appliedCount(ctx, s)).To(Equal(int64(len(migrations))))
				Expect(s.db.WithContext(ctx).Migrator().HasColumn("ports", "portgroup_id")).To(BeTrue())
			})
		}

		if backend == DialectSQLite {
			It("leaves nothing behind when a step fails", func(ctx SpecContext) {
				s := freshStore(ctx, backend, "fail")
				Expect(s.db.WithContext(ctx).Exec("CREATE TABLE ports (x INTEGER)").Error).To(Succeed())
				Expect(s.Upgrade(ctx)).To(MatchError(ContainSubstring("migration 1")))
				Expect(s.db.WithContext(ctx).Migrator().HasTable("nodes")).To(BeFalse())
				v, err := s.SchemaVersion(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(v).To(BeZero())
			})
		}

		It("has a column for every field of pkg/model (a model change needs a migration)", func(ctx SpecContext) {
			s := sharedStores[backend]
			for _, t := range []struct {
				table string
				cols  tableColumns
			}{{"nodes", nodeColumns}, {"ports", portColumns}, {"conductors", conductorColumns},
				{"conductor_hardware_interfaces", parseColumns(&model.ConductorHardwareInterface{})},
				{"volume_connectors", volumeConnectors.columns}, {"volume_targets", volumeTargets.columns},
				{"chassis", chassisColumns}, {"portgroups", portgroups.columns}} {
				types, err := s.db.WithContext(ctx).Migrator().ColumnTypes(t.table)
				Expect(err).NotTo(HaveOccurred())
				var stored []string
				for _, ct := range types {
					stored = append(stored, ct.Name())
				}
				Expect(stored).To(ConsistOf(t.cols.all), t.table)
			}
		})

		It("refuses a database newer than this release", func(ctx SpecContext) {
			s := freshStore(ctx, backend, "newer")
			Expect(s.Upgrade(ctx)).To(Succeed())
			Expect(s.db.WithContext(ctx).Exec("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", 9999, now()).Error).To(Succeed())
			Expect(s.Upgrade(ctx)).To(MatchError(ContainSubstring("newer than this release")))
		})
	})
}

func appliedCount(ctx context.Context, s *Store) int64 {
	var n int64
	Expect(s.db.WithContext(ctx).Raw("SELECT COUNT(*) FROM schema_migrations").Row().Scan(&n)).To(Succeed())
	return n
}
