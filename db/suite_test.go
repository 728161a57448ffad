package db

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"gorm.io/gorm"

	"github.com/ferricbm/ferric/db/dbtest"
	"github.com/ferricbm/ferric/pkg/errs"
)

func TestDB(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "db repository suite")
}

// Every spec runs against each backend. MySQL is required: set
// FERRIC_TEST_MYSQL=none to run the SQLite half alone.
var backends = func() []string {
	if dbtest.MySQLDisabled() {
		return []string{DialectSQLite}
	}
	return []string{DialectSQLite, DialectMySQL}
}()

// sharedStores are migrated once per backend; BeforeEach empties them.
var sharedStores = map[string]*Store{}

// statements records the SQL of every query a shared store runs, so specs
// can assert on what was actually selected.
type statementLog struct {
	mu   sync.Mutex
	sqls []string
}

func (l *statementLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sqls = nil
}

func (l *statementLog) matching(substr string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.sqls {
		if strings.Contains(s, substr) {
			out = append(out, s)
		}
	}
	return out
}

var statements = map[string]*statementLog{}

var _ = BeforeSuite(func(ctx SpecContext) {
	for _, b := range backends {
		s := freshStore(ctx, b, "shared")
		Expect(s.Upgrade(ctx)).To(Succeed())
		log := &statementLog{}
		Expect(s.db.Callback().Query().After("gorm:query").Register("test:record", func(tx *gorm.DB) {
			log.mu.Lock()
			defer log.mu.Unlock()
			log.sqls = append(log.sqls, tx.Statement.SQL.String())
		})).To(Succeed())
		Expect(s.db.Callback().Row().After("gorm:row").Register("test:record", func(tx *gorm.DB) {
			log.mu.Lock()
			defer log.mu.Unlock()
			log.sqls = append(log.sqls, tx.Statement.SQL.String())
		})).To(Succeed())
		sharedStores[b] = s
		statements[b] = log
	}
})

// emptyTables gives a spec a clean shared store.
func emptyTables(ctx context.Context, s *Store) {
	for _, t := range []string{"allocations", "boot_isos", "node_configdrives", "volume_targets", "volume_connectors", "ports", "portgroups", "nodes", "chassis", "conductor_hardware_interfaces", "conductors"} {
		Expect(s.db.WithContext(ctx).Exec("DELETE FROM " + t).Error).To(Succeed())
	}
}

// freshStore opens an empty, unmigrated database of the backend, removed
// when the current node (spec or suite) ends.
func freshStore(ctx context.Context, backend, purpose string) *Store {
	url := freshURL(ctx, backend, purpose)
	s, err := Open(ctx, url)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(s.Close)
	return s
}

func freshURL(ctx context.Context, backend, purpose string) string {
	if backend == DialectSQLite {
		// A nested path: Open must create the parent directories.
		return dbtest.SQLiteURL(filepath.Join(GinkgoT().TempDir(), "state", "db"))
	}
	u, drop, err := dbtest.NewMySQLDatabase(ctx, purpose)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(drop)
	return u
}

// expectErr asserts a typed error's kind, message and HTTP status.
func expectErr(err error, kind errs.Kind, message string, status int) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	e, ok := errs.As(err)
	Expect(ok).To(BeTrue(), "not an *errs.Error: %v", err)
	Expect(e.Kind).To(Equal(kind))
	Expect(e.Message).To(Equal(message))
	Expect(e.HTTPStatus()).To(Equal(status))
}

func ptr[T any](v T) *T { return &v }

var _ = Describe("Store", func() {
	for _, backend := range backends {
		Describe("on "+backend, func() {
			var s *Store
			BeforeEach(func(ctx SpecContext) {
				s = sharedStores[backend]
				emptyTables(ctx, s)
				statements[backend].reset()
			})
			store := func() *Store { return s }
			openSpecs(backend)
			if backend == DialectMySQL {
				poolSpecs()
				indexSpecs()
			}
			migrationSpecs(backend)
			nodeSpecs(backend, store)
			lockSpecs(store)
			fencedSaveSpecs(store)
			listSpecs(backend, store)
			portSpecs(backend, store)
			chassisSpecs(store)
			portgroupSpecs(backend, store)
			allocationSpecs(backend, store)
			volumeSpecs(backend, store)
			configDriveSpecs(store)
			bootISOSpecs(store)
			conductorSpecs(store)
			inputSpecs(store)
		})
	}
})
