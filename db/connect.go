package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"syscall"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"

	"github.com/ferricbm/ferric/pkg/errs"
)

// A server at its connection limit refuses the handshake with one of these.
const (
	mysqlTooManyConnections     = 1040 // max_connections reached
	mysqlTooManyUserConnections = 1203 // global max_user_connections
	mysqlUserLimitReached       = 1226 // the account's MAX_USER_CONNECTIONS
)

// Connection attempts before a refusal is given up on, and the pause before
// the second one (doubled for each further one): a pool elsewhere that just
// finished a burst hands its connections back within this time.
const (
	connectAttempts = 4
	connectBackoff  = 50 * time.Millisecond
)

// refusalRetrier opens connections, retrying when the server refuses them,
// and turns a refusal that persists into a 503 TemporaryFailure: the
// database being full is a reason to come back later, not a server fault.
type refusalRetrier struct {
	driver.Connector
	attempts int
	backoff  time.Duration
}

func (r refusalRetrier) Connect(ctx context.Context) (driver.Conn, error) {
	wait := r.backoff
	for attempt := 1; ; attempt++ {
		conn, err := r.Connector.Connect(ctx)
		if err == nil || !connectionRefused(err) {
			return conn, err
		}
		if attempt == r.attempts {
			e := errs.New(errs.KindTemporaryFailure, "The database is not accepting connections; please retry.")
			e.Err = err
			return nil, e
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait *= 2
	}
}

// connectionRefused reports a connection the server (or its host) refused,
// as opposed to one that failed for a reason retrying cannot cure.
func connectionRefused(err error) bool {
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case mysqlTooManyConnections, mysqlTooManyUserConnections, mysqlUserLimitReached:
			return true
		}
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
