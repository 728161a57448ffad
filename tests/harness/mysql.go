package harness

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/ferricbm/ferric/db/dbtest"
)

// Database is a MySQL database created for one suite, on the server
// dbtest.EnvMySQL names.
type Database struct {
	Name       string
	connection string
	drop       func() error
}

// CreateDatabase creates a uniquely named, empty database.
func CreateDatabase(ctx context.Context, prefix string) (*Database, error) {
	connection, drop, err := dbtest.NewMySQLDatabase(ctx, "e2e_"+prefix)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(connection)
	if err != nil {
		_ = drop()
		return nil, fmt.Errorf("test database URL: %w", err)
	}
	return &Database{Name: strings.TrimPrefix(u.Path, "/"), connection: connection, drop: drop}, nil
}

// Connection is the database.connection value for Ferric's config.
func (d *Database) Connection() string { return d.connection }

// Drop removes the database.
func (d *Database) Drop(context.Context) error { return d.drop() }
