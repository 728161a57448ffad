package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/ferricbm/ferric/deploy/agent/tgt"
	"github.com/ferricbm/ferric/deploy/agent/tgt/tgttest"
	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab"
)

// workDir makes a section's temporary directory; done removes it unless
// -keep asked to keep it.
func workDir(s settings, prefix string) (dir string, done func(), err error) {
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	if s.keep {
		fmt.Println("work directory:", dir)
		return dir, func() {}, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// labRig is what a section driving lab nodes needs: ferric-api and one
// ferric-conductor over RabbitMQ and a MySQL database of their own,
// configured for the lab, and the lab's nodes.
type labRig struct {
	api       *apiClient
	conductor *harness.Service
	lab       *lab.Lab
	// deployImages is the path prefix of the dummy deploy kernel and
	// ramdisk (see enrolLabNode).
	deployImages string
	// httpRoot is the conductor's boot file server's directory, served
	// at httpURL.
	httpRoot, httpURL string

	closers closers
}

// startLabRig starts a rig in work with nodes lab nodes of diskSize bytes
// whose BMCs are of kind (lab.BMCIPMI, BMCILO, BMCRedfish); configure
// adjusts the conductor's configuration (timings, options).
func startLabRig(ctx context.Context, work, dbPrefix, kind string, nodes int, diskSize int64, configure func(harness.Config) harness.Config) (r *labRig, err error) {
	rig := &labRig{deployImages: filepath.Join(work, "deploy")}
	r = rig
	defer func() {
		if err != nil {
			// r is nil by now: a failed start returns no rig, but closes what it began.
			rig.Close()
		}
	}()
	fmt.Println("building binaries and ferric-agent ...")
	bin, err := harness.Build(filepath.Join(work, "bin"))
	if err != nil {
		return nil, err
	}
	root, err := harness.RepoRoot()
	if err != nil {
		return nil, err
	}
	agent, err := lab.BuildAgent(ctx, root, bin)
	if err != nil {
		return nil, err
	}
	database, err := harness.CreateDatabase(ctx, dbPrefix)
	if err != nil {
		return nil, err
	}
	r.closers = append(r.closers, func() error { return database.Drop(context.Background()) })
	dirs, err := lab.MakeDirs(filepath.Join(work, "conductor"))
	if err != nil {
		return nil, err
	}
	portalPort, err := lab.FreeTCPPort()
	if err != nil {
		return nil, err
	}
	httpPort, err := lab.FreeTCPPort()
	if err != nil {
		return nil, err
	}
	// The deploy kernel and ramdisk are files of the work directory.
	base := configure(lab.Configure(harness.BaseConfig(database.Connection(), "amqp", harness.FastTimings), dirs, portalPort, httpPort).
		Set("DEFAULT", "debug", false).Set("conductor", "file_url_allowed_paths", []string{work}))
	d := harness.NewDeployment(bin, work, base)
	r.closers = append(r.closers, func() error { return d.StopAll(30 * time.Second) })
	if err := d.DBSync(ctx); err != nil {
		return nil, err
	}
	if _, err := d.StartAPI(ctx, "api"); err != nil {
		return nil, err
	}
	lab.SetAPIURL(d.Base, d.APIURL)
	if r.conductor, err = d.StartConductor(ctx, "conductor"); err != nil {
		return nil, err
	}
	r.httpRoot, r.httpURL = dirs.HTTPRoot, fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	r.api = newAPI(d.APIURL)
	if r.api.version, err = harness.MaxVersion(ctx, d.APIURL); err != nil {
		return nil, err
	}
	fmt.Printf("starting %d lab nodes with %d MiB disks ...\n", nodes, diskSize>>20)
	if r.lab, err = lab.Start(ctx, lab.Options{Nodes: nodes, AgentBinary: agent, TFTPRoot: dirs.TFTPRoot,
		DiskSize: diskSize, PortalPort: portalPort, TempDir: work, BMCKind: kind}); err != nil {
		return nil, err
	}
	r.closers = append(r.closers, r.lab.Stop)
	return r, nil
}

// Close stops what the rig started, last first.
func (r *labRig) Close() error { return r.closers.run() }

// closers stop what a rig started.
type closers []func() error

// run calls the closers last first, once.
func (c *closers) run() error {
	var problems []error
	for i := len(*c) - 1; i >= 0; i-- {
		problems = append(problems, (*c)[i]())
	}
	*c = nil
	return errors.Join(problems...)
}

// conductorCost is what a conductor spent on a measured operation.
type conductorCost struct {
	took time.Duration
	// cpu is user plus system seconds; peak the VmHWM (over the
	// process's life) after the operation.
	cpu  float64
	peak int64
	// deployed is how many nodes reached active (deployAll).
	deployed int
}

// measureConductor runs f and reports its wall time and the conductor's
// CPU time meanwhile.
func measureConductor(pid int, f func() error) (conductorCost, error) {
	before, err := cpuSeconds(pid)
	if err != nil {
		return conductorCost{}, err
	}
	start := time.Now()
	if err := f(); err != nil {
		return conductorCost{}, err
	}
	c := conductorCost{took: time.Since(start)}
	after, err := cpuSeconds(pid)
	if err != nil {
		return conductorCost{}, err
	}
	c.cpu = after - before
	if c.peak, err = peakRSS(pid); err != nil {
		return conductorCost{}, err
	}
	return c, nil
}

// rows reports the conductor's CPU time during what and its peak RSS.
func (c conductorCost) rows(what string) []row {
	return []row{
		{"conductor CPU during those " + what, fmt.Sprintf("%.1f s (%.0f%% of one core)", c.cpu, 100*c.cpu/c.took.Seconds()), "-", ""},
		{"conductor peak RSS (VmHWM)", fmt.Sprintf("%d MiB", c.peak>>20), "-", ""},
	}
}

// exportBenchLUN starts a tgtd for a bench section (with tgtd's stock
// settings if stock), logging into work, and exports file as the first disk
// LUN of target iqn; stop ends the daemon.
func exportBenchLUN(ctx context.Context, work, iqn, file string, stock bool) (daemon *tgt.Daemon, stop func(), err error) {
	t, err := tgttest.Start(ctx, work, tgt.Options{Stock: stock})
	if err != nil {
		return nil, nil, err
	}
	daemon = t.Daemon
	stop = func() {
		if err := t.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stop tgtd:", err)
		}
	}
	if err := daemon.Export(ctx, iqn, file); err != nil {
		stop()
		return nil, nil, err
	}
	return daemon, stop, nil
}

// servedImage is a whole-disk qcow2 image of random data on an HTTP
// server of its own, for lab nodes to deploy.
type servedImage struct {
	url, md5 string
	close    func()
}

// serveRandomImage writes size random bytes as a qcow2 image under work
// and serves it.
func serveRandomImage(ctx context.Context, work string, size int64) (*servedImage, error) {
	served := filepath.Join(work, "served")
	if err := os.MkdirAll(served, 0o755); err != nil {
		return nil, err
	}
	fmt.Printf("writing a %d MiB random qcow2 image ...\n", size>>20)
	raw := filepath.Join(work, "image.raw")
	if err := randomImage(raw, size); err != nil {
		return nil, err
	}
	qcow := filepath.Join(served, "image.qcow2")
	if err := command(ctx, "qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw, qcow); err != nil {
		return nil, err
	}
	sum, err := md5sum(qcow)
	if err != nil {
		return nil, err
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(served)))
	return &servedImage{url: srv.URL + "/image.qcow2", md5: sum, close: srv.Close}, nil
}

