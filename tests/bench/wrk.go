package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

var readDuration = flag.Duration("read-duration", 10*time.Second, "duration of each read-throughput measurement (wrk)")

// wrkScript cycles each connection through the paths file and prints the
// summary as JSON. Thread i starts i/threads of the way into the list so
// that threads do not ask for the same page at the same moment. wrk counts
// answers with a status above 399 as errors.
const wrkScript = `
local nthreads = 0
function setup(thread)
  thread:set("id", nthreads)
  nthreads = nthreads + 1
end

local paths = {}
local i = 0
function init(args)
  for line in io.lines(args[1]) do paths[#paths + 1] = line end
  wrk.headers["X-OpenStack-Ironic-API-Version"] = args[2]
  i = math.floor(id * #paths / tonumber(args[3]))
end

function request()
  i = i + 1
  return wrk.format("GET", paths[(i % #paths) + 1])
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`

// wrkSummary is what wrkScript's done() prints.
type wrkSummary struct {
	Requests   int64 `json:"requests"`
	DurationUS int64 `json:"duration_us"`
	Connect    int64 `json:"connect"`
	Read       int64 `json:"read"`
	Write      int64 `json:"write"`
	Status     int64 `json:"status"`
	Timeout    int64 `json:"timeout"`
	P50US      int64 `json:"p50_us"`
	P99US      int64 `json:"p99_us"`
}

// reader drives GET requests with wrk: one thread, `concurrency`
// connections. One wrk thread is one epoll loop that can issue far more
// requests per second than the API serves here; a second thread would only
// take a larger share of the two cores the API and MariaDB run on.
type reader struct {
	dir, url, version string
	concurrency       int
	// pids are the server processes whose CPU time is charged per request.
	pids []serverProcess
}

type serverProcess struct {
	name string
	pid  int
}

// read measures GET on paths (cycled) for *readDuration. check, run
// before the timed loop on a sample of the paths, makes sure the answers
// measured are the right ones.
func (r *reader) read(ctx context.Context, name string, paths []string, check func(ctx context.Context, path string) error) (result, error) {
	step := max(1, len(paths)/20)
	for i := 0; i < len(paths); i += step {
		if err := check(ctx, paths[i]); err != nil {
			return result{}, fmt.Errorf("%s: check before measuring: %w", name, err)
		}
	}
	pathFile := filepath.Join(r.dir, "paths.txt")
	if err := os.WriteFile(pathFile, []byte(strings.Join(paths, "\n")+"\n"), 0o644); err != nil {
		return result{}, err
	}
	script := filepath.Join(r.dir, "bench.lua")
	if err := os.WriteFile(script, []byte(wrkScript), 0o644); err != nil {
		return result{}, err
	}
	const threads = 1
	cmd := exec.CommandContext(ctx, "wrk", "-t", fmt.Sprint(threads), "-c", fmt.Sprint(r.concurrency),
		"-d", fmt.Sprintf("%ds", max(1, int(readDuration.Round(time.Second).Seconds()))), "--timeout", "10s", "--latency",
		"-s", script, r.url, "--", pathFile, r.version, fmt.Sprint(threads))
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	before, err := r.cpu()
	if err != nil {
		return result{}, err
	}
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%s: wrk: %w: %s", name, err, stderr.String())
	}
	after, err := r.cpu()
	if err != nil {
		return result{}, err
	}
	var sum wrkSummary
	last := out.Bytes()[bytes.LastIndexByte(bytes.TrimRight(out.Bytes(), "\n"), '\n')+1:]
	if err := json.Unmarshal(last, &sum); err != nil {
		return result{}, fmt.Errorf("%s: wrk summary %q: %w", name, last, err)
	}
	res := result{
		n:       int(sum.Requests),
		errors:  sum.Connect + sum.Read + sum.Write + sum.Status + sum.Timeout,
		elapsed: time.Duration(sum.DurationUS) * time.Microsecond,
		p50:     time.Duration(sum.P50US) * time.Microsecond,
		p99:     time.Duration(sum.P99US) * time.Microsecond,
	}
	if res.errors > 0 {
		res.firstErr = fmt.Errorf("wrk: %d status >= 400, %d connect, %d read, %d write, %d timeout",
			sum.Status, sum.Connect, sum.Read, sum.Write, sum.Timeout)
	}
	if res.n > 0 {
		for i, p := range r.pids {
			res.cpu = append(res.cpu, cpuShare{p.name, (after[i] - before[i]) / time.Duration(res.n)})
		}
		if u, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			res.cpu = append(res.cpu, cpuShare{"wrk", (time.Duration(u.Utime.Nano()) + time.Duration(u.Stime.Nano())) / time.Duration(res.n)})
		}
	}
	return res, nil
}

// cpu reads the user + system CPU time of each server process.
func (r *reader) cpu() ([]time.Duration, error) {
	out := make([]time.Duration, len(r.pids))
	for i, p := range r.pids {
		d, err := processCPU(p.pid)
		if err != nil {
			return nil, fmt.Errorf("CPU time of %s: %w", p.name, err)
		}
		out[i] = d
	}
	return out, nil
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go runs on.
const clockTick = 10 * time.Millisecond

// processCPU is utime + stime of pid from /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from its closing parenthesis: utime and stime are fields 14
	// and 15 of the line, 12 and 13 after the parenthesis.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	var utime, stime int64
	if _, err := fmt.Sscan(f[11], &utime); err != nil {
		return 0, err
	}
	if _, err := fmt.Sscan(f[12], &stime); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// findProcess returns the pid of the process whose command name is comm.
func findProcess(comm string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err == nil && strings.TrimSpace(string(b)) == comm {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no %s process", comm)
}
