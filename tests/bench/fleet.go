package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/tests/harness"
)

var (
	fleetNodes      = flag.Int("fleet-nodes", 100000, "fleet: nodes in the database")
	fleetConductors = flag.Int("fleet-conductors", 10, "fleet: ferric-conductor processes")
	fleetDeploys    = flag.String("fleet-deploys", "1000", "fleet: concurrent fake deploys to active, a comma-separated list of batches run one after another (e.g. 1000,10000)")
	fleetReads      = flag.Int("fleet-reads", 300, "fleet: requests per list measurement")
)

// fleetGroup is the conductor group of every fleet conductor and node, so
// that the conductor_group filter has a value to match.
const fleetGroup = "rack-1"

// benchFleet runs ferric-api and -fleet-conductors conductors over one
// database of -fleet-nodes fake nodes and measures what grows with the
// deployment: list pages, filtered lists, creates, many deploys at once,
// and how the nodes' owners change when a conductor joins and one leaves.
func benchFleet(ctx context.Context, s settings) ([]row, error) {
	var deploys nodeSteps
	if err := deploys.Set(*fleetDeploys); err != nil {
		return nil, fmt.Errorf("-fleet-deploys: %w", err)
	}
	deployTotal := 0
	for _, n := range deploys {
		deployTotal += n
	}
	if *fleetConductors < 2 || deployTotal >= *fleetNodes {
		return nil, fmt.Errorf("-fleet-conductors %d, -fleet-deploys %s, -fleet-nodes %d: want 2 conductors or more and fewer deploys than nodes", *fleetConductors, *fleetDeploys, *fleetNodes)
	}
	work, err := os.MkdirTemp("", "ferric-bench-fleet-")
	if err != nil {
		return nil, err
	}
	if s.keep {
		fmt.Println("work directory:", work)
	} else {
		defer os.RemoveAll(work)
	}
	fmt.Println("building binaries ...")
	bin, err := harness.Build(filepath.Join(work, "bin"))
	if err != nil {
		return nil, err
	}
	database, err := harness.CreateDatabase(ctx, "bench_fleet")
	if err != nil {
		return nil, err
	}
	defer func() { _ = database.Drop(context.Background()) }()

	timings := harness.FastTimings
	timings.CallbackTimeout = 10 * time.Minute
	// Every process holds its own pool; 11 conductors and the API must fit
	// the server's default 151 connections beside other users.
	base := harness.BaseConfig(database.Connection(), "amqp", timings).
		Set("DEFAULT", "debug", false).
		Set("conductor", "conductor_group", fleetGroup).
		Set("conductor", "sync_power_state_interval", time.Hour).
		Set("conductor", "sync_local_state_interval", time.Hour).
		Set("database", "max_pool_size", 10).
		Set("database", "max_overflow", 5)
	d := harness.NewDeployment(bin, work, base)
	defer func() { _ = d.StopAll(30 * time.Second) }()
	if err := d.DBSync(ctx); err != nil {
		return nil, err
	}
	store, err := db.Open(ctx, database.Connection())
	if err != nil {
		return nil, err
	}
	defer store.Close()
	d.ConductorReady = func(ctx context.Context, host string) error {
		members, err := store.ActiveMembers(ctx, timings.HeartbeatTimeout)
		if err != nil {
			return err
		}
		for _, m := range members {
			if m.Hostname == host {
				return nil
			}
		}
		return fmt.Errorf("conductor %s not registered yet", host)
	}
	if _, err := d.StartAPI(ctx, "api"); err != nil {
		return nil, err
	}
	api := newAPI(d.APIURL)
	if api.version, err = harness.MaxVersion(ctx, d.APIURL); err != nil {
		return nil, err
	}
	d.Base = base.Clone().Set("database", "max_pool_size", 3).Set("database", "max_overflow", 3)
	var conductors []*harness.Service
	for i := range *fleetConductors {
		c, err := d.StartConductor(ctx, fmt.Sprintf("conductor-%d", i))
		if err != nil {
			return nil, err
		}
		conductors = append(conductors, c)
	}

	var tmpl struct {
		UUID string `json:"uuid"`
	}
	if err := api.do(ctx, http.MethodPost, "/v1/nodes", map[string]any{
		"driver": "fake-hardware", "name": "bench-fleet-template", "conductor_group": fleetGroup,
	}, http.StatusCreated, &tmpl); err != nil {
		return nil, err
	}
	fmt.Printf("seeding %d nodes over %d conductors ...\n", *fleetNodes, *fleetConductors)
	pool, err := seedWith(ctx, store, tmpl.UUID, deployTotal, s.concurrency, func(n *model.Node) {
		n.Name = ptr("bench-fleet-" + n.UUID)
		n.ProvisionState = ptr("available")
		n.PowerState = ptr("power off")
	})
	if err != nil {
		return nil, err
	}
	// The rest spread over ten resource classes and owners and two
	// provision states, as a filter would find them.
	var k atomic.Int64
	if _, err := seedWith(ctx, store, tmpl.UUID, *fleetNodes-deployTotal, s.concurrency, func(n *model.Node) {
		i := k.Add(1)
		n.Name = ptr("bench-fleet-" + n.UUID)
		n.ResourceClass = ptr(fmt.Sprintf("class-%d", i%10))
		n.Owner = ptr(fmt.Sprintf("owner-%d", i%10))
		n.ProvisionState = ptr("available")
		if i%3 == 0 {
			n.ProvisionState = ptr("manageable")
		}
		n.PowerState = ptr("power off")
	}); err != nil {
		return nil, err
	}

	fmt.Println("listing every node's uuid for page markers ...")
	ordered, err := api.listUUIDs(ctx)
	if err != nil {
		return nil, err
	}
	var rows []row
	lists := []struct {
		name, path string
		p99        time.Duration
		pageSize   int
	}{
		{"GET /v1/nodes?limit=1000", "/v1/nodes?limit=1000", 300 * time.Millisecond, 1000},
		{"GET /v1/nodes/detail?limit=100", "/v1/nodes/detail?limit=100", 100 * time.Millisecond, 100},
		{"GET /v1/nodes?provision_state=manageable&limit=100", "/v1/nodes?provision_state=manageable&limit=100", 50 * time.Millisecond, 100},
		{"GET /v1/nodes?driver=fake-hardware&limit=100", "/v1/nodes?driver=fake-hardware&limit=100", 50 * time.Millisecond, 100},
		{"GET /v1/nodes?conductor_group=" + fleetGroup + "&limit=100", "/v1/nodes?conductor_group=" + fleetGroup + "&limit=100", 50 * time.Millisecond, 100},
		{"GET /v1/nodes?resource_class=class-3&limit=100", "/v1/nodes?resource_class=class-3&limit=100", 50 * time.Millisecond, 100},
		{"GET /v1/nodes?owner=owner-3&limit=100", "/v1/nodes?owner=owner-3&limit=100", 50 * time.Millisecond, 100},
	}
	for _, l := range lists {
		fmt.Println(l.name, "...")
		res := measure(ctx, *fleetReads, 4, func(ctx context.Context, i int) error {
			path := l.path
			// Nine pages in ten start at a marker somewhere in the table.
			if i%10 != 0 {
				path += "&marker=" + ordered[(i*7919)%(len(ordered)-l.pageSize)]
			}
			var page struct {
				Nodes []struct {
					UUID string `json:"uuid"`
				} `json:"nodes"`
			}
			if err := api.do(ctx, http.MethodGet, path, nil, http.StatusOK, &page); err != nil {
				return err
			}
			if len(page.Nodes) == 0 {
				return fmt.Errorf("GET %s: empty page", path)
			}
			return nil
		})
		v := yesNo(res.p99 < l.p99 && res.errors == 0)
		rows = append(rows, early(row{l.name, res.String(), fmt.Sprintf("p99 < %s", l.p99), v}))
	}

	fmt.Printf("creating %d nodes through the API ...\n", s.creates)
	res := measure(ctx, s.creates, s.concurrency, func(ctx context.Context, i int) error {
		return api.do(ctx, http.MethodPost, "/v1/nodes", map[string]any{
			"driver": "fake-hardware", "name": fmt.Sprintf("bench-fleet-create-%d", i), "conductor_group": fleetGroup,
		}, http.StatusCreated, nil)
	})
	rows = append(rows, early(row{fmt.Sprintf("POST /v1/nodes (create, %d in the database)", *fleetNodes), res.String(), "-", ""}))

	for _, n := range deploys {
		batch := pool[:n]
		pool = pool[n:]
		fmt.Printf("deploying %d nodes at once (available -> active) ...\n", n)
		start := time.Now()
		req := measure(ctx, n, 64, func(ctx context.Context, i int) error {
			return api.provision(ctx, batch[i], "active")
		})
		reached, err := api.waitState(ctx, "active", "deploy failed", batch, 5*time.Minute)
		if err != nil {
			return nil, err
		}
		took := time.Since(start)
		target := 5 * time.Second
		if n > 1000 {
			target = 60 * time.Second
		}
		measured := fmt.Sprintf("%s (requests %s)", took.Round(10*time.Millisecond), req.String())
		if reached < n {
			measured += fmt.Sprintf(", %d not active", n-reached)
		}
		rows = append(rows, early(row{fmt.Sprintf("%d concurrent fake deploys to active", n), measured,
			fmt.Sprintf("< %s", target), yesNo(reached == n && took < target && req.errors == 0)}))
	}

	ringRows, err := ringChanges(ctx, d, api, conductors, timings.HeartbeatInterval)
	if err != nil {
		return nil, err
	}
	return append(rows, ringRows...), nil
}

