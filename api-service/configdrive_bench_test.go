package apiservice_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferricbm/ferric/pkg/states"
)

// base64Text streams n bytes of base64 alphabet, so the client never holds
// the drive it sends.
type base64Text struct{ n, off int }

func (t *base64Text) Read(p []byte) (int, error) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	if t.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), t.n)
	for i := range k {
		p[i] = alphabet[(t.off+i*7)%len(alphabet)]
	}
	t.off += k
	t.n -= k
	return k, nil
}

// procStatusKiB reads a kB field (VmRSS, VmHWM) of /proc/self/status.
func procStatusKiB(b *testing.B, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatalf("read /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatalf("parse %s: %v", field, err)
			}
			return n
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// BenchmarkProvisionConfigDrive64MiB sends a deploy with a config drive
// filling the 64 MiB body limit and reports the process's peak RSS while
// the API reads and stores it (the in-process conductor included; the
// client streams its body), its growth over the RSS before, and the time
// of a node GET afterwards (median) beside that of a node never given a
// drive.
func BenchmarkProvisionConfigDrive64MiB(b *testing.B) {
	const bodySize = 64 << 20
	prefix, suffix := []byte(`{"target": "active", "configdrive": "`), []byte(`"}`)
	ctx := context.Background()
	backends(b, func(b *testing.B, e *env) {
		b.ReportAllocs()
		plain := e.createNode("")
		var gets [2][]time.Duration
		var peakKiB, growthKiB int64
		for range b.N {
			b.StopTimer()
			uuid := e.createNode("")
			n, err := e.store.GetNode(ctx, uuid)
			if err != nil {
				b.Fatal(err)
			}
			n.ProvisionState = ptrTo(string(states.Available))
			if err := e.store.SaveNode(ctx, n); err != nil {
				b.Fatal(err)
			}
			body := io.MultiReader(bytes.NewReader(prefix), &base64Text{n: bodySize - len(prefix) - len(suffix)}, bytes.NewReader(suffix))
			req, err := http.NewRequest(http.MethodPut, e.url+"/v1/nodes/"+uuid+"/states/provision", body)
			if err != nil {
				b.Fatal(err)
			}
			req.ContentLength = bodySize
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
			// Peak RSS counts from here (Linux: clear_refs 5 resets VmHWM).
			if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
				b.Fatalf("reset peak RSS: %v", err)
			}
			before := procStatusKiB(b, "VmRSS")
			b.StartTimer()
			resp, err := httpClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			b.StopTimer()
			if resp.StatusCode != http.StatusAccepted {
				b.Fatalf("status %d: %s", resp.StatusCode, raw)
			}
			hwm := procStatusKiB(b, "VmHWM")
			peakKiB += hwm
			growthKiB += hwm - before
			// Polling is fine here: the figure is the GET after.
			for {
				n, err := e.store.GetNode(ctx, uuid)
				if err != nil {
					b.Fatal(err)
				}
				if n.ProvisionState != nil && n.State() == states.Active && n.Reservation == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			timeGets(b, e, uuid, plain, &gets)
			b.StartTimer()
		}
		b.ReportMetric(float64(peakKiB)/1024/float64(b.N), "peak-rss-MiB")
		b.ReportMetric(float64(growthKiB)/1024/float64(b.N), "rss-growth-MiB")
		b.ReportMetric(medianMicros(gets[0]), "get-node-p50-µs")
		b.ReportMetric(medianMicros(gets[1]), "get-plain-node-p50-µs")
	})
}

// timeGets times GETs of node a and of node other, alternating so that
// both see the same load, adding each duration to its slice.
func timeGets(b *testing.B, e *env, a, other string, took *[2][]time.Duration) {
	for range 20 {
		for i, uuid := range []string{a, other} {
			start := time.Now()
			if r := e.at("latest", http.MethodGet, "/v1/nodes/"+uuid, ""); r.status != http.StatusOK {
				b.Fatalf("GET node: %d", r.status)
			}
			took[i] = append(took[i], time.Since(start))
		}
	}
}

func medianMicros(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2].Microseconds())
}
