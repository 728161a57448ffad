// Package tgt drives a tgtd (Linux SCSI target framework) daemon: it starts one or
// attaches to one already listening on a control port, exports files or block devices
// as iSCSI targets with LUN 1, and tears down what it created.
//
// Targets are exported tuned for bulk writes from a remote initiator (see
// bulkParams and mallocEnv): a deploy's throughput is bounded by tgtd's CPU,
// and with tgtd's stock settings most of it goes to per-PDU work and page faults.
//
// Every tgtadm call runs under a time limit, because tgtadm blocks forever on the
// socket of a tgtd that is gone or stopped. tgtd ignores SIGTERM while any target
// exists, so shutting down deletes the targets first and then asks the daemon to exit.
package tgt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ferricbm/ferric/pkg/secrets"
)

// defaultCallTimeout is Options.CallTimeout when none is given.
const defaultCallTimeout = 15 * time.Second

// socketDir is where tgtd keeps its control sockets (socket.N and socket.N.lock).
const socketDir = "/var/run/tgtd"

// Options configures Start. Portal is required.
type Options struct {
	// ControlPort is tgtd's -C value, which names its control socket; 0 is tgtd's
	// default socket. Several tgtd processes on one machine need distinct ports.
	ControlPort int
	// Portal is the iSCSI listen address, "ADDR:PORT".
	Portal string
	// LogPath receives tgtd's output; empty discards it.
	LogPath string
	// CallTimeout bounds each tgtadm call; default 15 s.
	CallTimeout time.Duration
	// ReadyTimeout bounds the wait for a started tgtd to answer; default 10 s.
	ReadyTimeout time.Duration
	// Stock keeps tgtd's own iSCSI parameters and allocator settings instead of
	// the bulk-write tuning, as a plain tgtd would run; benchmarks compare the two.
	Stock bool
}

// bulkParams are the iSCSI parameters set on every exported target. tgtd's
// stock 8 KiB data segments cost it a read, an event and a wake-up per 8 KiB
// in both directions; 256 KiB segments cut its CPU per written GiB by about a
// third and make read-back cheaper still. Larger bursts and no initial R2T let
// a write's data follow its command without waiting for the target.
var bulkParams = [][2]string{
	{"MaxRecvDataSegmentLength", "262144"},
	{"MaxXmitDataSegmentLength", "262144"},
	{"FirstBurstLength", "1048576"},
	{"MaxBurstLength", "1048576"},
	{"InitialR2T", "No"},
}

// mallocEnv raises glibc's mmap threshold in a tgtd this package starts. tgtd
// allocates a data buffer per SCSI command, and glibc serves those of 128 KiB
// or more with a fresh mmap each time: every command of 1 MiB then page-faults
// its whole buffer in and unmaps it again, which was most of tgtd's CPU here
// (perf). With the threshold at 32 MiB the buffers are reused from the heap.
var mallocEnv = []string{"MALLOC_MMAP_THRESHOLD_=33554432", "MALLOC_TRIM_THRESHOLD_=268435456"}

// Daemon is a tgtd this process started (owned) or found running (attached).
// Its methods are safe for concurrent use.
type Daemon struct {
	opts Options

	mu      sync.Mutex
	cmd     *exec.Cmd // nil when attached
	exited  chan struct{}
	created map[string]int // targets this Daemon created: IQN -> tid
	// accounts are the CHAP accounts this Daemon created, by the IQN of
	// the target they admit to: tgtd keeps accounts after their target.
	accounts map[string]string
}

// CHAP is the one-way CHAP account an initiator must log in with.
type CHAP struct {
	User   string
	Secret string
}

// NewCHAP makes a one-time account: a random user and a 24-character
// secret (about 140 bits, above RFC 3720's minimum of 96).
func NewCHAP() (CHAP, error) {
	user, err := secrets.Generate(12)
	if err != nil {
		return CHAP{}, err
	}
	secret, err := secrets.Generate(24)
	if err != nil {
		return CHAP{}, err
	}
	return CHAP{User: "ferric-" + user, Secret: secret}, nil
}

