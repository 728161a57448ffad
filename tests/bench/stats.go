package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// result is one measured operation run n times at some concurrency.
type result struct {
	n       int
	errors  int64
	elapsed time.Duration
	p50     time.Duration
	p99     time.Duration
	// cpu is the CPU time each process spent per request, when measured.
	cpu []cpuShare
	// firstErr keeps one failure to show why errors were counted.
	firstErr error
}

// cpuShare is one process's CPU time (user + system) per request.
type cpuShare struct {
	process string
	perReq  time.Duration
}

func (r result) rate() float64 { return float64(r.n) / r.elapsed.Seconds() }

// pct is the p-quantile of the sorted latencies lat.
func pct(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	return lat[int(p*float64(len(lat)-1))]
}

func (r result) String() string {
	s := fmt.Sprintf("%8.0f/s  p50 %7s  p99 %7s", r.rate(), round(r.p50), round(r.p99))
	if len(r.cpu) > 0 {
		s += "  CPU/req"
		for _, c := range r.cpu {
			s += fmt.Sprintf(" %s %s", c.process, round(c.perReq))
		}
	}
	if r.errors > 0 {
		s += fmt.Sprintf("  (%d errors, first: %v)", r.errors, r.firstErr)
	}
	return s
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// measure runs op(i) for i in [0, n) on `concurrency` goroutines and
// records each call's latency.
func measure(ctx context.Context, n, concurrency int, op func(ctx context.Context, i int) error) result {
	var (
		next     atomic.Int64
		errCount atomic.Int64
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	lat := make([]time.Duration, n)
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				t := time.Now()
				err := op(ctx, i)
				lat[i] = time.Since(t)
				if err != nil {
					errCount.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lat)
	return result{n: n, errors: errCount.Load(), elapsed: elapsed, p50: pct(lat, 0.50), p99: pct(lat, 0.99), firstErr: firstErr}
}
