package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab"
)

// Sizes and bounds of the soak's lab nodes: small enough that a cycle
// (deploy, undeploy, erase) takes about a minute on a loaded machine.
const (
	soakLabImage = 16 << 20
	// soakLabDisk holds the image with room to spare, as the deploy
	// section sizes its disks.
	soakLabDisk = 2*soakLabImage + 64<<20
	// soakLabStep bounds one deploy or one undeploy with its clean.
	soakLabStep = 10 * time.Minute
)

// soakLab is the soak's lab part: lab nodes (ipmi_sim BMC, disk file,
// ferric-agent) on a conductor of their own, each cycled deploy ->
// undeploy (automated clean) for the whole run beside the fake-hardware
// load.
type soakLab struct {
	api   *apiClient
	image *servedImage
	uuids []string
	// cycles counts rounds that went deploy -> active -> undeploy ->
	// available; failures the rounds that ended otherwise.
	cycles, failures atomic.Int64

	mu          sync.Mutex
	lastFailure error

	wg      sync.WaitGroup
	closers closers
}

// startSoakLab starts conductor-lab (ipmi only, so that the hash ring
// gives it the lab nodes and none of the fake-hardware ones), the lab's
// nodes and an image server, enrols the nodes and provides them. It
// returns the lab and the conductor to watch.
func startSoakLab(ctx context.Context, d *harness.Deployment, api *apiClient, bin, work string, nodes int) (sl *soakLab, proc *soakProc, err error) {
	sl = &soakLab{api: api}
	defer func() {
		if err != nil {
			_ = sl.closers.run()
		}
	}()
	fmt.Printf("building ferric-agent and starting %d lab nodes ...\n", nodes)
	root, err := harness.RepoRoot()
	if err != nil {
		return nil, nil, err
	}
	agent, err := lab.BuildAgent(ctx, root, bin)
	if err != nil {
		return nil, nil, err
	}
	dirs, err := lab.MakeDirs(filepath.Join(work, "conductor-lab"))
	if err != nil {
		return nil, nil, err
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = lab.FreeTCPPort(); err != nil {
			return nil, nil, err
		}
	}
	portalPort, httpPort, metricsAddr := ports[0], ports[1], fmt.Sprintf("127.0.0.1:%d", ports[2])
	c, err := d.StartConductor(ctx, "conductor-lab", func(c harness.Config) harness.Config {
		return lab.SetAPIURL(lab.Configure(c, dirs, portalPort, httpPort), d.APIURL).
			Set("conductor", "enabled_hardware_types", "ipmi").
			Set("conductor", "file_url_allowed_paths", []string{work}).
			Set("conductor", "deploy_callback_timeout", soakLabStep).
			Set("conductor", "clean_callback_timeout", soakLabStep).
			Set("conductor", "metrics_listen", metricsAddr)
	})
	if err != nil {
		return nil, nil, err
	}
	proc = &soakProc{name: "conductor-lab", pid: c.PID(), metrics: "http://" + metricsAddr + "/metrics"}
	l, err := lab.Start(ctx, lab.Options{Nodes: nodes, AgentBinary: agent, TFTPRoot: dirs.TFTPRoot,
		DiskSize: soakLabDisk, PortalPort: portalPort, TempDir: work, BMCKind: lab.BMCIPMI})
	if err != nil {
		return nil, nil, err
	}
	sl.closers = append(sl.closers, l.Stop)
	if sl.image, err = serveRandomImage(ctx, work, soakLabImage); err != nil {
		return nil, nil, err
	}
	sl.closers = append(sl.closers, func() error { sl.image.close(); return nil })
	for _, n := range l.Nodes {
		u, err := enrolLabNode(ctx, api, n, "", filepath.Join(work, "deploy"))
		if err != nil {
			return nil, nil, err
		}
		sl.uuids = append(sl.uuids, u)
	}
	for _, u := range sl.uuids {
		if err := sl.await(ctx, u, "manageable", ""); err != nil {
			return nil, nil, err
		}
		if err := api.provision(ctx, u, "provide"); err != nil {
			return nil, nil, fmt.Errorf("provide lab node %s: %w", u, err)
		}
	}
	for _, u := range sl.uuids {
		if err := sl.await(ctx, u, "available", "clean failed"); err != nil {
			return nil, nil, err
		}
	}
	return sl, proc, nil
}

// run cycles every node until ctx ends.
func (sl *soakLab) run(ctx context.Context) {
	for _, u := range sl.uuids {
		sl.wg.Add(1)
		go func() {
			defer sl.wg.Done()
			sl.cycle(ctx, u)
		}()
	}
}

// Close waits for the cycles (their ctx must be done) and stops the lab.
func (sl *soakLab) Close() error {
	sl.wg.Wait()
	return sl.closers.run()
}