// Start attaches to the tgtd answering on opts.ControlPort, adding opts.Portal to
// its portals when missing, or starts `tgtd -f -C N --iscsi portal=ADDR:PORT` and
// waits until both its control socket and the portal answer.
func Start(ctx context.Context, opts Options) (*Daemon, error) {
	if opts.Portal == "" {
		return nil, errors.New("tgtd: no iSCSI portal given")
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = defaultCallTimeout
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 10 * time.Second
	}
	d := &Daemon{opts: opts, created: map[string]int{}, accounts: map[string]string{}}
	if _, err := os.Stat(d.socketPath()); err == nil && d.answers(ctx) {
		return d, d.ensurePortal(ctx)
	}
	return d, d.start(ctx)
}

// Answers reports whether a tgtd answers on controlPort, waiting for it at
// most the default call time limit.
func Answers(ctx context.Context, controlPort int) bool {
	d := &Daemon{opts: Options{ControlPort: controlPort, CallTimeout: defaultCallTimeout}}
	return d.answers(ctx)
}

func (d *Daemon) answers(ctx context.Context) bool {
	_, err := d.adm(ctx, "--mode", "system", "--op", "show")
	return err == nil
}

// Owned reports whether this Daemon started the tgtd process (and will end it).
func (d *Daemon) Owned() bool { return d.cmd != nil }

// Portal is the iSCSI portal the targets are reachable on.
func (d *Daemon) Portal() string { return d.opts.Portal }

// PID is the process id of the tgtd this Daemon started, 0 when attached.
func (d *Daemon) PID() int {
	if d.cmd == nil {
		return 0
	}
	return d.cmd.Process.Pid
}

func (d *Daemon) socketPath() string {
	return filepath.Join(socketDir, "socket."+strconv.Itoa(d.opts.ControlPort))
}

func (d *Daemon) start(ctx context.Context) error {
	//nolint:noctx // tgtd outlives the start-up context; Stop ends it
	cmd := exec.Command("tgtd", "-f", "-C", strconv.Itoa(d.opts.ControlPort), "--iscsi", "portal="+d.opts.Portal)
	if !d.opts.Stock {
		cmd.Env = append(cmd.Environ(), mallocEnv...)
	}
	if d.opts.LogPath != "" {
		f, err := os.OpenFile(d.opts.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("tgtd log: %w", err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start tgtd: %w", err)
	}
	d.cmd, d.exited = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(d.exited)
	}()
	deadline := time.Now().Add(d.opts.ReadyTimeout)
	for {
		if d.answers(ctx) {
			if c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", d.opts.Portal); err == nil {
				c.Close()
				return nil
			}
		}
		select {
		case <-d.exited:
			d.removeSockets()
			return fmt.Errorf("tgtd exited during start-up (control port %d, portal %s)", d.opts.ControlPort, d.opts.Portal)
		case <-ctx.Done():
			d.kill()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.kill()
			return fmt.Errorf("tgtd did not become ready within %s", d.opts.ReadyTimeout)
		}
	}
}

// ensurePortal adds the wanted portal to an attached tgtd that does not listen there.
func (d *Daemon) ensurePortal(ctx context.Context) error {
	out, err := d.adm(ctx, "--mode", "portal", "--op", "show")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(out, "\n") {
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "Portal: ")
		if ok && strings.SplitN(addr, ",", 2)[0] == d.opts.Portal {
			return nil
		}
	}
	_, err = d.adm(ctx, "--mode", "portal", "--op", "new", "--param", "portal="+d.opts.Portal)
	return err
}

// Adm runs tgtadm against this daemon's control port with the call time
// limit; a CHAP password in args is left out of the error.
func (d *Daemon) Adm(ctx context.Context, args ...string) (string, error) {
	return d.adm(ctx, args...)
}

