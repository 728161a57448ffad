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

// How long a refused connection is tried again before the request gives
// up, and the pause before the second try (doubled for each further one,
// up to connectMaxBackoff): another process that just finished a burst
// hands its connections back within seconds, and a request waiting that
// long beats a 503 its client must retry.
const (
	connectPatience   = 5 * time.Second
	connectBackoff    = 50 * time.Millisecond
	connectMaxBackoff = time.Second
)

// refusalRetrier opens connections, retrying with backoff when the server
// refuses them, within patience and the caller's deadline, and turns a
// refusal that persists into a 503 TemporaryFailure: the database being
// full is a reason to come back later, not a server fault.
type refusalRetrier struct {
	driver.Connector
	patience time.Duration
	backoff  time.Duration
}

func (r refusalRetrier) Connect(ctx context.Context) (driver.Conn, error) {
	wait := r.backoff
	giveUp := time.Now().Add(r.patience)
	if d, ok := ctx.Deadline(); ok && d.Before(giveUp) {
		giveUp = d
	}
	for {
		conn, err := r.Connector.Connect(ctx)
		if err == nil || !connectionRefused(err) {
			return conn, err
		}
		if time.Now().Add(wait).After(giveUp) {
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
		wait = min(2*wait, connectMaxBackoff)
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
