// Package db is Ferric's repository: the only code that talks SQL. It runs
// on MySQL/MariaDB for production and on an embedded, pure-Go SQLite for
// single-host setups and tests, with one schema and identical semantics.
package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glebarez/sqlite"
	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/ferricbm/ferric/pkg/tlsfiles"
)

// Dialect names returned by (*Store).Dialect.
const (
	DialectMySQL  = "mysql"
	DialectSQLite = "sqlite"
)

// sqliteBusyTimeoutMS is how long a writer from another process waits for
// the file lock before SQLite reports SQLITE_BUSY.
const sqliteBusyTimeoutMS = 30000

// Pool bounds a process's MySQL connections, with oslo.db's option names:
// at most MaxSize+MaxOverflow connections are open, MaxSize of them kept
// when idle. Every replica of every service holds its own pool, so the
// server's max_connections must cover replicas × (MaxSize+MaxOverflow).
type Pool struct {
	MaxSize     int
	MaxOverflow int
	// RecycleTime closes a connection this long after it was opened, before
	// the server's wait_timeout or a proxy drops it underneath; 0: never.
	RecycleTime time.Duration
	// IdleTime closes a connection idle this long, so the pool shrinks back
	// after a burst; 0: never.
	IdleTime time.Duration
}

// DefaultPool is the pool of a Store opened without one: ten connections,
// kept open when idle, and no overflow, so requests beyond them wait for a
// free one. An API and ten conductors then hold at most 110 connections,
// inside MariaDB's default max_connections of 151 with room for others.
func DefaultPool() Pool {
	return Pool{MaxSize: 10, MaxOverflow: 0, RecycleTime: 30 * time.Minute, IdleTime: 5 * time.Minute}
}

// Option changes how Open sets up a Store.
type Option func(*Pool)

// WithPool bounds the MySQL connection pool (SQLite always uses one
// connection). Query parameters in the connection URL override it.
func WithPool(p Pool) Option { return func(dst *Pool) { *dst = p } }

// Store is the repository over one database. It is safe for concurrent use.
type Store struct {
	db      *gorm.DB
	dialect string

	// stmts maps a query to its *sql.Stmt; stmtMu serialises preparing.
	stmts  sync.Map
	stmtMu sync.Mutex
}

// Open connects to "mysql://user:pass@host:port/dbname[?params]" or
// "sqlite://path". It does not create or migrate the schema: call Upgrade.
func Open(ctx context.Context, connection string, opts ...Option) (*Store, error) {
	pool := DefaultPool()
	for _, o := range opts {
		o(&pool)
	}
	var (
		s   *Store
		err error
	)
	switch {
	case strings.HasPrefix(connection, "mysql://"):
		s, err = openMySQL(connection, pool)
	case strings.HasPrefix(connection, "sqlite://"):
		s, err = openSQLite(strings.TrimPrefix(connection, "sqlite://"))
	default:
		return nil, errors.New(`open database: unsupported connection URL (want "mysql://..." or "sqlite://...")`)
	}
	if err != nil {
		return nil, err
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("open database: ping: %w", err)
	}
	return s, nil
}

// gormConfig keeps the SQL logger quiet: statements carry node secrets
// (driver_info passwords) as parameters and must never reach a log.
func gormConfig() *gorm.Config {
	return &gorm.Config{
		Logger:                                   logger.Discard,
		SkipDefaultTransaction:                   true,
		DisableForeignKeyConstraintWhenMigrating: true,
		NowFunc:                                  now,
	}
}

