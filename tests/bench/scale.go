package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/tests/harness"
)

// scaleSettings size the scale section; the target is 10,000 nodes
// with 200 ms power calls on one conductor in a 120 s interval, and the
// largest count that still keeps up (aim 50,000) found by rising steps.
type scaleSettings struct {
	steps    nodeSteps
	latency  time.Duration
	interval time.Duration
	workers  int
	cycles   int
}

// nodeSteps is a rising list of node counts, each measured in turn on the
// same conductor with the nodes of the steps before it kept.
type nodeSteps []int

func (n *nodeSteps) String() string {
	parts := make([]string, len(*n))
	for i, v := range *n {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

func (n *nodeSteps) Set(v string) error {
	var steps nodeSteps
	for _, part := range strings.Split(v, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || c <= 0 {
			return fmt.Errorf("node count %q is not a positive integer", part)
		}
		if len(steps) > 0 && c <= steps[len(steps)-1] {
			return fmt.Errorf("node counts must rise: %d after %d", c, steps[len(steps)-1])
		}
		steps = append(steps, c)
	}
	*n = steps
	return nil
}

// benchScale puts nodes whose fake BMC answers after a delay on one
// conductor and watches power sync run at each step's node count: cycle
// time against the interval, whether every node was read, how late cycles
// start, how many workers the cycle kept busy, the API's node GET latency
// meanwhile, and the conductor's CPU and memory per 1,000 nodes. The last
// row is the largest step whose every cycle fitted the interval.
func benchScale(ctx context.Context, s settings) ([]row, error) {
	sc := s.scale
	work, done, err := workDir(s, "ferric-bench-scale-")
	if err != nil {
		return nil, err
	}
	defer done()
	rig, err := startFakeRig(ctx, work, "bench_scale", func(c harness.Config) harness.Config {
		return c.Set("conductor", "sync_power_state_interval", sc.interval).
			Set("conductor", "periodic_max_workers", sc.workers).
			Set("conductor", "workers_pool_size", sc.workers+32).
			Set("conductor", "sync_local_state_interval", time.Hour)
	})
	if err != nil {
		return nil, err
	}
	defer rig.Close()
	api, cond, store := rig.api, rig.conductor, rig.store

	var tmpl struct {
		UUID string `json:"uuid"`
	}
	if err := api.do(ctx, http.MethodPost, "/v1/nodes", map[string]any{
		"driver": "fake-hardware", "name": "bench-scale-template",
		"driver_info": map[string]any{"fake_latency": sc.latency.String()},
	}, http.StatusCreated, &tmpl); err != nil {
		return nil, err
	}

	var (
		rows   []row
		seeded []string
		keptUp int
	)
	for _, target := range sc.steps {
		fmt.Printf("seeding %d more nodes (%d in all) with %s power calls ...\n", target-len(seeded), target, sc.latency)
		more, err := seedWith(ctx, store, tmpl.UUID, target-len(seeded), s.concurrency, func(n *model.Node) {
			n.Name = ptr("bench-scale-" + n.UUID)
			n.ProvisionState = ptr("available")
			n.PowerState = ptr("power off")
		})
		if err != nil {
			return nil, err
		}
		seeded = append(seeded, more...)
		step, fits, err := watchSync(ctx, api, cond, sc, seeded)
		if err != nil {
			return nil, err
		}
		rows = append(rows, step...)
		if !fits {
			break
		}
		keptUp = target
	}
	verdict := "yes"
	if keptUp < 50000 {
		verdict = "NO"
	}
	return append(rows, row{
		"largest count per conductor that keeps up",
		fmt.Sprintf("%d of steps %s (%d workers)", keptUp, sc.steps.String(), sc.workers),
		"50,000", verdict,
	}), nil
}

// watchSync watches sc.cycles power sync cycles that read all of nodes
// while four clients read random nodes, and reports whether every one of
// them fitted the interval.
func watchSync(ctx context.Context, api *apiClient, cond *harness.Service, sc scaleSettings, nodes []string) ([]row, bool, error) {
	before, err := syncCycles(cond.LogPath)
	if err != nil {
		return nil, false, err
	}
	cpu0, err := processCPU(cond.PID())
	if err != nil {
		return nil, false, err
	}
	start := time.Now()
	fmt.Printf("watching %d power sync cycles over %d nodes (interval %s, %d workers) while reading nodes ...\n", sc.cycles, len(nodes), sc.interval, sc.workers)
	ideal := sc.latency * time.Duration(len(nodes)/max(sc.workers, 1)+1)
	// The cycle running when seeding ended read only part of the nodes; the
	// next full one starts within an interval, or right after a long cycle.
	deadline := start.Add(time.Duration(sc.cycles+2) * max(sc.interval, 2*ideal))
	var full []cycle
	// One client asks the conductor to validate nodes throughout: an RPC
	// round trip that must not wait behind the sync's workers.
	getsDone := make(chan struct{})
	var rpcs result
	var probe sync.WaitGroup
	probe.Go(func() {
		rpcs = readUntil(ctx, 1, func(ctx context.Context, i int) error {
			return api.do(ctx, http.MethodGet, "/v1/nodes/"+nodes[(i*104729)%len(nodes)]+"/validate", nil, http.StatusOK, nil)
		}, func() (bool, error) {
			select {
			case <-getsDone:
				return true, nil
			default:
				return false, nil
			}
		})
	})
	gets := readUntil(ctx, 4, func(ctx context.Context, i int) error {
		return api.do(ctx, http.MethodGet, "/v1/nodes/"+nodes[(i*7919)%len(nodes)], nil, http.StatusOK, nil)
	}, func() (bool, error) {
		all, err := syncCycles(cond.LogPath)
		full = full[:0]
		for _, c := range all[len(before):] {
			if c.checked >= len(nodes) {
				full = append(full, c)
			}
		}
		return len(full) >= sc.cycles || time.Now().After(deadline), err
	})
	close(getsDone)
	probe.Wait()
	if gets.firstErr != nil && gets.n == 0 {
		return nil, false, gets.firstErr
	}
	elapsed := time.Since(start)
	cpu1, err := processCPU(cond.PID())
	if err != nil {
		return nil, false, err
	}
	rss, err := processRSS(cond.PID())
	if err != nil {
		return nil, false, err
	}
	label := fmt.Sprintf("%d nodes, %s power calls", len(nodes), sc.latency)
	if len(full) == 0 {
		return []row{{"power sync cycle (" + label + ")", fmt.Sprintf("no cycle read every node within %s", elapsed.Round(time.Second)), "≤ interval", "NO"}}, false, nil
	}
	var longest, latest time.Duration
	for _, c := range full {
		longest, latest = max(longest, c.took), max(latest, c.late)
	}
	// A cycle that waits latency per node on w workers takes nodes×latency/w;
	// the workers it kept busy on average are the inverse.
	busy := float64(len(nodes)) * sc.latency.Seconds() / longest.Seconds()
	per1k := float64(len(nodes)) / 1000
	fits := len(full) >= sc.cycles && longest <= sc.interval
	getVerdict := "yes"
	if gets.p99 >= 20*time.Millisecond || gets.errors > 0 {
		getVerdict = "NO"
	}
	return []row{
		{"power sync cycle, longest (" + label + ")", fmt.Sprintf("%s of %s interval, %d full cycles", round(longest), sc.interval, len(full)), "≤ interval (10,000 nodes in 120 s)", yesNo(fits)},
		{"  start lag, largest", round(latest).String(), "-", ""},
		{"  workers busy (mean)", fmt.Sprintf("%.1f of %d", busy, sc.workers), "-", ""},
		{"  GET /v1/nodes/{uuid} during sync", gets.String(), "p99 < 20 ms", getVerdict},
		{"  GET /v1/nodes/{uuid}/validate (RPC) during sync", rpcs.String(), "every call answered", yesNo(rpcs.n > 0 && rpcs.errors == 0)},
		{"  conductor CPU per 1,000 nodes", fmt.Sprintf("%.2f%% of a core", 100*(cpu1-cpu0).Seconds()/elapsed.Seconds()/per1k), "-", ""},
		{"  conductor RSS per 1,000 nodes", fmt.Sprintf("%.1f MiB (%.0f MiB total)", float64(rss)/per1k/(1<<20), float64(rss)/(1<<20)), "-", ""},
	}, fits, nil
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// readUntil runs op on concurrency goroutines until done reports true
// (asked every second) and records every call's latency.
func readUntil(ctx context.Context, concurrency int, op func(ctx context.Context, i int) error, done func() (bool, error)) result {
	var (
		mu   sync.Mutex
		lat  []time.Duration
		res  result
		next atomic.Int64
		wg   sync.WaitGroup
	)
	stop := make(chan struct{})
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				t := time.Now()
				err := op(ctx, int(next.Add(1)))
				d := time.Since(t)
				mu.Lock()
				lat = append(lat, d)
				if err != nil {
					res.errors++
					if res.firstErr == nil {
						res.firstErr = err
					}
				}
				mu.Unlock()
			}
		})
	}
	for {
		time.Sleep(time.Second)
		finished, err := done()
		if err != nil || finished || ctx.Err() != nil {
			if err != nil {
				mu.Lock()
				res.firstErr = err
				mu.Unlock()
			}
			break
		}
	}
	close(stop)
	wg.Wait()
	res.elapsed = time.Since(start)
	slices.Sort(lat)
	res.n, res.p50, res.p99 = len(lat), pct(lat, 0.50), pct(lat, 0.99)
	return res
}

