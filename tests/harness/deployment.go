package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// ReadyTimeout bounds how long a process may take to become ready.
const ReadyTimeout = 60 * time.Second

// Deployment is a set of Ferric processes sharing one configuration
// (database, transport, timings). Each process gets its own config file
// with a unique host name and its own log file under Dir.
type Deployment struct {
	Dir    string
	BinDir string
	Base   Config
	// APIURL is scheme://host:port of the running API, once started.
	APIURL string
	// ConductorReady tells whether a started conductor is ready; nil means
	// "GET /v1/drivers lists its host", which needs the API running.
	ConductorReady func(ctx context.Context, host string) error

	mu    sync.Mutex
	procs []*Process
}

// NewDeployment prepares a deployment; nothing runs until a Start method.
func NewDeployment(binDir, dir string, base Config) *Deployment {
	return &Deployment{Dir: dir, BinDir: binDir, Base: base}
}

// Service is one started process and the host name it registered under.
type Service struct {
	Host string
	*Process
}

func (d *Deployment) configFor(name string) (host, path string, cfg Config) {
	host = "e2e-" + name + "-" + RandomHex(3)
	cfg = d.Base.Clone().Set("DEFAULT", "host", host)
	return host, filepath.Join(d.Dir, name+".conf"), cfg
}

func (d *Deployment) start(name, bin string, args []string, cfg Config, path string) (*Process, error) {
	if err := cfg.Write(path); err != nil {
		return nil, err
	}
	p, err := Start(name, filepath.Join(d.BinDir, bin), append(args, "--config", path), filepath.Join(d.Dir, name+".log"))
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.procs = append(d.procs, p)
	d.mu.Unlock()
	return p, nil
}

// DBSync runs `ferric dbsync upgrade` against the deployment's database.
func (d *Deployment) DBSync(ctx context.Context) error {
	_, path, cfg := d.configFor("dbsync")
	if err := cfg.Write(path); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(d.BinDir, "ferric"), "dbsync", "upgrade", "--config", path)
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ferric dbsync upgrade: %w\n%s", err, out)
	}
	return nil
}

// StartServe starts `ferric serve` (API and conductor in one process) and
// waits until its API answers.
func (d *Deployment) StartServe(ctx context.Context, name string) (*Service, error) {
	return d.startAPI(ctx, name, "ferric", []string{"serve"})
}

// StartAPI starts ferric-api and waits until it answers.
func (d *Deployment) StartAPI(ctx context.Context, name string) (*Service, error) {
	return d.startAPI(ctx, name, "ferric-api", nil)
}

func (d *Deployment) startAPI(ctx context.Context, name, bin string, args []string) (*Service, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	host, path, cfg := d.configFor(name)
	cfg.Set("api", "host_ip", "127.0.0.1").Set("api", "port", port)
	p, err := d.start(name, bin, args, cfg, path)
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	err = poll(ctx, p, func() error {
		resp, err := Do(ctx, http.MethodGet, url+"/", nil, nil)
		if err != nil {
			return err
		}
		if resp.Status != http.StatusOK {
			return fmt.Errorf("GET / answered %d", resp.Status)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	d.APIURL = url
	return &Service{Host: host, Process: p}, nil
}

// StartConductor starts ferric-conductor and waits until it is ready (see
// ConductorReady; by default the API must already run). Each change edits
// this conductor's copy of Base only, e.g. for a metrics port of its own.
func (d *Deployment) StartConductor(ctx context.Context, name string, changes ...func(Config) Config) (*Service, error) {
	if d.ConductorReady == nil && d.APIURL == "" {
		return nil, errors.New("start the API before a conductor: readiness is read from GET /v1/drivers")
	}
	host, path, cfg := d.configFor(name)
	for _, change := range changes {
		cfg = change(cfg)
	}
	p, err := d.start(name, "ferric-conductor", nil, cfg, path)
	if err != nil {
		return nil, err
	}
	if d.ConductorReady != nil {
		err = poll(ctx, p, func() error { return d.ConductorReady(ctx, host) })
	} else {
		err = d.WaitConductor(ctx, p, host, true)
	}
	if err != nil {
		return nil, err
	}
	return &Service{Host: host, Process: p}, nil
}

// WaitConductor polls ConductorAlive until it is as wanted.
// p, when not nil, makes the wait fail as soon as that process exits.
func (d *Deployment) WaitConductor(ctx context.Context, p *Process, host string, alive bool) error {
	return poll(ctx, p, func() error {
		got, err := d.ConductorAlive(ctx, host)
		if err != nil {
			return err
		}
		if got != alive {
			return fmt.Errorf("conductor %s alive=%v", host, got)
		}
		return nil
	})
}

// ConductorAlive tells whether the API counts a conductor as alive: GET
// /v1/drivers lists, for each hardware type, the hosts of the conductors
// whose heartbeat is fresh. It works at every microversion.
func (d *Deployment) ConductorAlive(ctx context.Context, host string) (bool, error) {
	resp, err := Do(ctx, http.MethodGet, d.APIURL+"/v1/drivers", nil, nil)
	if err != nil {
		return false, err
	}
	if resp.Status != http.StatusOK {
		return false, fmt.Errorf("GET /v1/drivers answered %d: %s", resp.Status, resp.Body)
	}
	var doc struct {
		Drivers []struct {
			Hosts []string `json:"hosts"`
		} `json:"drivers"`
	}
	if err := json.Unmarshal(resp.Body, &doc); err != nil {
		return false, fmt.Errorf("GET /v1/drivers: %w", err)
	}
	for _, drv := range doc.Drivers {
		if slices.Contains(drv.Hosts, host) {
			return true, nil
		}
	}
	return false, nil
}

// StopAll stops every process the deployment started, newest first.
func (d *Deployment) StopAll(grace time.Duration) error {
	d.mu.Lock()
	procs := d.procs
	d.procs = nil
	d.mu.Unlock()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].Stop(grace); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", procs[i].Name, err))
		}
	}
	return errors.Join(errs...)
}

// Processes lists the processes started so far.
func (d *Deployment) Processes() []*Process {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*Process(nil), d.procs...)
}

// poll retries check every 200 ms until it succeeds, ctx ends, ReadyTimeout
// passes, or p exits.
func poll(ctx context.Context, p *Process, check func() error) error {
	deadline := time.Now().Add(ReadyTimeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited while waiting for it (%w); last output:\n%s", p.Name, err, p.LogTail(30))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", ReadyTimeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
