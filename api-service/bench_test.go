package apiservice_test

import (
	"fmt"
	"net/http"
	"testing"
)

// backends runs a benchmark against SQLite and MySQL.
func backends(b *testing.B, run func(b *testing.B, e *env)) {
	for _, be := range []struct {
		name string
		conn func(testingT) string
	}{{"sqlite", sqliteConnection}, {"mysql", mysqlConnection}} {
		b.Run(be.name, func(b *testing.B) {
			run(b, newEnv(b, be.conn(b), nil))
		})
	}
}

func mustStatus(b *testing.B, r response, want int) {
	if r.status != want {
		b.Fatalf("status %d, want %d: %s", r.status, want, r.raw)
	}
}

func BenchmarkGetNode(b *testing.B) {
	backends(b, func(b *testing.B, e *env) {
		uuid := e.createNode(`, "name": "bench", "driver_info": {"ipmi_password": "pw"}`)
		for b.Loop() {
			mustStatus(b, e.at("latest", http.MethodGet, "/v1/nodes/"+uuid, ""), http.StatusOK)
		}
	})
}

func BenchmarkListNodesDetail100(b *testing.B) {
	backends(b, func(b *testing.B, e *env) {
		for i := range 100 {
			e.createNode(fmt.Sprintf(`, "name": "bench-%d", "properties": {"cpus": 8, "memory_mb": 4096}`, i))
		}
		for b.Loop() {
			mustStatus(b, e.at("latest", http.MethodGet, "/v1/nodes/detail", ""), http.StatusOK)
		}
	})
}

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
