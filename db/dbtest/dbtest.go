// Package dbtest gives test suites their own throw-away databases: a
// uniquely named MySQL database on the test server, or an SQLite file.
// It does not open a Store, so package db's own tests can use it too.
package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// EnvMySQL names the variable that points tests at a MySQL server, e.g.
// "mysql://root@127.0.0.1:3306/". The value "none" disables MySQL tests.
const EnvMySQL = "FERRIC_TEST_MYSQL"

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
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return "", nil, fmt.Errorf("connect to test MySQL server: %w", err)
	}
	name := fmt.Sprintf("ferric_test_%d_%d_%d_%s", os.Getpid(), time.Now().UnixNano()%1_000_000_000, counter.Add(1), label)
	if len(name) > 64 {
		name = name[:64]
	}
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4"); err != nil {
		_ = admin.Close()
		return "", nil, fmt.Errorf("create test database on %s (set %s=none to skip MySQL): %w", cfg.Addr, EnvMySQL, err)
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
	conn.RawQuery = ""
	return conn.String(), drop, nil
}