// cycle is one logged power sync run: how long it took, how late it
// started, and how many nodes it read.
type cycle struct {
	took, late time.Duration
	checked    int
}

var (
	syncRunLine   = regexp.MustCompile(`Periodic task run`)
	syncJob       = regexp.MustCompile(`job"?[=:]"?sync_power_states\b`)
	syncCycleLine = regexp.MustCompile(`Power sync cycle`)
	checkedField  = regexp.MustCompile(`checked"?[=:]([0-9]+)`)
	tookField     = regexp.MustCompile(`took"?[=:]([0-9.e+-]+)`)
	lateField     = regexp.MustCompile(`late"?[=:]([0-9.e+-]+)`)
)

// syncCycles reads the power sync runs the conductor logged; each run's
// summary ("Power sync cycle") comes just before its timing.
func syncCycles(logPath string) ([]cycle, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		out     []cycle
		checked int
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if syncCycleLine.MatchString(line) {
			if m := checkedField.FindStringSubmatch(line); m != nil {
				checked, _ = strconv.Atoi(m[1])
			}
			continue
		}
		if !syncRunLine.MatchString(line) || !syncJob.MatchString(line) {
			continue
		}
		out = append(out, cycle{took: seconds(tookField, line), late: seconds(lateField, line), checked: checked})
		checked = 0
	}
	return out, sc.Err()
}

func seconds(re *regexp.Regexp, line string) time.Duration {
	m := re.FindStringSubmatch(line)
	if m == nil {
		return 0
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	return time.Duration(f * float64(time.Second))
}

// processRSS is the resident set of pid, in bytes.
func processRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

func ptr[T any](v T) *T { return &v }
