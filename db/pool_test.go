package db

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/db/dbtest"
	"github.com/ferricbm/ferric/pkg/errs"
)

var limitedUsers atomic.Int64

// limitedUserURL creates a MySQL account that may hold at most limit
// connections, with every right on the database of connection, and returns
// connection rewritten to log in as it. The account is dropped afterwards.
func limitedUserURL(ctx context.Context, connection string, limit int) string {
	GinkgoHelper()
	dsn, err := dbtest.MySQLDSN(connection)
	Expect(err).NotTo(HaveOccurred())
	admin, err := sql.Open("mysql", dsn)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(admin.Close)

	base, _, _ := strings.Cut(connection, "?")
	u, err := url.Parse(base)
	Expect(err).NotTo(HaveOccurred())
	user := fmt.Sprintf("ferric_pool_%d_%d", os.Getpid(), limitedUsers.Add(1))
	const password = "pool-spec"
	_, err = admin.ExecContext(ctx, fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s' WITH MAX_USER_CONNECTIONS %d", user, password, limit))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx context.Context) error {
		_, err := admin.ExecContext(ctx, fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%'", user))
		return err
	})
	_, err = admin.ExecContext(ctx, fmt.Sprintf("GRANT ALL ON `%s`.* TO '%s'@'%%'", strings.TrimPrefix(u.Path, "/"), user))
	Expect(err).NotTo(HaveOccurred())
	u.User = url.UserPassword(user, password)
	return u.String()
}

func poolSpecs() {
	Describe("connection pool", func() {
		var connection string

		BeforeEach(func(ctx SpecContext) {
			root := freshURL(ctx, DialectMySQL, "pool")
			s, err := Open(ctx, root)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.Upgrade(ctx)).To(Succeed())
			Expect(s.Close()).To(Succeed())
			connection = limitedUserURL(ctx, root, 2)
		})

		It("stays within max_pool_size + max_overflow however many callers wait", func(ctx SpecContext) {
			s, err := Open(ctx, connection, WithPool(Pool{MaxSize: 1, MaxOverflow: 1}))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(s.Close)

			// The account may hold two connections: had the pool opened a
			// third, the server would have refused it and a caller failed.
			var wg sync.WaitGroup
			failures := make(chan error, 16)
			for range 16 {
				wg.Go(func() {
					if err := s.db.WithContext(ctx).Exec("SELECT SLEEP(0.01)").Error; err != nil {
						failures <- err
					}
				})
			}
			wg.Wait()
			close(failures)
			Expect(failures).To(BeEmpty())
			sqlDB, err := s.db.DB()
			Expect(err).NotTo(HaveOccurred())
			Expect(sqlDB.Stats().MaxOpenConnections).To(Equal(2))
			Expect(sqlDB.Stats().OpenConnections).To(BeNumerically("<=", 2))
		})

		It("waits out a refusal that ends within its patience instead of answering 503", func(ctx SpecContext) {
			s, err := Open(ctx, connection, WithPool(Pool{MaxSize: 3, MaxOverflow: 0}))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(s.Close)
			sqlDB, err := s.db.DB()
			Expect(err).NotTo(HaveOccurred())
			sqlDB.SetMaxIdleConns(0) // the next query must connect
			// Another process holds the account's two connections, and
			// its burst ends a second later.
			dsn, err := dbtest.MySQLDSN(connection)
			Expect(err).NotTo(HaveOccurred())
			other, err := sql.Open("mysql", dsn)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(other.Close)
			other.SetMaxIdleConns(0)
			var held []*sql.Conn
			for range 2 {
				c, err := other.Conn(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(c.PingContext(ctx)).To(Succeed())
				held = append(held, c)
			}
			released := make(chan error, 1)
			go func() {
				time.Sleep(time.Second)
				released <- held[0].Close()
			}()
			Expect(s.SchemaVersion(ctx)).To(Equal(LatestSchemaVersion()))
			Expect(<-released).To(Succeed())
			Expect(held[1].Close()).To(Succeed())
		})

		It("answers 503 TemporaryFailure, not a server fault, when the server keeps refusing connections", func(ctx SpecContext) {
			s, err := Open(ctx, connection, WithPool(Pool{MaxSize: 3, MaxOverflow: 0}))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(s.Close)
			sqlDB, err := s.db.DB()
			Expect(err).NotTo(HaveOccurred())
			// Two connections held take the account's whole allowance: the
			// pool may open a third, the server refuses it.
			var held []*sql.Conn
			for range 2 {
				c, err := sqlDB.Conn(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(c.PingContext(ctx)).To(Succeed())
				held = append(held, c)
			}

			_, err = s.SchemaVersion(ctx)
			Expect(errs.Status(err)).To(Equal(503))
			Expect(errs.Is(err, errs.KindTemporaryFailure)).To(BeTrue(), "%v", err)
			Expect(errs.Message(err)).To(Equal("The database is not accepting connections; please retry."))

			Expect(held[0].Close()).To(Succeed())
			Expect(held[1].Close()).To(Succeed())
			Expect(s.SchemaVersion(ctx)).To(Equal(LatestSchemaVersion()))
		})
	})
}
