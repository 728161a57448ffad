// Package agent is ferric-agent, the program the deploy ramdisk runs on a node. In
// agent mode it speaks the ironic-python-agent protocol: it looks its node up on the
// Bare Metal API, heartbeats with its callback URL and agent token, and serves the
// agent command API (export the disk over iSCSI, install the written image's boot
// loader, erase disks, power off). In callback mode it behaves like the bash deploy
// ramdisk: export the disk, call pass_deploy_info once, and wait for "done" on TCP
// port 10000; for boot_option=local it then installs the boot loader, calls
// pass_bootloader_install_info and waits for "done" again.
package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/deploy/agent/tgt"
	"github.com/ferricbm/ferric/deploy/erase"
	"github.com/ferricbm/ferric/pkg/httpserver"
	"github.com/ferricbm/ferric/pkg/logging"
)

// Version is the agent_version reported in heartbeats. Ironic conductors compare it
// with ironic-python-agent releases to decide which agent features to use; this
// agent implements the command API of IPA 6.1 that the iSCSI deploy and cleaning use.
const Version = "6.1.0"

// Config configures an Agent. Params and Disks are required.
type Config struct {
	// Params come from the kernel command line.
	Params Params
	// Disks are the node's disks; the first is the one exported over iSCSI.
	Disks []string
	// Listen is the agent API address; default 127.0.0.1:9999.
	Listen string
	// CallbackURL is the agent API URL reported to Ironic; default http://<the
	// listening address>, https:// with Params.AutoTLS (set it when Listen is a
	// wildcard address).
	CallbackURL string
	// Portal is the iSCSI portal "ADDR:PORT"; default <Listen host>:3260. The port of
	// start_iscsi_target's portal_port replaces its port.
	Portal string
	// TgtdControlPort is tgtd's -C; TgtdLog its log file.
	TgtdControlPort int
	TgtdLog         string
	// MACs identify the node at lookup (BOOTIF from Params is added).
	MACs []string
	// Address is the node IP sent in pass_deploy_info; default the Portal host.
	Address string
	// DoneListen is where the callback ramdisk waits for "done"; default <Address>:10000.
	DoneListen string
	// HeartbeatInterval replaces Ironic's cadence (a random 0.3–0.6 × the lookup's
	// heartbeat_timeout) when positive.
	HeartbeatInterval time.Duration
	// LookupTimeout bounds the lookup retries; default 5 min. LookupBackoff is the
	// first retry delay (default 1 s), doubled up to LookupMaxBackoff (default 30 s).
	LookupTimeout, LookupBackoff, LookupMaxBackoff time.Duration
	// SysfsRoot is where the disks' serial numbers are read; default /sys.
	SysfsRoot string
	// VirtualMediaDevice is the link to the virtual-media floppy, never erased;
	// default /dev/disk/by-label/ir-vfd-dev.
	VirtualMediaDevice string
	// AuthToken is sent as X-Auth-Token on the callback ramdisk's API calls.
	AuthToken string
	// PowerOff runs when the node should lose power (standby.power_off, and the end
	// of the callback ramdisk's work) after the agent released the disk; nil means
	// the agent simply returns from Run.
	PowerOff func(ctx context.Context) error
	// EraseBlockSize and EraseWriters tune disk erasure; 0 = erase defaults.
	EraseBlockSize, EraseWriters int
	// EraseHook runs between the overwrite and its verification (tests).
	EraseHook erase.Hook
	// Server bounds each client of the agent's command API. Zero fields take
	// the defaults: read timeout 1 min, idle timeout 2 min, headers 64 KiB,
	// and no write timeout, since a command run with ?wait=true (erasing a
	// disk, writing an image) holds its response for as long as it runs.
	Server httpserver.Limits
	// HTTPClient calls the Bare Metal API; default a client with a 30 s timeout.
	HTTPClient *http.Client
	// Log receives the agent's log; nil discards it.
	Log *logrus.Logger
}