func openMySQL(connection string, pool Pool) (*Store, error) {
	u, err := url.Parse(connection)
	if err != nil {
		// url.Error repeats the URL, password included.
		return nil, errors.New("open database: malformed mysql connection URL")
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	if dbName == "" {
		return nil, errors.New("open database: mysql connection URL names no database")
	}
	cfg := mysqldriver.NewConfig()
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if u.Port() == "" {
		cfg.Addr = u.Host + ":3306"
	}
	cfg.DBName = dbName
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	// Rows "affected" must mean rows matched: an UPDATE that happens to
	// write identical values must not read as "row not found".
	cfg.ClientFoundRows = true
	cfg.Collation = "utf8mb4_bin"
	// Strict mode whatever the server default: an over-long or invalid
	// value must fail, never be truncated into the row.
	cfg.Params = map[string]string{"time_zone": "'+00:00'", "sql_mode": "'TRADITIONAL'"}
	// Parameters are escaped into the statement by the driver (safe for
	// utf8mb4): without it every statement with arguments costs a
	// prepare, an execute and a close, three messages instead of one.
	cfg.InterpolateParams = true

	maxOpen, maxIdle, lifetime := pool.MaxSize+pool.MaxOverflow, pool.MaxSize, pool.RecycleTime
	// ssl_ca, ssl_cert and ssl_key are PyMySQL's names, which Ironic's
	// connection URLs carry.
	var sslCA, sslCert, sslKey string
	for key, vals := range u.Query() {
		v := vals[len(vals)-1]
		switch key {
		case "max_open_conns":
			if maxOpen, err = strconv.Atoi(v); err != nil || maxOpen < 1 {
				return nil, fmt.Errorf("open database: bad max_open_conns %q", v)
			}
		case "max_idle_conns":
			if maxIdle, err = strconv.Atoi(v); err != nil || maxIdle < 0 {
				return nil, fmt.Errorf("open database: bad max_idle_conns %q", v)
			}
		case "conn_max_lifetime":
			if lifetime, err = time.ParseDuration(v); err != nil {
				return nil, fmt.Errorf("open database: bad conn_max_lifetime %q", v)
			}
		case "timeout":
			if cfg.Timeout, err = time.ParseDuration(v); err != nil {
				return nil, fmt.Errorf("open database: bad timeout %q", v)
			}
		case "ssl_ca":
			sslCA = v
		case "ssl_cert":
			sslCert = v
		case "ssl_key":
			sslKey = v
		default:
			return nil, fmt.Errorf("open database: unknown mysql connection parameter %q", key)
		}
	}
	if maxOpen < 1 {
		return nil, fmt.Errorf("open database: pool of %d connections", maxOpen)
	}
	// Any of them makes every connection TLS, verified against ssl_ca (or
	// the system's roots) and the host name of the URL: never a silent
	// fallback to plain text.
	if sslCA != "" || sslCert != "" || sslKey != "" {
		if cfg.TLS, err = tlsfiles.Client(sslCA, sslCert, sslKey); err != nil {
			return nil, fmt.Errorf("open database: %w", err)
		}
	}
	if maxIdle > maxOpen {
		maxIdle = maxOpen
	}

	connector, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	sqlDB := sql.OpenDB(refusalRetrier{Connector: connector, patience: connectPatience, backoff: connectBackoff})
	sqlDB.SetMaxOpenConns(maxOpen)
	sqlDB.SetMaxIdleConns(maxIdle)
	sqlDB.SetConnMaxLifetime(lifetime)
	sqlDB.SetConnMaxIdleTime(pool.IdleTime)
	g, err := gorm.Open(mysql.New(mysql.Config{Conn: sqlDB, DSNConfig: cfg}), gormConfig())
	if err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	return &Store{db: g, dialect: DialectMySQL}, nil
}

// sqliteMemory is the path of an in-memory SQLite database.
const sqliteMemory = ":memory:"

// createPrivate makes the database file readable by its owner only, and
// the directories it creates for it, before SQLite opens it: the file holds
// BMC passwords, and SQLite gives its WAL and shared-memory files the
// database file's mode. An existing file is narrowed to 0600; existing
// directories, possibly shared, are left as they are.
func createPrivate(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create directory for %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("restrict %s to its owner: %w", path, err)
	}
	return nil
}

func openSQLite(path string) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, errors.New("open database: sqlite connection URL needs a file path without '?' or '#'")
	}
	if path != sqliteMemory {
		if err := createPrivate(path); err != nil {
			return nil, fmt.Errorf("open database: %w", err)
		}
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeoutMS))
	q.Add("_pragma", "foreign_keys(1)")
	// Transactions take the write lock when they begin: a deferred
	// transaction that reads, then writes, fails at once with SQLITE_BUSY
	// (snapshot) when another process wrote meanwhile; busy_timeout does
	// not help there.
	q.Set("_txlock", "immediate")
	dsn := path + "?" + q.Encode()

	g, err := gorm.Open(sqlite.Open(dsn), gormConfig())
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	sqlDB, err := g.DB()
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	// SQLite admits one writer at a time. One connection makes concurrent
	// callers queue in database/sql instead of failing with SQLITE_BUSY,
	// and every statement sees the previous one's writes.
	sqlDB.SetMaxOpenConns(1)
	sqlDB.SetMaxIdleConns(1)
	sqlDB.SetConnMaxLifetime(0)
	return &Store{db: g, dialect: DialectSQLite}, nil
}

// Ping checks that the database answers now (readiness probes).
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	return nil
}

// Close releases the prepared statements and the connection pool.
func (s *Store) Close() error {
	s.stmts.Range(func(_, st any) bool {
		_ = st.(*sql.Stmt).Close()
		return true
	})
	sqlDB, err := s.db.DB()
	if err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	return sqlDB.Close()
}

// prepared returns query as a statement prepared once per connection and
// kept. For the hottest reads this spares MySQL parsing and resolving a
// long column list on every execution (a third of its CPU for a node
// GET). It is prepared on first use: the schema may not exist at Open.
func (s *Store) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.stmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st, ok := s.stmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, err
	}
	st, err := sqlDB.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	s.stmts.Store(query, st)
	return st, nil
}

// Dialect is DialectMySQL or DialectSQLite.
func (s *Store) Dialect() string { return s.dialect }

// now is the one clock of the repository: Go's UTC time at the precision
// both dialects store (microseconds), so a value written reads back equal
// and string-compared SQLite timestamps order correctly.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// normTime brings a caller-supplied time to the stored form.
func normTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC().Truncate(time.Microsecond)
	return &v
}

// deadlockAttempts bounds how often a transaction InnoDB chose as a
// deadlock victim is run. Writers piling onto one unique index (boot
// indexes of one node, say) deadlock again if they all retry at once, so
// each retry waits a random part of a doubling window, as oslo.db does.
const deadlockAttempts = 10

// deadlockBackoffCap bounds the window a deadlock victim waits in.
const deadlockBackoffCap = 64 * time.Millisecond

// transaction runs fn in a transaction, again if it was a deadlock victim.
func (s *Store) transaction(ctx context.Context, fn func(tx *gorm.DB) error) error {
	window := time.Millisecond
	var err error
	for range deadlockAttempts {
		if err = s.db.WithContext(ctx).Transaction(fn); !deadlock(err) {
			return err
		}
		t := time.NewTimer(rand.N(window) + 1)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (retry abandoned: %w)", err, ctx.Err())
		case <-t.C:
		}
		window = min(2*window, deadlockBackoffCap)
	}
	return err
}
