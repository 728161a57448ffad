package invariant

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/ferricbm/ferric/pkg/states"
)

// waitStates are the moving states a ramdisk callback, not a worker,
// moves on; with the worker-driven ones (states.StuckFailState) they are
// the states no node may keep past its timeout.
var waitStates = []states.State{states.DeployWait, states.CleanWait, states.InspectWait, states.RescueWait, states.ServiceWait}

func moving(s states.State) bool {
	_, stuck := states.StuckFailState(s)
	return stuck || slices.Contains(waitStates, s)
}

// failureStates are where a failed operation rests, keeping its target.
var failureStates = []states.State{states.DeployFail, states.CleanFail, states.InspectFail, states.AdoptFail,
	states.RescueFail, states.UnrescueFail, states.ServiceFail}

// endStates are the states an accepted request for a target may end in:
// its goal, or the failure state of the operation it started.
var endStates = map[string][]states.State{
	"active":   {states.Active, states.DeployFail},
	"rebuild":  {states.Active, states.DeployFail},
	"deleted":  {states.Available, states.CleanFail, states.Error},
	"provide":  {states.Available, states.CleanFail},
	"manage":   {states.Manageable, states.Enroll},
	"clean":    {states.Manageable, states.CleanFail},
	"inspect":  {states.Manageable, states.InspectFail},
	"rescue":   {states.Rescue, states.RescueFail},
	"unrescue": {states.Active, states.UnrescueFail},
}

type nodeRow struct {
	uuid        string
	state       states.State
	target      sql.NullString
	reservation sql.NullString
	epoch       sql.NullInt64
	updated     sql.NullTime
	holderBeat  sql.NullTime
}

func (c *Checker) readNodes(ctx context.Context) ([]nodeRow, error) {
	rows, err := c.db.QueryContext(ctx, `SELECT n.uuid, COALESCE(n.provision_state, ''), n.target_provision_state,
		n.reservation, n.reservation_epoch, n.provision_updated_at, cd.updated_at
		FROM nodes n LEFT JOIN conductors cd ON cd.hostname = n.reservation`)
	if err != nil {
		return nil, fmt.Errorf("read nodes: %w", err)
	}
	defer rows.Close()
	var out []nodeRow
	for rows.Next() {
		var r nodeRow
		var state string
		if err := rows.Scan(&r.uuid, &state, &r.target, &r.reservation, &r.epoch, &r.updated, &r.holderBeat); err != nil {
			return nil, fmt.Errorf("read nodes: %w", err)
		}
		r.state = states.State(state)
		out = append(out, r)
	}
	return out, rows.Err()
}

// checkNodes applies the per-row invariants to every node.
func (c *Checker) checkNodes(ctx context.Context) error {
	nodes, err := c.readNodes(ctx)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range nodes {
		switch {
		case states.IsStable(n.state) && n.target.Valid:
			c.reportLocked(HalfApplied, n.uuid, fmt.Sprintf("stable state %s with target %s", n.state, n.target.String))
		case moving(n.state) && !n.target.Valid:
			c.reportLocked(HalfApplied, n.uuid, fmt.Sprintf("moving state %s without a target", n.state))
		}
		if !n.reservation.Valid && n.epoch.Valid {
			c.reportLocked(HalfApplied, n.uuid, fmt.Sprintf("reservation epoch %d without a reservation", n.epoch.Int64))
		}
		if moving(n.state) && n.updated.Valid && now.Sub(n.updated.Time) > c.bounds.Transition {
			c.reportLocked(StuckTransition, n.uuid, fmt.Sprintf("%s since %s", n.state, n.updated.Time.Format(time.RFC3339)))
		}
		c.checkLock(n, now)
	}
	return nil
}

// checkLock flags a reservation still held Takeover after its holder's
// last heartbeat, or, for a holder with no conductor row, Takeover after
// the checker first saw it.
func (c *Checker) checkLock(n nodeRow, now time.Time) {
	if !n.reservation.Valid {
		delete(c.staleSince, n.uuid)
		return
	}
	var since time.Time
	if n.holderBeat.Valid {
		since = n.holderBeat.Time
	} else if s, ok := c.staleSince[n.uuid]; ok {
		since = s
	} else {
		c.staleSince[n.uuid] = now
		return
	}
	if now.Sub(since) > c.bounds.Takeover {
		c.reportLocked(OrphanLock, n.uuid, fmt.Sprintf("held by %s, whose last heartbeat was %s ago",
			n.reservation.String, now.Sub(since).Round(time.Second)))
	}
}

// checkOrphans finds rows that belong to nodes that no longer exist: a
// node deletion applied in part.
func (c *Checker) checkOrphans(ctx context.Context) error {
	for _, table := range []string{"ports", "portgroups"} {
		rows, err := c.db.QueryContext(ctx, "SELECT t.uuid FROM "+table+" t LEFT JOIN nodes n ON n.id = t.node_id WHERE n.id IS NULL")
		if err != nil {
			return fmt.Errorf("read %s: %w", table, err)
		}
		var orphans []string
		for rows.Next() {
			var u string
			if err := rows.Scan(&u); err != nil {
				rows.Close()
				return fmt.Errorf("read %s: %w", table, err)
			}
			orphans = append(orphans, u)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("read %s: %w", table, err)
		}
		for _, u := range orphans {
			c.report(HalfApplied, "-", fmt.Sprintf("%s row %s of a deleted node", table, u))
		}
	}
	return nil
}

// Finish waits, up to the Settle bound, for every node with an accepted
// request to come to rest, checks that each rests where its last accepted
// request could end, stops the checker and returns every violation found.
func (c *Checker) Finish(ctx context.Context) ([]Violation, error) {
	defer c.Stop()
	deadline := time.Now().Add(c.bounds.Settle)
	for {
		pending, err := c.unsettled(ctx)
		if err != nil && time.Now().After(deadline) {
			return c.Violations(), err
		}
		if err == nil && (len(pending) == 0 || time.Now().After(deadline)) {
			for node, detail := range pending {
				c.report(RequestLost, node, detail)
			}
			return c.Violations(), nil
		}
		select {
		case <-ctx.Done():
			return c.Violations(), ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

// unsettled maps each node whose last accepted request has not ended in
// one of its end states to what it shows instead.
func (c *Checker) unsettled(ctx context.Context) (map[string]string, error) {
	nodes, err := c.readNodes(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	found := map[string]bool{}
	for _, n := range nodes {
		target, ok := c.accepted[n.uuid]
		if !ok {
			continue
		}
		found[n.uuid] = true
		atRest := !n.reservation.Valid && ((states.IsStable(n.state) && !n.target.Valid) || slices.Contains(failureStates, n.state))
		if !atRest || !c.mayEnd(n.state, append([]string{target}, c.unanswered[n.uuid]...)) {
			out[n.uuid] = fmt.Sprintf("request %q accepted, node in %s (target %q, reservation %q)",
				target, n.state, n.target.String, n.reservation.String)
		}
	}
	for node, target := range c.accepted {
		if !found[node] {
			out[node] = fmt.Sprintf("request %q accepted, node gone", target)
		}
	}
	return out, nil
}

// mayEnd tells whether a node may rest in s after requests for targets.
func (c *Checker) mayEnd(s states.State, targets []string) bool {
	for _, t := range targets {
		want, known := endStates[t]
		if !known || slices.Contains(want, s) {
			return true
		}
	}
	return false
}
