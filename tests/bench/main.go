// Command bench measures a Ferric deployment on loopback: it starts
// ferric-api and one ferric-conductor over RabbitMQ with a fresh MySQL
// database, seeds 2,000 nodes, and prints throughput and latency for the
// API calls that matter, the RPC round trip, and how long 1,000 nodes take
// to go manage -> provide -> active with fake-hardware, beside the targets.
// Each part is a section with its own set-up; -sections picks some of them.
// Every loop is bounded.
//
//	go run ./bench                  (from the tests module; `make bench`)
//	go run ./bench -sections api
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/rpc"
	"github.com/ferricbm/ferric/tests/harness"
)

type settings struct {
	concurrency int
	seed        int
	deployNodes int
	patches     int
	creates     int
	rpcCalls    int
	keep        bool
	scale       scaleSettings
	chaos       chaosSettings
	soak        soakSettings
}

func main() {
	var s settings
	flag.IntVar(&s.concurrency, "concurrency", 16, "concurrent clients")
	flag.IntVar(&s.seed, "seed", 2000, "nodes inserted directly into MySQL")
	flag.IntVar(&s.deployNodes, "deploy", 1000, "seeded nodes driven manage -> provide -> active")
	flag.IntVar(&s.patches, "patches", 3000, "PATCH /v1/nodes/{uuid} requests")
	flag.IntVar(&s.creates, "creates", 1000, "POST /v1/nodes requests")
	flag.IntVar(&s.rpcCalls, "rpc", 3000, "RPC calls over RabbitMQ")
	flag.BoolVar(&s.keep, "keep", false, "keep the work directory (config, logs)")
	s.scale.steps = nodeSteps{2000}
	flag.Var(&s.scale.steps, "scale-nodes", "scale: nodes on the conductor, or a rising list (10000,25000,50000) run one step after another (the target is 10,000)")
	flag.DurationVar(&s.scale.latency, "scale-latency", 200*time.Millisecond, "scale: latency of every fake power call")
	flag.DurationVar(&s.scale.interval, "scale-interval", 30*time.Second, "scale: [conductor] sync_power_state_interval (the target is 120s)")
	flag.IntVar(&s.scale.workers, "scale-workers", 64, "scale: [conductor] periodic_max_workers")
	flag.IntVar(&s.scale.cycles, "scale-cycles", 3, "scale: power sync cycles to watch")
	flag.IntVar(&s.chaos.runs, "chaos-runs", 20, "chaos: runs of each scenario")
	flag.StringVar(&s.chaos.scenarios, "chaos-scenarios", "", "chaos: comma-separated scenarios (default all: "+strings.Join(chaosScenarioNames(), ",")+")")
	flag.DurationVar(&s.soak.duration, "soak-duration", 30*time.Minute, "soak: how long the load runs")
	flag.DurationVar(&s.soak.interval, "soak-interval", 30*time.Second, "soak: time between samples")
	flag.IntVar(&s.soak.nodes, "soak-nodes", 40, "soak: fake-hardware nodes cycled")
	flag.IntVar(&s.soak.workers, "soak-workers", 8, "soak: load workers")
	flag.IntVar(&s.soak.labNodes, "soak-lab-nodes", 1, "soak: lab nodes cycled deploy -> undeploy (with automated clean) on a conductor of their own; 0: none")
	only := flag.String("sections", strings.Join(sectionNames(), ","), "comma-separated sections to run (chaos and soak run only when named)")
	flag.Parse()
	if s.deployNodes > s.seed {
		s.deployNodes = s.seed
	}
	if err := run(s, strings.Split(*only, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// A section measures one part of Ferric with its own set-up and returns
// its rows of the report.
type section struct {
	name string
	run  func(ctx context.Context, s settings) ([]row, error)
	// onDemand sections take an hour or more, or a 100,000-node fleet, and
	// run only when named.
	onDemand bool
}

var sections = []section{
	{"api", benchAPI, false},
	{"erase", benchErase, false},
	{"clean", benchClean, false},
	{"iscsi", benchISCSI, false},
	{"deploy", benchDeploy, false},
	{"vmedia", benchVMedia, false},
	{"scale", benchScale, false},
	{"hostile", benchHostile, false},
	{"fleet", benchFleet, true},
	{"chaos", benchChaos, true},
	{"soak", benchSoak, true},
}

// sectionNames are the sections run by default.
func sectionNames() []string {
	var names []string
	for _, sec := range sections {
		if !sec.onDemand {
			names = append(names, sec.name)
		}
	}
	return names
}

func knownSection(name string) bool {
	return slices.ContainsFunc(sections, func(sec section) bool { return sec.name == name })
}

func run(s settings, only []string) error {
	for _, name := range only {
		if !knownSection(name) {
			return fmt.Errorf("unknown section %q (have %s, chaos, soak)", name, strings.Join(sectionNames(), ", "))
		}
	}
	var rows []row
	for _, sec := range sections {
		if !slices.Contains(only, sec.name) {
			continue
		}
		fmt.Printf("== section %s\n", sec.name)
		got, err := sec.run(context.Background(), s)
		if err != nil {
			return fmt.Errorf("section %s: %w", sec.name, err)
		}
		rows = append(rows, got...)
	}
	printTable(s, rows)
	return nil
}

// row is one line of the report.
type row struct {
	name, measured, target, verdict string
}

// benchAPI measures the API service and the fake-hardware conductor path
// on MySQL and RabbitMQ.
func benchAPI(ctx context.Context, s settings) ([]row, error) {
	work, done, err := workDir(s, "ferric-bench-")
	if err != nil {
		return nil, err
	}
	defer done()
	rig, err := startFakeRig(ctx, work, "bench", func(c harness.Config) harness.Config {
		// Periodic power sync would take node locks under the PATCH and
		// deploy measurements; keep it out of the way as in production,
		// where it runs every minute.
		return c.Set("conductor", "sync_power_state_interval", time.Hour).
			Set("conductor", "sync_local_state_interval", time.Hour)
	})
	if err != nil {
		return nil, err
	}
	defer rig.Close()
	api, apiSvc, cond, store, database := rig.api, rig.apiSvc, rig.conductor, rig.store, rig.database
	mariadb, err := findProcess("mariadbd")
	if err != nil {
		return nil, err
	}
	reads := &reader{dir: work, url: api.url, version: api.version, concurrency: s.concurrency,
		pids: []serverProcess{{"api", apiSvc.PID()}, {"mariadbd", mariadb}}}
	fmt.Printf("API %s (microversion %s), conductor %s, database %s\n", api.url, api.version, cond.Host, database.Name)

	var rows []row

	fmt.Printf("creating %d nodes through the API ...\n", s.creates)
	created := make([]string, s.creates)
	res := measure(ctx, s.creates, s.concurrency, func(ctx context.Context, i int) error {
		var n struct {
			UUID string `json:"uuid"`
		}
		err := api.do(ctx, http.MethodPost, "/v1/nodes", map[string]any{
			"driver": "fake-hardware", "name": fmt.Sprintf("bench-create-%d", i),
		}, http.StatusCreated, &n)
		created[i] = n.UUID
		return err
	})
	rows = append(rows, row{"POST /v1/nodes (create)", res.String(), "≥ 20× 35-55/s = 700-1,100/s", verdict(res.rate(), 700, 1100, res.errors)})
	if created[0] == "" {
		return nil, fmt.Errorf("node create failed: %w", res.firstErr)
	}

	fmt.Printf("seeding %d nodes in MySQL ...\n", s.seed)
	seeded, err := seed(ctx, store, created[0], s.seed, s.concurrency)
	if err != nil {
		return nil, err
	}

	fmt.Println("GET /v1/nodes/{uuid} ...")
	nodePaths := make([]string, len(seeded))
	for i, u := range seeded {
		nodePaths[i] = "/v1/nodes/" + u
	}
	res, err = reads.read(ctx, "GET /v1/nodes/{uuid}", nodePaths, func(ctx context.Context, path string) error {
		var n struct {
			UUID string `json:"uuid"`
		}
		if err := api.do(ctx, http.MethodGet, path, nil, http.StatusOK, &n); err != nil {
			return err
		}
		if want := strings.TrimPrefix(path, "/v1/nodes/"); n.UUID != want {
			return fmt.Errorf("GET %s answered node %q", path, n.UUID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rows = append(rows, row{"GET /v1/nodes/{uuid}", res.String(), "≥ 50× 135-205/s = 6,750-10,250/s", verdict(res.rate(), 6750, 10250, res.errors)})

	fmt.Println("GET /v1/nodes/detail?limit=100 ...")
	ordered, err := api.listUUIDs(ctx)
	if err != nil {
		return nil, err
	}
	if len(ordered) <= 100 {
		return nil, fmt.Errorf("only %d nodes listed", len(ordered))
	}
	res, err = reads.read(ctx, "GET /v1/nodes/detail?limit=100", pagePaths("/v1/nodes/detail?limit=100", ordered),
		func(ctx context.Context, path string) error {
			var page struct {
				Nodes []struct {
					UUID           string `json:"uuid"`
					ProvisionState string `json:"provision_state"`
				} `json:"nodes"`
			}
			if err := api.do(ctx, http.MethodGet, path, nil, http.StatusOK, &page); err != nil {
				return err
			}
			if len(page.Nodes) != 100 || page.Nodes[99].UUID == "" || page.Nodes[99].ProvisionState == "" {
				return fmt.Errorf("GET %s: page of %d nodes, want 100 detailed ones", path, len(page.Nodes))
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	rows = append(rows, row{"GET /v1/nodes/detail?limit=100", res.String(), "≥ 20× 25-37/s = 500-740/s", verdict(res.rate(), 500, 740, res.errors)})

	fmt.Println("PATCH /v1/nodes/{uuid} ...")
	// Worker-disjoint nodes would need coordination; consecutive indices on
	// a 2,000-node pool make two in-flight patches on one node rare, and a
	// 409 NodeLocked would show up in the error count.
	patchPool := seeded[s.deployNodes:]
	if len(patchPool) == 0 {
		patchPool = seeded
	}
	res = measure(ctx, s.patches, s.concurrency, func(ctx context.Context, i int) error {
		return api.do(ctx, http.MethodPatch, "/v1/nodes/"+patchPool[i%len(patchPool)], []map[string]any{
			{"op": "add", "path": "/extra/bench", "value": i},
		}, http.StatusOK, nil)
	})
	rows = append(rows, row{"PATCH /v1/nodes/{uuid} (via RPC)", res.String(), "-", ""})

	volumeRows, err := benchVolume(ctx, api, reads, store, seeded, s.concurrency)
	if err != nil {
		return nil, err
	}
	rows = append(rows, volumeRows...)

	fmt.Println("RPC round trips over RabbitMQ ...")
	rpcRows, err := benchRPC(ctx, cond.Host, seeded[0], s)
	if err != nil {
		return nil, err
	}
	rows = append(rows, rpcRows...)

	fmt.Printf("deploying %d nodes (manage -> provide -> active) ...\n", s.deployNodes)
	took, failed, err := deploy(ctx, api, seeded[:s.deployNodes], s.concurrency)
	if err != nil {
		return nil, err
	}
	measured := took.Round(10 * time.Millisecond).String()
	if failed > 0 {
		measured += fmt.Sprintf(" (%d nodes did not reach active)", failed)
	}
	v := "yes"
	if took > 10*time.Second || failed > 0 {
		v = "NO"
	}
	rows = append(rows, row{fmt.Sprintf("%d nodes manage->provide->active", s.deployNodes), measured, "≤ 10 s", v})

	return rows, nil
}

// seed inserts n copies of the node created through the API (so every
// interface field is what the API fills in) and returns their UUIDs.
func seed(ctx context.Context, store *db.Store, templateUUID string, n, concurrency int) ([]string, error) {
	return seedWith(ctx, store, templateUUID, n, concurrency, func(*model.Node) {})
}

// seedWith is seed with every copy changed by mod first.
func seedWith(ctx context.Context, store *db.Store, templateUUID string, n, concurrency int, mod func(*model.Node)) ([]string, error) {
	tmpl, err := store.GetNode(ctx, templateUUID)
	if err != nil {
		return nil, fmt.Errorf("read template node: %w", err)
	}
	uuids := make([]string, n)
	res := measure(ctx, n, concurrency, func(ctx context.Context, i int) error {
		node := *tmpl
		node.ID = 0
		node.UUID = harness.NewUUID()
		name := fmt.Sprintf("bench-seed-%d", i)
		node.Name = &name
		mod(&node)
		uuids[i] = node.UUID
		return store.CreateNode(ctx, &node)
	})
	if res.errors > 0 {
		return nil, fmt.Errorf("seeding: %d inserts failed, first: %w", res.errors, res.firstErr)
	}
	fmt.Printf("  seeded at %.0f nodes/s\n", res.rate())
	return uuids, nil
}

func benchRPC(ctx context.Context, host, nodeUUID string, s settings) ([]row, error) {
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	t, err := rpc.NewAMQP(harness.AMQPURL(), log)
	if err != nil {
		return nil, fmt.Errorf("connect to RabbitMQ: %w", err)
	}
	defer t.Close()
	c := rpc.NewClient(t, 30*time.Second).Conductor(host)
	call := func(ctx context.Context, _ int) error {
		_, err := rpc.GetSupportedBootDevices.Call(ctx, c, rpc.NodeArgs{NodeID: nodeUUID})
		return err
	}
	seq := measure(ctx, s.rpcCalls/3, 1, call)
	par := measure(ctx, s.rpcCalls, s.concurrency, call)
	return []row{
		{"RPC call round trip (1 client)", seq.String(), "-", ""},
		{fmt.Sprintf("RPC call round trip (%d clients)", s.concurrency), par.String(), "-", ""},
	}, nil
}

// deploy drives nodes through manage, provide and active, each phase
// requested for every node and then awaited, and returns the wall time.
func deploy(ctx context.Context, api *apiClient, uuids []string, concurrency int) (time.Duration, int, error) {
	start := time.Now()
	phases := []struct{ verb, state string }{
		{"manage", "manageable"},
		{"provide", "available"},
		{"active", "active"},
	}
	for _, p := range phases {
		phaseStart := time.Now()
		res := measure(ctx, len(uuids), concurrency, func(ctx context.Context, i int) error {
			return api.provision(ctx, uuids[i], p.verb)
		})
		if res.errors > 0 {
			fmt.Printf("  %s: %d requests refused, first: %v\n", p.verb, res.errors, res.firstErr)
		}
		reached, err := api.waitState(ctx, p.state, "", uuids, 2*time.Minute)
		if err != nil {
			return 0, 0, err
		}
		// Where the time goes: the requests themselves, then the wait for
		// the conductor's workers to finish.
		fmt.Printf("  %s: requests %s (%s), all %s after %s\n", p.verb, res.elapsed.Round(10*time.Millisecond),
			res.String(), p.state, time.Since(phaseStart).Round(10*time.Millisecond))
		if reached < len(uuids) {
			return time.Since(start), len(uuids) - reached, nil
		}
	}
	return time.Since(start), 0, nil
}

func verdict(rate, low, high float64, errors int64) string {
	switch {
	case errors > 0:
		return "NO (errors)"
	case rate >= high:
		return "yes"
	case rate >= low:
		return "partly"
	}
	return "NO"
}

func printTable(s settings, rows []row) {
	fmt.Printf("\nFerric benchmark: loopback, concurrency %d, %d seeded nodes, MySQL + RabbitMQ\n\n", s.concurrency, s.seed)
	w := [3]int{len("measurement"), len("measured"), len("target")}
	for _, r := range rows {
		w[0] = max(w[0], len([]rune(r.name)))
		w[1] = max(w[1], len([]rune(r.measured)))
		w[2] = max(w[2], len([]rune(r.target)))
	}
	line := func(a, b, c, d string) {
		fmt.Printf("%-*s  %-*s  %-*s  %s\n", w[0], a, w[1], b, w[2], c, d)
	}
	line("measurement", "measured", "target", "met")
	for _, r := range rows {
		line(r.name, r.measured, r.target, r.verdict)
	}
}
