package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferricbm/ferric/tests/harness"
)

// benchHostile measures what unauthenticated traffic can make the API
// hold: /metrics after requests with made-up methods and paths, the API's
// memory under concurrent 1 MiB bodies on each route anyone may call, and
// config-drive deploys served while slow senders trickle large bodies.
func benchHostile(ctx context.Context, s settings) ([]row, error) {
	work, done, err := workDir(s, "ferric-bench-hostile-")
	if err != nil {
		return nil, err
	}
	defer done()
	rig, err := startFakeRig(ctx, work, "hostile", func(c harness.Config) harness.Config {
		return c.Set("conductor", "sync_power_state_interval", time.Hour)
	})
	if err != nil {
		return nil, err
	}
	defer rig.Close()
	var rows []row
	r, err := hostileMetrics(ctx, rig.api)
	if err != nil {
		return nil, err
	}
	rows = append(rows, r)
	memRows, err := hostileBodies(ctx, rig.api, rig.apiSvc.PID())
	if err != nil {
		return nil, err
	}
	rows = append(rows, memRows...)
	r, err = hostileSlowSenders(ctx, rig.api)
	if err != nil {
		return nil, err
	}
	return append(rows, r), nil
}

// metricsSize is the length of the API's /metrics.
func metricsSize(ctx context.Context, api *apiClient) (int, error) {
	resp, err := harness.Do(ctx, http.MethodGet, api.url+"/metrics", nil, nil)
	if err != nil {
		return 0, err
	}
	if resp.Status != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %d", resp.Status)
	}
	return len(resp.Body), nil
}

// hostileMetrics sends 10,000 requests with random methods and paths.
func hostileMetrics(ctx context.Context, api *apiClient) (row, error) {
	fmt.Println("10,000 requests with random methods and paths ...")
	if _, err := metricsSize(ctx, api); err != nil { // its own series first
		return row{}, err
	}
	before, err := metricsSize(ctx, api)
	if err != nil {
		return row{}, err
	}
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	client := &http.Client{Timeout: 10 * time.Second}
	res := measure(ctx, 10000, 16, func(ctx context.Context, i int) error {
		method := make([]byte, 4+rand.IntN(60))
		for j := range method {
			method[j] = letters[rand.IntN(len(letters))]
		}
		if i%2 == 1 {
			method = []byte(http.MethodGet)
		}
		req, err := http.NewRequestWithContext(ctx, string(method), fmt.Sprintf("%s/v1/x%d/%d", api.url, rand.Int(), i), nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	})
	after, err := metricsSize(ctx, api)
	if err != nil {
		return row{}, err
	}
	ok := "yes"
	if after > before+16<<10 || res.errors > 0 {
		ok = "NO"
	}
	return row{"/metrics after 10,000 random methods and paths",
		fmt.Sprintf("%.1f KiB -> %.1f KiB", float64(before)/1024, float64(after)/1024),
		"grows by < 16 KiB (a bounded set of series)", ok}, nil
}

// hostileBodies sends 64 concurrent 1 MiB bodies to each public route,
// twice over, and reads the API's RSS meanwhile and for a minute after.
func hostileBodies(ctx context.Context, api *apiClient, pid int) ([]row, error) {
	var node struct {
		UUID string `json:"uuid"`
	}
	if err := api.do(ctx, http.MethodPost, "/v1/nodes", map[string]any{"driver": "fake-hardware"}, http.StatusCreated, &node); err != nil {
		return nil, err
	}
	body := []byte("[" + strings.Repeat("0,", (1<<20)/2-1) + "0]")
	routes := []struct{ name, method, path string }{
		{"POST /v1/heartbeat/{node}", http.MethodPost, "/v1/heartbeat/" + node.UUID},
		{"POST .../vendor_passthru?method=pass_deploy_info", http.MethodPost, "/v1/nodes/" + node.UUID + "/vendor_passthru?method=pass_deploy_info"},
		{"POST .../vendor_passthru/pass_bootloader_install_info", http.MethodPost, "/v1/nodes/" + node.UUID + "/vendor_passthru/pass_bootloader_install_info"},
		{"GET /v1/lookup", http.MethodGet, "/v1/lookup?addresses=52:54:00:00:00:01"},
	}
	client := &http.Client{Timeout: 30 * time.Second}
	var rows []row
	for _, rt := range routes {
		fmt.Printf("64 concurrent 1 MiB bodies to %s ...\n", rt.name)
		start, err := processRSS(pid)
		if err != nil {
			return nil, err
		}
		var peak atomic.Int64
		peak.Store(start)
		stop := make(chan struct{})
		var sampler sync.WaitGroup
		sampler.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
					if rss, err := processRSS(pid); err == nil && rss > peak.Load() {
						peak.Store(rss)
					}
				}
			}
		})
		var wg sync.WaitGroup
		for i := range 128 {
			wg.Go(func() {
				var rd io.Reader = bytes.NewReader(body)
				if i%2 == 1 {
					rd = io.MultiReader(rd) // unknown length: chunked
				}
				req, err := http.NewRequestWithContext(ctx, rt.method, api.url+rt.path, rd)
				if err != nil {
					return
				}
				req.Header.Set("Content-Type", "application/json")
				if resp, err := client.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
			})
		}
		wg.Wait()
		close(stop)
		sampler.Wait()
		settled, after := time.Now(), int64(0)
		for time.Since(settled) < time.Minute {
			if after, err = processRSS(pid); err != nil {
				return nil, err
			}
			if after < start+16<<20 {
				break
			}
			time.Sleep(time.Second)
		}
		ok := "yes"
		if peak.Load() > 150<<20 || after >= start+16<<20 {
			ok = "NO"
		}
		rows = append(rows, row{"RSS, 1 MiB bodies to " + rt.name,
			fmt.Sprintf("start %.0f MiB, peak %.0f MiB, %.0f MiB after %.0fs", mib(start), mib(peak.Load()), mib(after), time.Since(settled).Seconds()),
			"peak < 150 MiB, back near start within 1 min", ok})
	}
	return rows, nil
}