func (d *Daemon) adm(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.CallTimeout)
	defer cancel()
	full := append([]string{"-C", strconv.Itoa(d.opts.ControlPort), "--lld", "iscsi"}, args...)
	out, err := exec.CommandContext(ctx, "tgtadm", full...).CombinedOutput()
	if ctx.Err() != nil {
		return "", fmt.Errorf("tgtadm %s: no answer within %s", shown(args), d.opts.CallTimeout)
	}
	if err != nil {
		return "", fmt.Errorf("tgtadm %s: %w: %s", shown(args), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// shown is a tgtadm command line for errors: without a CHAP password.
func shown(args []string) string {
	out := slices.Clone(args)
	for i := range out {
		if i > 0 && out[i-1] == "--password" {
			out[i] = "******"
		}
	}
	return strings.Join(out, " ")
}

// Target is one target as tgtadm lists it.
type Target struct {
	TID  int
	IQN  string
	LUNs map[int]string // LUN -> backing store path (LUN 0, the controller, is left out)
}

// Targets lists the daemon's targets.
func (d *Daemon) Targets(ctx context.Context) ([]Target, error) {
	out, err := d.adm(ctx, "--mode", "target", "--op", "show")
	if err != nil {
		return nil, err
	}
	return parseTargets(out), nil
}

func parseTargets(out string) []Target {
	var targets []Target
	lun := -1
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "Target "); ok {
			tid, iqn, _ := strings.Cut(rest, ": ")
			n, err := strconv.Atoi(tid)
			if err != nil {
				continue
			}
			targets = append(targets, Target{TID: n, IQN: strings.TrimSpace(iqn), LUNs: map[int]string{}})
			lun = -1
			continue
		}
		if len(targets) == 0 {
			continue
		}
		field := strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(field, "LUN: "); ok {
			if n, err := strconv.Atoi(v); err == nil {
				lun = n
			}
		} else if v, ok := strings.CutPrefix(field, "Backing store path: "); ok && lun > 0 {
			targets[len(targets)-1].LUNs[lun] = v
		}
	}
	return targets
}

// Export makes backing (a regular file or a block device) LUN 1 of a target named
// iqn, open to every initiator address. Exporting the same iqn and backing again is a
// no-op; the same iqn with another backing store is an error.
func (d *Daemon) Export(ctx context.Context, iqn, backing string) error {
	return d.export(ctx, iqn, backing, nil, "")
}

// ExportCHAP is Export with the target admitting only initiators that log in
// with chap; the account is created for this target and deleted with it. A
// serial, when given, is the LUN's unit serial number (the backing disk's),
// instead of tgtd's own.
func (d *Daemon) ExportCHAP(ctx context.Context, iqn, backing string, chap CHAP, serial string) error {
	if chap.User == "" || chap.Secret == "" {
		return errors.New("tgtd: a CHAP account needs a user and a secret")
	}
	return d.export(ctx, iqn, backing, &chap, serial)
}

func (d *Daemon) export(ctx context.Context, iqn, backing string, chap *CHAP, serial string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	targets, err := d.Targets(ctx)
	if err != nil {
		return err
	}
	tid := 1
	for _, t := range targets {
		if t.IQN == iqn {
			if chap != nil && d.accounts[iqn] != chap.User {
				return fmt.Errorf("target %s is already exported without CHAP user %s", iqn, chap.User)
			}
			if t.LUNs[1] == backing {
				return nil
			}
			return fmt.Errorf("target %s already exports %q as LUN 1, not %q", iqn, t.LUNs[1], backing)
		}
		tid = max(tid, t.TID+1)
	}
	id := strconv.Itoa(tid)
	if _, err := d.adm(ctx, "--mode", "target", "--op", "new", "--tid", id, "--targetname", iqn); err != nil {
		return err
	}
	d.created[iqn] = tid
	if _, err := d.adm(ctx, "--mode", "logicalunit", "--op", "new", "--tid", id, "--lun", "1", "--backing-store", backing); err != nil {
		return errors.Join(err, d.deleteTarget(ctx, iqn, tid))
	}
	if serial != "" {
		if _, err := d.adm(ctx, "--mode", "logicalunit", "--op", "update", "--tid", id, "--lun", "1", "--params", "scsi_sn="+serial); err != nil {
			return errors.Join(err, d.deleteTarget(ctx, iqn, tid))
		}
	}
	if !d.opts.Stock {
		for _, p := range bulkParams {
			if _, err := d.adm(ctx, "--mode", "target", "--op", "update", "--tid", id, "--name", p[0], "--value", p[1]); err != nil {
				return errors.Join(err, d.deleteTarget(ctx, iqn, tid))
			}
		}
	}
	// The account is bound before the target accepts any initiator, so
	// there is no moment it is open.
	if chap != nil {
		if _, err := d.adm(ctx, "--mode", "account", "--op", "new", "--user", chap.User, "--password", chap.Secret); err != nil {
			return errors.Join(err, d.deleteTarget(ctx, iqn, tid))
		}
		d.accounts[iqn] = chap.User
		if _, err := d.adm(ctx, "--mode", "account", "--op", "bind", "--tid", id, "--user", chap.User); err != nil {
			return errors.Join(err, d.deleteTarget(ctx, iqn, tid))
		}
	}
	if _, err := d.adm(ctx, "--mode", "target", "--op", "bind", "--tid", id, "--initiator-address", "ALL"); err != nil {
		return errors.Join(err, d.deleteTarget(ctx, iqn, tid))
	}
	return nil
}