// cycle runs rounds on one node; after a failed round it brings the node
// back to available, and stops cycling it when that fails too.
func (sl *soakLab) cycle(ctx context.Context, uuid string) {
	for ctx.Err() == nil {
		err := sl.round(ctx, uuid)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			sl.cycles.Add(1)
			continue
		}
		sl.failed(err)
		if err := sl.recover(ctx, uuid); err != nil {
			if ctx.Err() == nil {
				sl.failed(err)
			}
			return
		}
	}
}

func (sl *soakLab) failed(err error) {
	sl.failures.Add(1)
	sl.mu.Lock()
	sl.lastFailure = err
	sl.mu.Unlock()
}

// round deploys the image on an available node and undeploys it; the
// undeploy cleans the disk before the node is available again. Undeploy
// clears instance_info, so each round sets the image again.
func (sl *soakLab) round(ctx context.Context, uuid string) error {
	patch := []map[string]any{
		{"op": "add", "path": "/instance_info/image_source", "value": sl.image.url},
		{"op": "add", "path": "/instance_info/image_checksum", "value": sl.image.md5},
	}
	if err := sl.api.do(ctx, http.MethodPatch, "/v1/nodes/"+uuid, patch, http.StatusOK, nil); err != nil {
		return fmt.Errorf("set image of lab node %s: %w", uuid, err)
	}
	if err := sl.api.provision(ctx, uuid, "active"); err != nil {
		return fmt.Errorf("deploy lab node %s: %w", uuid, err)
	}
	if err := sl.await(ctx, uuid, "active", "deploy failed"); err != nil {
		return err
	}
	if err := sl.api.provision(ctx, uuid, "deleted"); err != nil {
		return fmt.Errorf("undeploy lab node %s: %w", uuid, err)
	}
	return sl.await(ctx, uuid, "available", "clean failed")
}

// recover takes a node a failed round left in a stable state back to
// available.
func (sl *soakLab) recover(ctx context.Context, uuid string) error {
	for range 4 {
		state, _, err := sl.state(ctx, uuid)
		if err != nil {
			return err
		}
		var verb, want string
		switch state {
		case "available":
			return nil
		case "active", "deploy failed":
			verb, want = "deleted", "available"
		case "clean failed":
			verb, want = "manage", "manageable"
		case "manageable":
			verb, want = "provide", "available"
		default:
			return fmt.Errorf("lab node %s left in %s", uuid, state)
		}
		if err := sl.api.provision(ctx, uuid, verb); err != nil {
			return fmt.Errorf("recover lab node %s from %s: %w", uuid, state, err)
		}
		if err := sl.await(ctx, uuid, want, "clean failed"); err != nil {
			return err
		}
	}
	return fmt.Errorf("lab node %s not back to available", uuid)
}

// await polls a node once a second until it is in want (nil), in
// failState (an error with its last_error), or soakLabStep passes.
func (sl *soakLab) await(ctx context.Context, uuid, want, failState string) error {
	deadline := time.Now().Add(soakLabStep)
	for {
		state, lastError, err := sl.state(ctx, uuid)
		switch {
		case err != nil:
			return err
		case state == want:
			return nil
		case failState != "" && state == failState:
			return fmt.Errorf("lab node %s: %s: %s", uuid, state, lastError)
		case time.Now().After(deadline):
			return fmt.Errorf("lab node %s still %s after %s, waiting for %s", uuid, state, soakLabStep, want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (sl *soakLab) state(ctx context.Context, uuid string) (state, lastError string, err error) {
	var n struct {
		ProvisionState string `json:"provision_state"`
		LastError      string `json:"last_error"`
	}
	if err := sl.api.do(ctx, http.MethodGet, "/v1/nodes/"+uuid, nil, http.StatusOK, &n); err != nil {
		return "", "", fmt.Errorf("read lab node %s: %w", uuid, err)
	}
	return n.ProvisionState, n.LastError, nil
}

// counts are the rounds done and failed so far; a nil lab has none.
func (sl *soakLab) counts() (cycles, failures int64) {
	if sl == nil {
		return 0, 0
	}
	return sl.cycles.Load(), sl.failures.Load()
}

// row reports the rounds, with the last failure when there was one.
func (sl *soakLab) row() row {
	cycles, failures := sl.counts()
	r := row{fmt.Sprintf("soak: %d lab nodes, deploy -> undeploy (clean) rounds done / failed", len(sl.uuids)),
		fmt.Sprintf("%d / %d", cycles, failures), "0 failed", "ok"}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if failures > 0 {
		r.measured += fmt.Sprintf(" (last: %v)", sl.lastFailure)
		r.verdict = "FAILED"
	}
	return r
}
