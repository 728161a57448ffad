// Package dbtest gives test suites their own throw-away databases: a
// uniquely named MySQL database on the test server, or an SQLite file.
// It is the one place tests get a database from, and EnvMySQL the one
// variable that chooses which. It does not open a Store, so package db's
// own tests can use it too.
package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// EnvMySQL names the variable that chooses the test databases. Unset, the
// suites run on SQLite and on the local MariaDB (root, no password); a URL
// such as "mysql://root@127.0.0.1:3306/?max_open_conns=60" names another
// server, and its query parameters go into every test database's URL; the
// value "none" leaves SQLite alone. End-to-end suites need MySQL.
const EnvMySQL = "FERRIC_TEST_MYSQL"

// The dialects Dialects lists, named as db names them (dbtest cannot
// import db, whose own tests use it).
const (
	SQLite = "sqlite"
	MySQL  = "mysql"
)

// Dialects are the databases every spec of a dual-backend suite runs on.
func Dialects() []string {
	if MySQLDisabled() {
		return []string{SQLite}
	}
	return []string{SQLite, MySQL}
}

// New returns the connection URL of an empty database of dialect: an SQLite
// file inside dir, or a new MySQL database whose name includes label. drop
// removes the MySQL database (a no-op for SQLite, whose dir the caller owns).
func New(ctx context.Context, dialect, label, dir string) (connection string, drop func() error, err error) {
	switch dialect {
	case SQLite:
		return SQLiteURL(dir), func() error { return nil }, nil
	case MySQL:
		return NewMySQLDatabase(ctx, label)
	}
	return "", nil, fmt.Errorf("dbtest: unknown dialect %q", dialect)
}

const defaultServer = "mysql://root@127.0.0.1:3306/"

// MySQLDisabled reports whether the environment opted out of MySQL tests.
func MySQLDisabled() bool { return os.Getenv(EnvMySQL) == "none" }

// MySQLServerURL is the server test databases are created on.
func MySQLServerURL() string {
	if v := os.Getenv(EnvMySQL); v != "" && v != "none" {
		return v
	}
	return defaultServer
}

// SQLiteURL is a connection URL for a database file inside dir.
func SQLiteURL(dir string) string {
	return "sqlite://" + filepath.Join(dir, "ferric.sqlite")
}

var counter atomic.Int64

// unsafeName matches what a label may not put into a database name.
var unsafeName = regexp.MustCompile(`[^a-z0-9_]`)

// NewMySQLDatabase creates an empty database with a unique name (label
// helps to tell leftovers apart) and returns its connection URL and a
// function that drops it.
func NewMySQLDatabase(ctx context.Context, label string) (connection string, drop func() error, err error) {
	if MySQLDisabled() {
		return "", nil, errors.New("MySQL tests are disabled (" + EnvMySQL + "=none)")
	}
	u, err := url.Parse(MySQLServerURL())
	if err != nil {
		return "", nil, fmt.Errorf("parse %s: malformed URL", EnvMySQL)
	}
	admin, err := sql.Open("mysql", driverConfig(u).FormatDSN())
	if err != nil {
		return "", nil, fmt.Errorf("connect to test MySQL server: %w", err)
	}
	name := fmt.Sprintf("ferric_test_%d_%d_%d_%s", os.Getpid(), time.Now().UnixNano()%1_000_000_000, counter.Add(1),
		unsafeName.ReplaceAllString(strings.ToLower(label), "_"))
	if len(name) > 64 {
		name = name[:64]
	}
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4"); err != nil {
		_ = admin.Close()
		return "", nil, fmt.Errorf("create test database on %s (set %s=none to skip MySQL): %w", u.Host, EnvMySQL, err)
	}
	drop = func() error {
		defer admin.Close()
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			return fmt.Errorf("drop test database %s: %w", name, err)
		}
		return nil
	}
	conn := *u
	conn.Path = "/" + name
	return conn.String(), drop, nil
}

// driverConfig is the MySQL driver's view of a server or database URL.
func driverConfig(u *url.URL) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if u.Port() == "" {
		cfg.Addr = u.Host + ":3306"
	}
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	return cfg
}

// MySQLDSN is the driver DSN of a connection URL NewMySQLDatabase returned,
// for tests that reach under the Store with plain SQL.
func MySQLDSN(connection string) (string, error) {
	u, err := url.Parse(connection)
	if err != nil {
		return "", errors.New("dbtest: malformed MySQL connection URL")
	}
	return driverConfig(u).FormatDSN(), nil
}