func (c *Config) defaults() error {
	if len(c.Disks) == 0 {
		return errors.New("no disk given")
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:9999"
	}
	if c.SysfsRoot == "" {
		c.SysfsRoot = "/sys"
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", c.Listen, err)
	}
	if c.Portal == "" {
		c.Portal = net.JoinHostPort(host, "3260")
	}
	portalHost, portalPort, err := net.SplitHostPort(c.Portal)
	if err != nil {
		return fmt.Errorf("iSCSI portal %q: %w", c.Portal, err)
	}
	if n, err := strconv.Atoi(portalPort); err != nil || n <= 0 || n > 65535 {
		return fmt.Errorf("iSCSI portal %q: invalid port", c.Portal)
	}
	if c.Address == "" {
		c.Address = portalHost
	}
	if c.DoneListen == "" {
		c.DoneListen = net.JoinHostPort(c.Address, "10000")
	}
	if c.LookupTimeout <= 0 {
		c.LookupTimeout = 5 * time.Minute
	}
	if c.LookupBackoff <= 0 {
		c.LookupBackoff = time.Second
	}
	if c.LookupMaxBackoff <= 0 {
		c.LookupMaxBackoff = 30 * time.Second
	}
	if c.VirtualMediaDevice == "" {
		c.VirtualMediaDevice = "/dev/disk/by-label/ir-vfd-dev"
	}
	if c.Server.ReadTimeout <= 0 {
		c.Server.ReadTimeout = time.Minute
	}
	if c.Server.IdleTimeout <= 0 {
		c.Server.IdleTimeout = 2 * time.Minute
	}
	if c.Server.MaxHeaderBytes <= 0 {
		c.Server.MaxHeaderBytes = 64 << 10
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if c.Log == nil {
		c.Log = logging.Discard()
	}
	if c.Params.BootIf != "" && !containsFold(c.MACs, c.Params.BootIf) {
		c.MACs = append(c.MACs, c.Params.BootIf)
	}
	return nil
}

// portalPort is the configured iSCSI portal's port (checked by defaults).
func (c *Config) portalPort() int {
	_, p, _ := net.SplitHostPort(c.Portal)
	n, _ := strconv.Atoi(p)
	return n
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// Agent is one ramdisk agent.
type Agent struct {
	cfg     Config
	log     *logrus.Logger
	api     *ironicClient
	cmds    *commandLog
	started time.Time

	// verifyCA is the PEM certificate the API is served with under
	// auto-TLS, sent in every heartbeat; "" without TLS.
	verifyCA string

	mu       sync.Mutex
	nodeUUID string
	agentTok string
	target   *tgt.Daemon
	exported string // IQN currently exported
	// exportedCHAP is the account the export admits.
	exportedCHAP tgt.CHAP

	kick     chan struct{} // forces a heartbeat
	powerOff chan struct{} // closed by standby.power_off
	offOnce  sync.Once
}

// New checks cfg and builds an Agent; nothing runs until Run or RunCallback.
func New(cfg Config) (*Agent, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	base := cfg.Params.APIURL
	if base == "" {
		base = cfg.Params.IronicAPIURL
	}
	a := &Agent{cfg: cfg, log: cfg.Log, api: &ironicClient{base: base, http: cfg.HTTPClient}, started: time.Now(),
		kick: make(chan struct{}, 1), powerOff: make(chan struct{})}
	if cfg.Params.AgentToken != "" {
		a.agentTok = cfg.Params.AgentToken
	}
	a.cmds = newCommandLog(a.commands(), a.heartbeatNow)
	return a, nil
}

func (a *Agent) token() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.agentTok
}

// NodeUUID is the node found at lookup ("" before).
func (a *Agent) NodeUUID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nodeUUID
}

func (a *Agent) heartbeatNow() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// ErrLookupFailed is returned by Run when the node was not found in time.
var ErrLookupFailed = errors.New("lookup failed")

