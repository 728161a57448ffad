// Package invariant watches a Ferric deployment's database while faults are
// injected and records every moment it breaks a promise the service makes:
// an accepted request that never ends, a node stuck in a moving state, a
// lock that outlives its holder, two conductors acting on one node, or a
// row left half-changed. It only reads, apart from the audit trigger it
// installs (see audit.go).
package invariant

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/ferricbm/ferric/tests/harness"
)

// Bounds are how long each kind of pending work may last before the
// checker calls it a violation.
type Bounds struct {
	// HeartbeatTimeout is the conductors' [conductor] heartbeat_timeout.
	HeartbeatTimeout time.Duration
	// Takeover is how long after its holder's heartbeat went stale a lock
	// may still be held: the heartbeat timeout plus a few check intervals.
	Takeover time.Duration
	// Transition is how long a node may stay in a moving state (deploying,
	// cleaning, their wait states, ...), counted from provision_updated_at.
	Transition time.Duration
	// Settle is how long Finish waits for every accepted request to end.
	Settle time.Duration
}

// BoundsFor gives the bounds of a deployment running with timings: a lock
// may outlive its holder's heartbeat by the heartbeat timeout, three
// orphan checks and slack for a loaded two-core machine; a moving state
// may last the callback timeout plus that; requests get 30 s more to end.
func BoundsFor(t harness.Timings) Bounds {
	takeover := t.HeartbeatTimeout + 3*t.CheckInterval + 10*time.Second
	transition := t.CallbackTimeout + takeover
	return Bounds{HeartbeatTimeout: t.HeartbeatTimeout, Takeover: takeover, Transition: transition,
		Settle: transition + 30*time.Second}
}

// Violation is one broken invariant.
type Violation struct {
	Invariant string
	Node      string
	Detail    string
	At        time.Time
}

func (v Violation) String() string {
	return fmt.Sprintf("invariant violated: %s: node %s: %s (at %s)", v.Invariant, v.Node, v.Detail, v.At.Format(time.RFC3339Nano))
}

// The invariants, as Violation.Invariant names them.
const (
	RequestLost     = "accepted request ended in no defined state"
	StuckTransition = "node in a moving state past its timeout"
	OrphanLock      = "reservation outlived its conductor's heartbeat"
	SharedNode      = "two conductors acted on one node"
	StaleEpoch      = "lock taken in an earlier registration epoch than its holder's"
	LapsedLock      = "lock taken by a conductor whose heartbeat had lapsed"
	Unlocked        = "provision state changed without the node lock"
	HalfApplied     = "half-applied change"
)

// pollInterval is how often the database is read: well under every bound.
const pollInterval = 500 * time.Millisecond

// Checker watches one database. Start it before the load, record each
// accepted request with Accepted, and call Finish once the faults are over.
type Checker struct {
	db     *sql.DB
	bounds Bounds
	stop   context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	violations []Violation
	seen       map[string]bool      // invariant+node+detail already reported
	accepted   map[string]string    // node -> target of its last accepted request
	unanswered map[string][]string  // node -> targets asked for since, without an answer
	staleSince map[string]time.Time // node -> when its holder's heartbeat went stale
	lastAudit  int64
	pollErrors int
	lastErr    error
}

// Start connects to the deployment's database (Ferric's connection URL,
// mysql://user@host:port/name), installs the audit trigger and begins
// polling.
func Start(ctx context.Context, connection string, b Bounds) (*Checker, error) {
	dsn, err := DSN(connection)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", connection, err)
	}
	db.SetMaxOpenConns(2)
	if err := installAudit(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	pctx, stop := context.WithCancel(context.Background())
	c := &Checker{db: db, bounds: b, stop: stop, done: make(chan struct{}),
		seen: map[string]bool{}, accepted: map[string]string{}, unanswered: map[string][]string{}, staleSince: map[string]time.Time{}}
	go c.run(pctx)
	return c, nil
}

// DSN turns Ferric's mysql:// connection URL into a go-sql-driver DSN
// reading times as UTC, as Ferric stores them.
func DSN(connection string) (string, error) {
	u, err := url.Parse(connection)
	if err != nil || !strings.HasPrefix(u.Scheme, "mysql") {
		return "", fmt.Errorf("not a MySQL connection URL: %q", connection)
	}
	cfg := mysql.NewConfig()
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net, cfg.Addr = "tcp", u.Host
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	cfg.ParseTime, cfg.Loc = true, time.UTC
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 2*time.Second, 5*time.Second, 5*time.Second
	return cfg.FormatDSN(), nil
}

// Accepted records that the API answered 202 to a provision request for
// target on node; the latest one per node is what Finish checks.
func (c *Checker) Accepted(node, target string) {
	c.mu.Lock()
	c.accepted[node] = target
	delete(c.unanswered, node)
	c.mu.Unlock()
}

// Unanswered records a provision request that got a server error or no
// answer: it may have been acted on, so the node may also end where it
// would have taken the node.
func (c *Checker) Unanswered(node, target string) {
	c.mu.Lock()
	c.unanswered[node] = append(c.unanswered[node], target)
	c.mu.Unlock()
}

// Violations returns what has been found so far.
func (c *Checker) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Violation(nil), c.violations...)
}

// PollErrors counts the polls that could not read the database (expected
// while it restarts) and gives the last error.
func (c *Checker) PollErrors() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pollErrors, c.lastErr
}

func (c *Checker) run(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		c.poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *Checker) poll(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := errors.Join(c.checkNodes(qctx), c.checkOrphans(qctx), c.checkAudit(qctx))
	if err != nil && ctx.Err() == nil {
		c.mu.Lock()
		c.pollErrors++
		c.lastErr = err
		c.mu.Unlock()
	}
}

func (c *Checker) report(invariant, node, detail string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reportLocked(invariant, node, detail)
}

// reportLocked is report with c.mu held.
func (c *Checker) reportLocked(invariant, node, detail string) {
	key := invariant + "\x00" + node + "\x00" + detail
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	c.violations = append(c.violations, Violation{Invariant: invariant, Node: node, Detail: detail, At: time.Now()})
}

// Stop ends the polling and closes the connection.
func (c *Checker) Stop() {
	c.stop()
	<-c.done
	c.db.Close()
}