// Unexport deletes the target named iqn, even with initiators logged in.
func (d *Daemon) Unexport(ctx context.Context, iqn string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	targets, err := d.Targets(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(targets, func(t Target) bool { return t.IQN == iqn })
	if i < 0 {
		delete(d.created, iqn)
		return nil
	}
	return d.deleteTarget(ctx, iqn, targets[i].TID)
}

// deleteTarget retries while tgtd answers "still active": with commands in flight it
// first drops the connections and refuses until those commands have drained.
func (d *Daemon) deleteTarget(ctx context.Context, iqn string, tid int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := d.adm(ctx, "--mode", "target", "--op", "delete", "--force", "--tid", strconv.Itoa(tid))
		if err == nil {
			delete(d.created, iqn)
			return d.deleteAccount(ctx, iqn)
		}
		if !strings.Contains(err.Error(), "still active") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// deleteAccount removes the CHAP account created for the target iqn, if any.
func (d *Daemon) deleteAccount(ctx context.Context, iqn string) error {
	user, ok := d.accounts[iqn]
	if !ok {
		return nil
	}
	if _, err := d.adm(ctx, "--mode", "account", "--op", "delete", "--user", user); err != nil {
		return err
	}
	delete(d.accounts, iqn)
	return nil
}

// Stop deletes the targets this Daemon created and, when it started tgtd, asks the
// daemon to exit and kills it by PID if it has not within five seconds. An attached
// tgtd keeps running.
func (d *Daemon) Stop(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd != nil {
		select {
		case <-d.exited:
			d.removeSockets()
			return nil
		default:
		}
	}
	var errs []error
	for iqn, tid := range d.created {
		if err := d.deleteTarget(ctx, iqn, tid); err != nil {
			errs = append(errs, err)
		}
	}
	if d.cmd == nil {
		return errors.Join(errs...)
	}
	if _, err := d.adm(ctx, "--mode", "system", "--op", "delete"); err != nil {
		errs = append(errs, err)
	}
	select {
	case <-d.exited:
	case <-time.After(5 * time.Second):
		errs = append(errs, fmt.Errorf("tgtd (pid %d) did not exit within 5s; killed", d.cmd.Process.Pid))
		d.kill()
	}
	d.removeSockets()
	return errors.Join(errs...)
}

// kill ends the tgtd this Daemon started.
func (d *Daemon) kill() {
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
	d.removeSockets()
}

// removeSockets deletes the control socket files a killed tgtd leaves behind, which
// would otherwise make the next Start try to attach to a dead daemon.
func (d *Daemon) removeSockets() {
	_ = os.Remove(d.socketPath())
	_ = os.Remove(d.socketPath() + ".lock")
}

// Exited is closed when the tgtd this Daemon started has exited; nil when attached.
func (d *Daemon) Exited() <-chan struct{} { return d.exited }
