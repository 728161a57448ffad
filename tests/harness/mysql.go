package harness

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"regexp"

	"github.com/go-sql-driver/mysql"
)

// MySQLAddr is the MariaDB the suites use: FERRIC_E2E_MYSQL_ADDR or the
// local default. The suites connect as root without a password, as on the
// project's machines.
func MySQLAddr() string {
	if a := os.Getenv("FERRIC_E2E_MYSQL_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:3306"
}

// Database is a MySQL database created for one suite.
type Database struct {
	Name string
	db   *sql.DB
}

var nameRE = regexp.MustCompile(`[^a-z0-9_]`)

// CreateDatabase creates a uniquely named, empty database.
func CreateDatabase(ctx context.Context, prefix string) (*Database, error) {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = MySQLAddr()
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	name := "ferric_e2e_" + nameRE.ReplaceAllString(prefix, "_") + "_" + RandomHex(4)
	if _, err := db.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4"); err != nil {
		db.Close()
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	return &Database{Name: name, db: db}, nil
}

// Connection is the database.connection value for Ferric's config.
func (d *Database) Connection() string {
	return fmt.Sprintf("mysql://root@%s/%s", MySQLAddr(), d.Name)
}

// Drop removes the database and closes the admin connection.
func (d *Database) Drop(ctx context.Context) error {
	_, err := d.db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+d.Name+"`")
	if cerr := d.db.Close(); err == nil {
		err = cerr
	}
	return err
}