// hostileSlowSenders keeps 4 clients of another address trickling large
// provisioning bodies while 20 config-drive deploys are sent one after
// another, and counts those served.
func hostileSlowSenders(ctx context.Context, api *apiClient) (row, error) {
	const deploys = 20
	fmt.Printf("%d config-drive deploys beside 4 slow senders ...\n", deploys)
	uuids := make([]string, deploys)
	for i := range uuids {
		var n struct {
			UUID string `json:"uuid"`
		}
		if err := api.do(ctx, http.MethodPost, "/v1/nodes", map[string]any{"driver": "fake-hardware"}, http.StatusCreated, &n); err != nil {
			return row{}, err
		}
		uuids[i] = n.UUID
	}
	for _, verb := range []string{"manage", "provide"} {
		for _, u := range uuids {
			if err := api.provision(ctx, u, verb); err != nil {
				return row{}, err
			}
		}
		want := map[string]string{"manage": "manageable", "provide": "available"}[verb]
		if n, err := api.waitState(ctx, want, "", uuids, 2*time.Minute); err != nil || n != len(uuids) {
			return row{}, fmt.Errorf("%s: %d of %d nodes reached %s: %w", verb, n, len(uuids), want, err)
		}
	}

	slowCtx, stopSlow := context.WithCancel(ctx)
	var slow sync.WaitGroup
	host := strings.TrimPrefix(api.url, "http://")
	for range 4 {
		slow.Go(func() { trickle(slowCtx, host, "/v1/nodes/"+uuids[0]+"/states/provision") })
	}
	time.Sleep(time.Second) // the slow senders hold their slots

	drive := strings.Repeat("A", 2<<20) // past max_request_body_size: a large body
	served, refused := 0, 0
	client := &http.Client{Timeout: time.Minute}
	start := time.Now()
	for _, u := range uuids {
		body := `{"target": "active", "configdrive": "` + drive + `"}`
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, api.url+"/v1/nodes/"+u+"/states/provision", strings.NewReader(body))
		if err != nil {
			stopSlow()
			return row{}, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-OpenStack-Ironic-API-Version", api.version)
		resp, err := client.Do(req)
		if err != nil {
			stopSlow()
			return row{}, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusAccepted:
			served++
		case http.StatusServiceUnavailable:
			refused++
		}
	}
	elapsed := time.Since(start)
	stopSlow()
	slow.Wait()
	ok := "yes"
	if served < deploys {
		ok = "NO"
	}
	return row{"config-drive deploys beside 4 slow senders",
		fmt.Sprintf("%d of %d served, %d refused 503, in %.1fs", served, deploys, refused, elapsed.Seconds()),
		"all served", ok}, nil
}

// trickle sends large provisioning bodies a byte a second from 127.0.0.2,
// as a slow sender elsewhere would, opening a new one whenever the API
// drops the last, until ctx ends.
func trickle(ctx context.Context, host, path string) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	for ctx.Err() == nil {
		conn, err := d.DialContext(ctx, "tcp", host)
		if err != nil {
			return
		}
		fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 20000000\r\n\r\n{\"target\": \"active\", \"configdrive\": \"", path, host)
		for ctx.Err() == nil {
			if _, err := conn.Write([]byte("A")); err != nil {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
		_ = conn.Close()
	}
}
