package main

import (
	"context"
	"fmt"
	"math"
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
}

// sample is one reading of one process.
type sample struct {
	at      time.Duration
	rss     int64 // bytes
	threads int
	fds     int
	dbConns int // established TCP connections to the database port
}

// soakProc is a process the soak watches and what was read of it.
type soakProc struct {
	name    string
	pid     int
	samples []sample
}

// benchSoak runs ferric-api and two conductors under mixed API load and
// deploy/clean cycles of fake-hardware nodes for the soak duration,
// reading each process's memory, threads, open files and database
// connections at every interval, and judges each series flat or not.
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
	defer database.Drop(ctx)
	base := harness.BaseConfig(database.Connection(), "amqp", harness.FastTimings).
		Set("DEFAULT", "debug", false).
		Set("conductor", "automated_clean", true)
	d := harness.NewDeployment(bin, work, base)
	defer d.StopAll(20 * time.Second)
	if err := d.DBSync(ctx); err != nil {
		return nil, err
	}
	api, err := d.StartAPI(ctx, "api")
	if err != nil {
		return nil, err
	}
	procs := []*soakProc{{name: "ferric-api", pid: api.PID()}}
	for _, name := range []string{"conductor-a", "conductor-b"} {
		c, err := d.StartConductor(ctx, name)
		if err != nil {
			return nil, err
		}
		procs = append(procs, &soakProc{name: name, pid: c.PID()})
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

	fmt.Printf("soak: %d nodes, %d load workers, %s, a sample every %s\n", s.soak.nodes, s.soak.workers, s.soak.duration, s.soak.interval)
	l := load.Start(client, uuids, s.soak.workers, nil)
	start := time.Now()
	fmt.Printf("%8s  %-12s  %8s  %7s  %5s  %8s  %9s  %6s\n", "t", "process", "RSS MiB", "threads", "fds", "DB conns", "accepted", "reads")
	for {
		at := time.Since(start)
		for _, p := range procs {
			smp, err := readSample(p.pid, dbPort(database.Connection()))
			if err != nil {
				l.Stop()
				return nil, fmt.Errorf("sample %s: %w", p.name, err)
			}
			smp.at = at
			p.samples = append(p.samples, smp)
			fmt.Printf("%8s  %-12s  %8.1f  %7d  %5d  %8d  %9d  %6d\n", at.Round(time.Second), p.name,
				float64(smp.rss)/(1<<20), smp.threads, smp.fds, smp.dbConns, l.Stats.Accepted.Load(), l.Stats.Reads.Load())
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
	for _, p := range procs {
		rows = append(rows, p.rows()...)
	}
	return rows, nil
}

// rows judges each series of a process over the second half of the run
// (after warm-up): flat when its least-squares line rises across that half
// by at most flatShare of its mean, or by less than one unit (one thread,
// file or connection: a count that steps once is not a trend).
func (p *soakProc) rows() []row {
	series := []struct {
		what string
		get  func(sample) float64
		unit string
	}{
		{"RSS", func(s sample) float64 { return float64(s.rss) / (1 << 20) }, " MiB"},
		{"threads", func(s sample) float64 { return float64(s.threads) }, ""},
		{"open files", func(s sample) float64 { return float64(s.fds) }, ""},
		{"DB connections", func(s sample) float64 { return float64(s.dbConns) }, ""},
	}
	warm := p.samples[len(p.samples)/2:]
	span := warm[len(warm)-1].at - warm[0].at
	var out []row
	for _, sr := range series {
		xs, ys := make([]float64, len(warm)), make([]float64, len(warm))
		for i, smp := range warm {
			xs[i], ys[i] = smp.at.Hours(), sr.get(smp)
		}
		slope, mean := fit(xs, ys)
		rise := slope * span.Hours()
		first, last := sr.get(p.samples[0]), sr.get(p.samples[len(p.samples)-1])
		verdict := "flat"
		switch {
		case len(warm) < 3:
			verdict = "too short"
		case rise > max(flatShare*mean, 1):
			verdict = "NOT flat"
		}
		out = append(out, row{
			fmt.Sprintf("soak %s %s: first, last, rise over 2nd half", p.name, sr.what),
			fmt.Sprintf("%.1f, %.1f, %+.1f%s", first, last, rise, sr.unit),
			fmt.Sprintf("rise <= %.0f%% of mean or < 1", 100*flatShare), verdict})
	}
	return out
}

// flatShare is the rise over the second half, as a share of the mean,
// up to which a series counts as flat: allocator and pool noise.
const flatShare = 0.05

// fit is the least-squares slope of ys over xs and the mean of ys.
func fit(xs, ys []float64) (slope, mean float64) {
	n := float64(len(xs))
	if n < 2 {
		return 0, 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if math.Abs(den) < 1e-12 {
		return 0, sy / n
	}
	return (n*sxy - sx*sy) / den, sy / n
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
