package erase_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ferricbm/ferric/deploy/erase"
)

// BenchmarkErase overwrites a file-backed disk of ERASE_BENCH_SIZE bytes (default
// 256 MiB) in ERASE_BENCH_DIR (default a temporary directory). Every iteration runs
// the reference `dd if=/dev/zero bs=4M oflag=direct conv=fsync,notrunc` over the file
// and then Device, back to back, so both see the same machine load; it reports both
// throughputs and their ratio (erase/dd). "zero" is a single zero pass, "random" one random pass;
// both include Device's verification read-back.
func BenchmarkErase(b *testing.B) {
	size := int64(256 << 20)
	if v := os.Getenv("ERASE_BENCH_SIZE"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n%(4<<20) != 0 {
			b.Fatalf("ERASE_BENCH_SIZE=%q: want a positive multiple of 4 MiB", v)
		}
		size = n
	}
	dir := b.TempDir()
	if v := os.Getenv("ERASE_BENCH_DIR"); v != "" {
		d, err := os.MkdirTemp(v, "erase-bench-")
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	path := filepath.Join(dir, "disk.img")
	dd := func() time.Duration {
		start := time.Now()
		out, err := exec.Command("dd", "if=/dev/zero", "of="+path, "bs=4M", "oflag=direct", "conv=fsync,notrunc",
			fmt.Sprintf("count=%d", size/(4<<20))).CombinedOutput()
		if err != nil {
			b.Fatalf("dd: %v: %s", err, out)
		}
		return time.Since(start)
	}
	// Allocate the blocks once so every run overwrites and none allocates.
	dd()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opts erase.Options
	}{
		{"zero", erase.Options{Zeroize: true}},
		{"random", erase.Options{Iterations: 1}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var ddTime, eraseTime time.Duration
			for b.Loop() {
				b.StopTimer()
				ddTime += dd()
				b.StartTimer()
				start := time.Now()
				if _, err := erase.Device(ctx, path, c.opts); err != nil {
					b.Fatal(err)
				}
				eraseTime += time.Since(start)
			}
			mb := float64(size) * float64(b.N) / 1e6
			b.ReportMetric(mb/ddTime.Seconds(), "dd-MB/s")
			b.ReportMetric(mb/eraseTime.Seconds(), "erase-MB/s")
			b.ReportMetric(ddTime.Seconds()/eraseTime.Seconds(), "erase/dd")
		})
	}
}
