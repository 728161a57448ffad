package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"

	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/load"
)

// soakSettings size the soak section.
type soakSettings struct {
	duration time.Duration
	interval time.Duration
	nodes    int
	workers  int
	// labNodes are lab nodes cycled deploy -> undeploy beside the load.
	labNodes int
}

// sample is one reading of one process.
type sample struct {
	at      time.Duration
	rss     int64 // bytes
	threads int
	fds     int
	dbConns int // established TCP connections to the database port
	// goroutines and heapGoal are the Go runtime's, read from the
	// process's /metrics. The heap goal (the size at which the next
	// collection starts: the heap live after the last one, doubled at the
	// default GOGC) follows the live heap; the heap in use, sampled at any
	// point of the collector's cycle, swings between that and the goal.
	goroutines int
	heapGoal   int64
}

// soakProc is a process the soak watches and what was read of it.
type soakProc struct {
	name string
	pid  int
	// metrics is the URL of the process's Prometheus page.
	metrics string
	samples []sample
}

// benchSoak runs ferric-api and two conductors under mixed API load and
// deploy/clean cycles of fake-hardware nodes for the soak duration, with
// -soak-lab-nodes lab nodes cycling deploy -> undeploy on a third,
// reading each process's memory, threads, open files and database
// connections from /proc and its goroutines and heap goal from /metrics at
// every interval, and judges each series flat or not.
func benchSoak(ctx context.Context, s settings) ([]row, error) {
	work, done, err := workDir(s, "ferric-bench-soak-")
	if err != nil {
		return nil, err
	}
	defer done()
	fmt.Println("building binaries ...")
	bin, err := harness.Build(work)
	if err != nil {
		return nil, err
	}
	database, err := harness.CreateDatabase(ctx, "soak")
	if err != nil {
		return nil, err
	}
	defer func() { _ = database.Drop(ctx) }()
	base := harness.BaseConfig(database.Connection(), "amqp", harness.FastTimings).
		Set("DEFAULT", "debug", false).
		Set("conductor", "automated_clean", true)
	d := harness.NewDeployment(bin, work, base)
	defer func() { _ = d.StopAll(20 * time.Second) }()
	if err := d.DBSync(ctx); err != nil {
		return nil, err
	}
	api, err := d.StartAPI(ctx, "api")
	if err != nil {
		return nil, err
	}
	procs := []*soakProc{{name: "ferric-api", pid: api.PID(), metrics: d.APIURL + "/metrics"}}
	for _, name := range []string{"conductor-a", "conductor-b"} {
		// Each conductor serves its metrics on a port of its own.
		port, err := harness.FreePort()
		if err != nil {
			return nil, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		c, err := d.StartConductor(ctx, name, func(c harness.Config) harness.Config {
			return c.Set("conductor", "metrics_listen", addr)
		})
		if err != nil {
			return nil, err
		}
		procs = append(procs, &soakProc{name: name, pid: c.PID(), metrics: "http://" + addr + "/metrics"})
	}
	v, err := harness.MaxVersion(ctx, d.APIURL)
	if err != nil {
		return nil, err
	}
	client, err := harness.NewClient(d.APIURL, v)
	if err != nil {
		return nil, err
	}
	uuids := make([]string, s.soak.nodes)
	for i := range uuids {
		n, err := nodes.Create(ctx, client, nodes.CreateOpts{Name: fmt.Sprintf("soak-%d", i), Driver: "fake-hardware",
			DriverInfo: map[string]any{"fake_latency": "100ms"}}).Extract()
		if err != nil {
			return nil, fmt.Errorf("create soak node: %w", err)
		}
		uuids[i] = n.UUID
	}

	var sl *soakLab
	if s.soak.labNodes > 0 {
		labAPI := newAPI(d.APIURL)
		labAPI.version = v
		var proc *soakProc
		if sl, proc, err = startSoakLab(ctx, d, labAPI, bin, work, s.soak.labNodes); err != nil {
			return nil, err
		}
		procs = append(procs, proc)
		labCtx, stopLab := context.WithCancel(ctx)
		defer func() {
			stopLab()
			if err := sl.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "bench: stop the soak's lab:", err)
			}
		}()
		sl.run(labCtx)
	}

	fmt.Printf("soak: %d nodes, %d load workers, %d lab nodes, %s, a sample every %s\n",
		s.soak.nodes, s.soak.workers, s.soak.labNodes, s.soak.duration, s.soak.interval)
	l := load.Start(client, uuids, s.soak.workers, nil)
	start := time.Now()
	fmt.Printf("%8s  %-13s  %8s  %9s  %10s  %7s  %5s  %8s  %9s  %6s  %7s  %7s\n",
		"t", "process", "RSS MiB", "heap goal", "goroutines", "threads", "fds", "DB conns", "accepted", "reads", "lab ok", "lab bad")
	for {
		at := time.Since(start)
		for _, p := range procs {
			smp, err := readSample(p.pid, dbPort(database.Connection()))
			if err == nil {
				smp.goroutines, smp.heapGoal, err = scrapeRuntime(ctx, p.metrics)
			}
			if err != nil {
				l.Stop()
				return nil, fmt.Errorf("sample %s: %w", p.name, err)
			}
			smp.at = at
			p.samples = append(p.samples, smp)
			cycles, failures := sl.counts()
			fmt.Printf("%8s  %-13s  %8.1f  %9.1f  %10d  %7d  %5d  %8d  %9d  %6d  %7d  %7d\n", at.Round(time.Second), p.name,
				mib(smp.rss), mib(smp.heapGoal), smp.goroutines, smp.threads, smp.fds, smp.dbConns,
				l.Stats.Accepted.Load(), l.Stats.Reads.Load(), cycles, failures)
		}
		if at >= s.soak.duration {
			break
		}
		select {
		case <-ctx.Done():
			l.Stop()
			return nil, ctx.Err()
		case <-time.After(s.soak.interval):
		}
	}
	l.Stop()
	rows := []row{{"soak: provision requests accepted / refused, reads ok / failed",
		fmt.Sprintf("%d / %d, %d / %d", l.Stats.Accepted.Load(), l.Stats.Refused.Load(), l.Stats.Reads.Load(), l.Stats.Failed.Load()),
		"-", ""}}
	if sl != nil {
		rows = append(rows, sl.row())
	}
	for _, p := range procs {
		rows = append(rows, p.rows()...)
	}
	return rows, nil
}

