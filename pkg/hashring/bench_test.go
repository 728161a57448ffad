package hashring_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ferricbm/ferric/pkg/hashring"
)

// BenchmarkLookup measures the per-request cost of routing a node on a
// warm cache, the path every API action call takes.
func BenchmarkLookup(b *testing.B) {
	var members []hashring.Member
	for i := range 10 {
		for _, hw := range []string{"ipmi", "ilo", "fake-hardware"} {
			members = append(members, hashring.Member{Hostname: fmt.Sprint("conductor-", i), HardwareType: hw})
		}
	}
	m := hashring.NewManager(func(context.Context) ([]hashring.Member, error) { return members, nil }, 5, time.Hour)
	ctx := context.Background()
	ks := keys(1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := m.Lookup(ctx, "", "ipmi", ks[i%len(ks)]); err != nil {
			b.Fatal(err)
		}
	}
}
