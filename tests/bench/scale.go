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
// with 200 ms power calls on one conductor.
type scaleSettings struct {
	nodes    int
	latency  time.Duration
	interval time.Duration
	workers  int
	cycles   int
}

// benchScale puts nodes whose fake BMC answers after a delay on one
// conductor and watches power sync run: cycle time against the interval,
// how late cycles start, how many workers the cycle kept busy, the API's
// node GET latency meanwhile, and the conductor's CPU and memory per 1,000
// nodes.
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
	fmt.Printf("seeding %d nodes with %s power calls ...\n", sc.nodes, sc.latency)
	seeded, err := seedWith(ctx, store, tmpl.UUID, sc.nodes, s.concurrency, func(n *model.Node) {
		n.ProvisionState = ptr("available")
		n.PowerState = ptr("power off")
	})
	if err != nil {
		return nil, err
	}

	cpu0, err := processCPU(cond.PID())
	if err != nil {
		return nil, err
	}
	start := time.Now()
	fmt.Printf("watching %d power sync cycles (interval %s, %d workers) while reading nodes ...\n", sc.cycles, sc.interval, sc.workers)
	paths := make([]string, len(seeded))
	for i, u := range seeded {
		paths[i] = "/v1/nodes/" + u
	}
	var cycles []cycle
	deadline := time.Now().Add(time.Duration(sc.cycles+2) * (sc.interval + sc.latency*time.Duration(sc.nodes/max(sc.workers, 1)+1)))
	gets := readUntil(ctx, 4, func(ctx context.Context, i int) error {
		return api.do(ctx, http.MethodGet, paths[(i*7919)%len(paths)], nil, http.StatusOK, nil)
	}, func() (bool, error) {
		var err error
		cycles, err = syncCycles(cond.LogPath)
		return len(cycles) >= sc.cycles || time.Now().After(deadline), err
	})
	if gets.firstErr != nil && gets.n == 0 {
		return nil, gets.firstErr
	}
	elapsed := time.Since(start)
	cpu1, err := processCPU(cond.PID())
	if err != nil {
		return nil, err
	}
	rss, err := processRSS(cond.PID())
	if err != nil {
		return nil, err
	}
	if len(cycles) == 0 {
		return nil, fmt.Errorf("no power sync cycle finished within %s (see %s)", elapsed.Round(time.Second), cond.LogPath)
	}
	var longest, latest time.Duration
	for _, c := range cycles {
		longest, latest = max(longest, c.took), max(latest, c.late)
	}
	// A cycle that waits latency per node on w workers takes nodes×latency/w;
	// the workers it kept busy on average are the inverse.
	busy := float64(sc.nodes) * sc.latency.Seconds() / longest.Seconds()
	per1k := float64(sc.nodes) / 1000
	fits := "yes"
	if longest > sc.interval {
		fits = "NO"
	}
	getVerdict := "yes"
	if gets.p99 >= 20*time.Millisecond || gets.errors > 0 {
		getVerdict = "NO"
	}
	label := fmt.Sprintf("%d nodes, %s power calls", sc.nodes, sc.latency)
	return []row{
		{"power sync cycle, longest (" + label + ")", fmt.Sprintf("%s of %s interval, %d cycles", round(longest), sc.interval, len(cycles)), "≤ interval (10,000 nodes in 120 s)", fits},
		{"power sync start lag, largest", round(latest).String(), "-", ""},
		{"power sync workers busy (mean)", fmt.Sprintf("%.1f of %d", busy, sc.workers), "-", ""},
		{"GET /v1/nodes/{uuid} during sync", gets.String(), "p99 < 20 ms", getVerdict},
		{"conductor CPU per 1,000 nodes", fmt.Sprintf("%.1f%% of a core", 100*(cpu1-cpu0).Seconds()/elapsed.Seconds()/per1k), "-", ""},
		{"conductor RSS per 1,000 nodes", fmt.Sprintf("%.1f MiB (%.0f MiB total)", float64(rss)/per1k/(1<<20), float64(rss)/(1<<20)), "-", ""},
	}, nil
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

// cycle is one logged power sync run.
type cycle struct{ took, late time.Duration }

var (
	syncRunLine = regexp.MustCompile(`Periodic task run`)
	syncJob     = regexp.MustCompile(`job"?[=:]"?sync_power_states\b`)
	tookField   = regexp.MustCompile(`took"?[=:]([0-9.e+-]+)`)
	lateField   = regexp.MustCompile(`late"?[=:]([0-9.e+-]+)`)
)

// syncCycles reads the power sync runs the conductor logged.
func syncCycles(logPath string) ([]cycle, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []cycle
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !syncRunLine.MatchString(line) || !syncJob.MatchString(line) {
			continue
		}
		out = append(out, cycle{took: seconds(tookField, line), late: seconds(lateField, line)})
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