// deployAll takes the rig's enrolled nodes (manage requested) to
// available, gives them img and deploys them all at once; it returns the
// wall time as measured (with the failures, if any) and what the
// conductor spent meanwhile.
func (r *labRig) deployAll(ctx context.Context, uuids []string, img *servedImage, what string) (string, conductorCost, error) {
	api := r.api
	waitAll := func(state string) error {
		if got, err := api.waitState(ctx, state, "", uuids, 2*time.Minute); err != nil || got != len(uuids) {
			return fmt.Errorf("%d of %d nodes reached %s: %w%s", got, len(uuids), state, err, stragglers(ctx, api, uuids, state))
		}
		return nil
	}
	if err := waitAll("manageable"); err != nil {
		return "", conductorCost{}, err
	}
	for _, u := range uuids {
		if err := api.provision(ctx, u, "provide"); err != nil {
			return "", conductorCost{}, err
		}
	}
	if err := waitAll("available"); err != nil {
		return "", conductorCost{}, err
	}
	for _, u := range uuids {
		patch := []map[string]any{
			{"op": "add", "path": "/instance_info/image_source", "value": img.url},
			{"op": "add", "path": "/instance_info/image_checksum", "value": img.md5},
		}
		if err := api.do(ctx, http.MethodPatch, "/v1/nodes/"+u, patch, http.StatusOK, nil); err != nil {
			return "", conductorCost{}, err
		}
	}

	fmt.Printf("deploying %d %s at once (load average %s) ...\n", len(uuids), what, loadAverage())
	var got int
	cost, err := measureConductor(r.conductor.PID(), func() error {
		for _, u := range uuids {
			if err := api.provision(ctx, u, "active"); err != nil {
				return err
			}
		}
		var err error
		got, err = api.waitState(ctx, "active", "deploy failed", uuids, labDeployTimeout)
		return err
	})
	if err != nil {
		return "", conductorCost{}, err
	}
	fmt.Printf("load average %s\n", loadAverage())
	measured := cost.took.Round(10 * time.Millisecond).String()
	if got < len(uuids) {
		measured += fmt.Sprintf(" (%d nodes failed)", len(uuids)-got)
		fmt.Println(stragglers(ctx, api, uuids, "active"))
	}
	cost.deployed = got
	return measured, cost, nil
}