// Run is agent mode: serve the command API on cfg.Listen, look the node up, then
// heartbeat until ctx ends or standby.power_off completes. The iSCSI target is torn
// down before Run returns; after a power off, cfg.PowerOff runs last.
func (a *Agent) Run(ctx context.Context) error {
	if a.api.base == "" {
		return errors.New("no Ironic API URL (ipa-api-url)")
	}
	if len(a.cfg.MACs) == 0 && a.cfg.Params.NodeUUID == "" {
		return errors.New("lookup needs MAC addresses (or BOOTIF=) or ipa-node-uuid")
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", a.cfg.Listen)
	if err != nil {
		return fmt.Errorf("agent API: %w", err)
	}
	scheme := "http"
	if a.cfg.Params.AutoTLS {
		scheme = "https"
	}
	if a.cfg.CallbackURL == "" {
		a.cfg.CallbackURL = scheme + "://" + ln.Addr().String()
	}
	if a.cfg.Params.AutoTLS {
		if ln, err = a.serveTLS(ln); err != nil {
			return err
		}
	}
	srv := httpserver.New(a.Handler(), a.cfg.Server)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	a.log.WithFields(logrus.Fields{"listen": a.cfg.Listen, "callback_url": a.cfg.CallbackURL}).Info("Agent API listening")

	runErr := a.lookupAndHeartbeat(ctx)
	poweredOff := errors.Is(runErr, errPoweredOff)
	if poweredOff {
		runErr = nil
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("agent API shutdown: %w", err))
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		runErr = errors.Join(runErr, err)
	}
	runErr = errors.Join(runErr, a.stopTarget(shutCtx))
	if poweredOff {
		a.log.Info("Disk released; powering off")
	}
	if poweredOff && a.cfg.PowerOff != nil {
		if err := a.cfg.PowerOff(context.WithoutCancel(ctx)); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("power off: %w", err))
		}
	}
	return runErr
}

var errPoweredOff = errors.New("powered off")

// serveTLS wraps the agent API's listener in TLS with a certificate made now
// for the host of the callback URL, the address the conductor connects to.
func (a *Agent) serveTLS(ln net.Listener) (net.Listener, error) {
	u, err := url.Parse(a.cfg.CallbackURL)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		ln.Close()
		return nil, fmt.Errorf("auto-TLS needs an https callback URL, not %q", a.cfg.CallbackURL)
	}
	cert, certPEM, err := NewSelfSignedCert(u.Hostname())
	if err != nil {
		ln.Close()
		return nil, err
	}
	a.verifyCA = certPEM
	return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), nil
}

func (a *Agent) lookupAndHeartbeat(ctx context.Context) error {
	res, err := a.lookup(ctx)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.nodeUUID = res.UUID()
	if t := res.Config.AgentToken; t != "" && t != maskedToken {
		a.agentTok = t
	}
	haveToken := a.agentTok != ""
	a.mu.Unlock()
	log := a.log.WithField("node", res.UUID())
	if !haveToken {
		log.Warn("Lookup returned no usable agent token; heartbeats will be refused")
	}
	log.Info("Node found")
	timeout := time.Duration(res.Config.HeartbeatTimeout * float64(time.Second))
	if timeout <= 0 {
		timeout = 300 * time.Second
	}
	return a.heartbeatLoop(ctx, res.UUID(), timeout)
}

// lookup retries with exponential back-off: the node may not be in a lookup-able
// state yet, or the API may be briefly unreachable.
func (a *Agent) lookup(ctx context.Context) (LookupResult, error) {
	deadline := time.Now().Add(a.cfg.LookupTimeout)
	delay := a.cfg.LookupBackoff
	for attempt := 1; ; attempt++ {
		res, err := a.api.lookup(ctx, a.cfg.MACs, a.cfg.Params.NodeUUID)
		if err == nil {
			return res, nil
		}
		if time.Now().Add(delay).After(deadline) {
			return LookupResult{}, fmt.Errorf("%w after %d attempts: %w", ErrLookupFailed, attempt, err)
		}
		a.log.WithError(err).WithField("retry_in", delay).Warn("Lookup failed")
		select {
		case <-ctx.Done():
			return LookupResult{}, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, a.cfg.LookupMaxBackoff)
	}
}

