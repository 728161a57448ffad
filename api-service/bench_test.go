package apiservice_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ferricbm/ferric/api-service/apitest"
	"github.com/ferricbm/ferric/deploy/image/keystonetest"
	"github.com/ferricbm/ferric/pkg/config"
)

// backends runs a benchmark against SQLite and MySQL.
func backends(b *testing.B, run func(b *testing.B, e *env)) {
	for _, be := range []struct {
		name string
		conn func(apitest.T) string
	}{{"sqlite", apitest.SQLite}, {"mysql", apitest.MySQL}} {
		b.Run(be.name, func(b *testing.B) {
			run(b, newEnv(b, be.conn(b), nil))
		})
	}
}

// measure runs op(i) from 16 goroutines, make bench's concurrency, and
// reports the process's CPU time per operation (API server and HTTP client
// together) beside the wall time, which on a shared machine mostly
// measures the neighbours. The database's own CPU is not included.
func measure(b *testing.B, op func(i int) response, want int) {
	b.SetParallelism(8) // 16 clients on 2 CPUs
	var seq atomic.Int64
	start := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if r := op(int(seq.Add(1))); r.status != want {
				b.Errorf("status %d, want %d: %s", r.status, want, r.raw)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkGetNode(b *testing.B) {
	backends(b, func(b *testing.B, e *env) {
		uuid := e.createNode(`, "name": "bench", "driver_info": {"ipmi_password": "pw"}`)
		measure(b, func(int) response { return e.at("latest", http.MethodGet, "/v1/nodes/"+uuid, "") }, http.StatusOK)
	})
}

func BenchmarkListNodesDetail100(b *testing.B) {
	backends(b, func(b *testing.B, e *env) {
		uuids := make([]string, 200)
		for i := range uuids {
			uuids[i] = e.createNode(fmt.Sprintf(`, "name": "bench-%d", "properties": {"cpus": 8, "memory_mb": 4096}`, i))
		}
		measure(b, func(i int) response {
			return e.at("latest", http.MethodGet, "/v1/nodes/detail?limit=100&marker="+uuids[i%100], "")
		}, http.StatusOK)
	})
}

func mustStatus(b *testing.B, r response, want int) {
	if r.status != want {
		b.Fatalf("status %d, want %d: %s", r.status, want, r.raw)
	}
}

// BenchmarkPatchNode patches one node at a time: concurrent patches of a
// node would meet its lock.
func BenchmarkPatchNode(b *testing.B) {
	backends(b, func(b *testing.B, e *env) {
		uuid := e.createNode("")
		i := 0
		for b.Loop() {
			i++
			patch := fmt.Sprintf(`[{"op": "add", "path": "/extra/n", "value": %d}]`, i)
			mustStatus(b, e.at("latest", http.MethodPatch, "/v1/nodes/"+uuid, patch), http.StatusOK)
		}
	})
}

// BenchmarkGetNodeAuth compares a node GET without authentication and
// with Keystone tokens, which after the first request come from the
// validator's cache: the policy check and the cache lookup are what the
// strategy adds.
func BenchmarkGetNodeAuth(b *testing.B) {
	for _, strategy := range []string{"noauth", "keystone"} {
		b.Run(strategy, func(b *testing.B) {
			var (
				tweak  func(*config.Config)
				header []string
			)
			if strategy == "keystone" {
				ks := keystonetest.NewServer(ksService)
				b.Cleanup(ks.Close)
				ks.AddUser(ksAdmin)
				tok, err := ks.Issue(context.Background(), ksAdmin, true)
				if err != nil {
					b.Fatal(err)
				}
				tweak, header = keystoneConfig(ks.URL), []string{"X-Auth-Token", tok}
			}
			e := newEnv(b, apitest.SQLite(b), tweak)
			uuid := e.createNodeAs(`, "name": "bench"`, header...)
			measure(b, func(int) response {
				return e.call(http.MethodGet, "/v1/nodes/"+uuid, "", append([]string{"X-OpenStack-Ironic-API-Version", "latest"}, header...)...)
			}, http.StatusOK)
		})
	}
}