// soakSeries are the series the soak judges, each with its tolerance.
var soakSeries = []struct {
	what string
	get  func(sample) float64
	unit string
	tol  tolerance
}{
	{"RSS", func(s sample) float64 { return mib(s.rss) }, " MiB", tolerance{abs: 2, share: 0.05}},
	// The goal moves with what is live at each collection: a wider share.
	{"heap goal", func(s sample) float64 { return mib(s.heapGoal) }, " MiB", tolerance{abs: 2, share: 0.10}},
	{"goroutines", func(s sample) float64 { return float64(s.goroutines) }, "", tolerance{abs: 5, share: 0.05}},
	{"threads", func(s sample) float64 { return float64(s.threads) }, "", tolerance{abs: 1, share: 0.05}},
	// Keep-alive connections of the load's clients come and go.
	{"open files", func(s sample) float64 { return float64(s.fds) }, "", tolerance{abs: 3, share: 0.05}},
	{"DB connections", func(s sample) float64 { return float64(s.dbConns) }, "", tolerance{abs: 1, share: 0.10}},
}

// rows judges each series of a process with judgeFlat.
func (p *soakProc) rows() []row {
	var out []row
	for _, sr := range soakSeries {
		ys := make([]float64, len(p.samples))
		for i, smp := range p.samples {
			ys[i] = sr.get(smp)
		}
		f := judgeFlat(ys, sr.tol)
		out = append(out, row{
			fmt.Sprintf("soak %s %s: first, mean of middle → last third", p.name, sr.what),
			fmt.Sprintf("%.1f, %.1f → %.1f (%+.1f%s)", ys[0], f.before, f.after, f.rise, sr.unit),
			fmt.Sprintf("rise <= %g + %.0f%% = %.1f", sr.tol.abs, 100*sr.tol.share, f.limit), f.verdict()})
	}
	return out
}

func mib(bytes int64) float64 { return float64(bytes) / (1 << 20) }

// scrapeRuntime reads the Go runtime's goroutines and heap goal (bytes)
// from a Prometheus page.
func scrapeRuntime(ctx context.Context, url string) (goroutines int, heapGoal int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("scrape %s: status %d", url, resp.StatusCode)
	}
	page, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, fmt.Errorf("scrape %s: %w", url, err)
	}
	values := map[string]float64{}
	for _, line := range strings.Split(string(page), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || (name != "go_goroutines" && name != "go_memstats_next_gc_bytes") {
			continue
		}
		if values[name], err = strconv.ParseFloat(strings.TrimSpace(value), 64); err != nil {
			return 0, 0, fmt.Errorf("scrape %s: %s: %w", url, name, err)
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_next_gc_bytes"} {
		if _, ok := values[name]; !ok {
			return 0, 0, fmt.Errorf("scrape %s: no %s", url, name)
		}
	}
	return int(values["go_goroutines"]), int64(values["go_memstats_next_gc_bytes"]), nil
}

// readSample reads a process's RSS and threads from /proc/PID/status, its
// open files from /proc/PID/fd, and its established connections to
// dbPort by matching its socket inodes against /proc/net/tcp.
func readSample(pid, dbPort int) (sample, error) {
	var s sample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			s.rss = kb << 10
		}
		if rest, ok := strings.CutPrefix(line, "Threads:"); ok {
			s.threads, _ = strconv.Atoi(strings.TrimSpace(rest))
		}
	}
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return s, err
	}
	s.fds = len(fds)
	db, err := dbSockets(dbPort)
	if err != nil {
		return s, err
	}
	for _, fd := range fds {
		target, err := os.Readlink(fdDir + "/" + fd.Name())
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok && db[strings.TrimSuffix(inode, "]")] {
			s.dbConns++
		}
	}
	return s, nil
}

// dbSockets are the inodes of the established TCP sockets whose remote
// port is port.
func dbSockets(port int) (map[string]bool, error) {
	out := map[string]bool{}
	want := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			if len(fields) < 10 || fields[3] != "01" || !strings.HasSuffix(fields[2], want) {
				continue
			}
			out[fields[9]] = true
		}
	}
	return out, nil
}

// dbPort is the port of a mysql:// connection URL (3306 when none).
func dbPort(connection string) int {
	u, err := url.Parse(connection)
	if err != nil {
		return 3306
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		return 3306
	}
	return p
}