// heartbeatLoop heartbeats at once, then every interval (Ironic's agent: a random
// 0.3–0.6 of heartbeat_timeout), immediately after an async command ends, and after
// a failure with a back-off growing ×2.7 from one second but never past the interval.
func (a *Agent) heartbeatLoop(ctx context.Context, nodeUUID string, timeout time.Duration) error {
	interval := func() time.Duration {
		if a.cfg.HeartbeatInterval > 0 {
			return a.cfg.HeartbeatInterval
		}
		return time.Duration(float64(timeout) * (0.3 + 0.3*rand.Float64()))
	}
	errDelay := time.Second
	for {
		next := interval()
		err := a.api.heartbeat(ctx, nodeUUID, heartbeatBody{CallbackURL: a.cfg.CallbackURL, AgentToken: a.token(),
			AgentVersion: Version, AgentVerifyCA: a.verifyCA})
		if err != nil && ctx.Err() == nil {
			a.log.WithError(err).Warn("Heartbeat failed")
			next = min(errDelay, next)
			// Capped: left to grow, the float product overflows into a
			// negative delay and the loop spins.
			errDelay = min(errDelay*27/10, timeout)
		} else {
			errDelay = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.powerOff:
			return errPoweredOff
		case <-a.kick:
		case <-time.After(next):
		}
	}
}

// ensureTarget exports the first disk as iqn on a tgtd listening on the portal with
// port, to the initiator logging in with chap only; an existing export of the same iqn
// and account is kept.
func (a *Agent) ensureTarget(ctx context.Context, iqn string, port int, chap tgt.CHAP) (alreadyExported bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	host, _, _ := net.SplitHostPort(a.cfg.Portal)
	portal := net.JoinHostPort(host, fmt.Sprint(port))
	if a.target != nil && a.target.Portal() != portal {
		if err := a.target.Stop(ctx); err != nil {
			return false, err
		}
		a.target, a.exported = nil, ""
	}
	if a.target != nil && a.exported == iqn && a.exportedCHAP == chap {
		return true, nil
	}
	if a.target == nil {
		d, err := tgt.Start(ctx, tgt.Options{ControlPort: a.cfg.TgtdControlPort, Portal: portal, LogPath: a.cfg.TgtdLog})
		if err != nil {
			return false, err
		}
		a.target = d
	}
	if a.exported != "" {
		if err := a.target.Unexport(ctx, a.exported); err != nil {
			return false, err
		}
		a.exported = ""
	}
	// The conductor checks the LUN's serial number against the node's disk
	// before writing; tgtd reports its own unless told the disk's.
	serial := diskSerial(a.cfg.SysfsRoot, a.cfg.Disks[0])
	if err := a.target.ExportCHAP(ctx, iqn, a.cfg.Disks[0], chap, serial); err != nil {
		return false, err
	}
	a.exported, a.exportedCHAP = iqn, chap
	return false, nil
}

func (a *Agent) stopTarget(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.target == nil {
		return nil
	}
	err := a.target.Stop(ctx)
	a.target, a.exported = nil, ""
	if err != nil {
		return fmt.Errorf("stop iSCSI target: %w", err)
	}
	return nil
}

// isVirtualMedia reports whether dev is the virtual-media floppy that carries the
// ramdisk's parameters (erasing it would destroy them).
func (a *Agent) isVirtualMedia(dev string) bool {
	vm, err := os.Stat(a.cfg.VirtualMediaDevice)
	if err != nil {
		return false
	}
	st, err := os.Stat(dev)
	return err == nil && os.SameFile(vm, st)
}

// diskSerial is the serial number the kernel reports for the block device
// at path (through symlinks such as /dev/disk/by-path): the device's own
// attribute (NVMe, virtio) or its unit serial number VPD page (SCSI, SATA).
// It is empty when unknown or not safe to hand to tgtadm.
func diskSerial(sysfs, path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	dev := filepath.Join(sysfs, "class", "block", filepath.Base(real))
	for _, attr := range []string{"serial", "device/serial"} {
		if b, err := os.ReadFile(filepath.Join(dev, attr)); err == nil {
			return safeSerial(string(b))
		}
	}
	if b, err := os.ReadFile(filepath.Join(dev, "device", "vpd_pg80")); err == nil && len(b) > 4 {
		return safeSerial(string(b[4:]))
	}
	return ""
}

var serialChars = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,36}$`)

// safeSerial trims s and keeps it only when tgtd can report it unchanged:
// at most 36 characters, none that tgtadm's --params would split on.
func safeSerial(s string) string {
	s = strings.TrimSpace(strings.Trim(s, "\x00"))
	if !serialChars.MatchString(s) {
		return ""
	}
	return s
}