// ringChanges starts one more conductor, then stops the first one, and
// reports for each change the share of nodes whose owner (as the API maps
// them) changed, how long until the API's ring settled, and whether every
// node then had exactly one live owner.
func ringChanges(ctx context.Context, d *harness.Deployment, api *apiClient, conductors []*harness.Service, heartbeat time.Duration) ([]row, error) {
	live := map[string]bool{}
	for _, c := range conductors {
		live[c.Host] = true
	}
	before, err := owners(ctx, api)
	if err != nil {
		return nil, err
	}
	n := len(conductors) + 1
	fmt.Println("a conductor joins ...")
	var joined *harness.Service
	after, settled, err := ringChange(ctx, api, func() error {
		joined, err = d.StartConductor(ctx, "conductor-joiner")
		return err
	}, func(o map[string]string) bool {
		for _, h := range o {
			if h == joined.Host {
				return true
			}
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	live[joined.Host] = true
	joinRow := early(ringRow("conductor joins", before, after, live, settled, heartbeat, n))

	fmt.Println("a conductor leaves ...")
	leaving := conductors[0]
	final, settled, err := ringChange(ctx, api, func() error {
		return leaving.Stop(30 * time.Second)
	}, func(o map[string]string) bool {
		for _, h := range o {
			if h == leaving.Host {
				return false
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	delete(live, leaving.Host)
	leaveRow := ringRow("conductor leaves", after, final, live, settled, heartbeat, n)
	return []row{joinRow, leaveRow}, nil
}

func ringRow(change string, before, after map[string]string, live map[string]bool, settled, heartbeat time.Duration, n int) row {
	moved, unowned := 0, 0
	for u, h := range after {
		if before[u] != h {
			moved++
		}
		if !live[h] {
			unowned++
		}
	}
	share := float64(moved) / float64(len(after))
	measured := fmt.Sprintf("%d of %d nodes moved (%.2f/N, N=%d), %d without a live owner, settled in %s",
		moved, len(after), share*float64(n), n, unowned, settled.Round(10*time.Millisecond))
	ok := share <= 1.5/float64(n) && unowned == 0 && settled < 2*heartbeat
	return row{"ring: " + change, measured,
		fmt.Sprintf("≤ 1.5/N moved, every node one live owner, settled < 2 heartbeats (%s)", 2*heartbeat), yesNo(ok)}
}

// ringChange makes a change to the conductors and returns every node's
// owner once the API's ring has settled, and how long after the change
// began it settled. Listing 100,000 owners takes about a second, too
// coarse to time the change by; one page of them, read again and again
// from before the change, times it: each process swaps its ring whole, so
// the page's owners reach their final values when the API's ring has
// taken the change. The time includes starting or stopping the process.
func ringChange(ctx context.Context, api *apiClient, change func() error, done func(map[string]string) bool) (map[string]string, time.Duration, error) {
	type read struct {
		at     time.Duration
		owners map[string]string
	}
	var reads []read
	pctx, stop := context.WithCancel(ctx)
	probed := make(chan error, 1)
	began := time.Now()
	go func() {
		for pctx.Err() == nil {
			o, _, err := ownersPage(pctx, api, "")
			if pctx.Err() != nil {
				break
			}
			if err != nil {
				probed <- err
				return
			}
			reads = append(reads, read{time.Since(began), o})
		}
		probed <- nil
	}()
	final, err := func() (map[string]string, error) {
		if err := change(); err != nil {
			return nil, err
		}
		return waitOwners(ctx, api, began, done)
	}()
	stop()
	if perr := <-probed; err == nil {
		err = perr
	}
	if err != nil {
		return nil, 0, err
	}
	// The earliest read from which every read agrees with the final owners.
	settled := time.Since(began)
	for i := len(reads) - 1; i >= 0; i-- {
		agrees := true
		for u, h := range reads[i].owners {
			if final[u] != h {
				agrees = false
				break
			}
		}
		if !agrees {
			break
		}
		settled = reads[i].at
	}
	return final, settled, nil
}

// waitOwners re-reads the owners until done holds and two listings in a
// row agree (one listing may span the moment the API's ring changed).
func waitOwners(ctx context.Context, api *apiClient, since time.Time, done func(map[string]string) bool) (map[string]string, error) {
	var prev map[string]string
	for {
		o, err := owners(ctx, api)
		if err != nil {
			return nil, err
		}
		if done(o) && maps.Equal(o, prev) {
			return o, nil
		}
		prev = o
		if time.Since(since) > 5*time.Minute {
			return nil, fmt.Errorf("the API's node owners did not settle within %s", time.Since(since).Round(time.Second))
		}
	}
}

// owners is the conductor the API names for every node.
func owners(ctx context.Context, api *apiClient) (map[string]string, error) {
	out := map[string]string{}
	marker := ""
	for {
		page, last, err := ownersPage(ctx, api, marker)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, page)
		if len(page) < 1000 {
			return out, nil
		}
		marker = last
	}
}

// ownersPage reads the owners of the 1,000 nodes after marker, and the
// last node's uuid for the next page.
func ownersPage(ctx context.Context, api *apiClient, marker string) (map[string]string, string, error) {
	q := url.Values{"fields": {"uuid,conductor"}, "limit": {"1000"}}
	if marker != "" {
		q.Set("marker", marker)
	}
	var page struct {
		Nodes []struct {
			UUID      string `json:"uuid"`
			Conductor string `json:"conductor"`
		} `json:"nodes"`
	}
	if err := api.do(ctx, http.MethodGet, "/v1/nodes?"+q.Encode(), nil, http.StatusOK, &page); err != nil {
		return nil, "", err
	}
	out := make(map[string]string, len(page.Nodes))
	last := ""
	for _, n := range page.Nodes {
		out[n.UUID] = n.Conductor
		last = n.UUID
	}
	return out, last, nil
}

// early prints a row as soon as it is measured: a long fleet run that is
// stopped half-way still shows what it found.
func early(r row) row {
	fmt.Printf("  %s: %s (target %s) %s\n", r.name, r.measured, r.target, r.verdict)
	return r
}
