// Package tgttest runs tgtd for test suites: each Target is a tgtd of its
// own, on a control port no other tgtd on the machine uses and an iSCSI
// portal port the OS hands out, started and stopped through package tgt
// and ended by its PID when it does not exit. Besides what the ramdisk
// does (tgt.Daemon), it offers what tests play with: raw targets with
// several LUNs, CHAP bound after the fact, serial numbers, and a daemon that
// dies or freezes as a powered-off node would.
//
// It reports plain errors, not gomega failures, so benchmarks can use it.
package tgttest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ferricbm/ferric/deploy/agent/tgt"
)

// socketDir is where tgtd keeps its control sockets (socket.N.lock marks N taken).
const socketDir = "/var/run/tgtd"

// ControlPort picks a tgtd control port (-C) that no tgtd on this machine
// holds. tgtd accepts up to 32767.
func ControlPort() (int, error) {
	for range 100 {
		n := 10000 + rand.IntN(22000)
		if _, err := os.Stat(filepath.Join(socketDir, "socket."+strconv.Itoa(n)+".lock")); errors.Is(err, os.ErrNotExist) {
			return n, nil
		}
	}
	return 0, errors.New("no free tgtd control port")
}

// freePort is a loopback TCP port nothing listens on at the moment.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Target is one tgtd a test started.
type Target struct {
	// Daemon drives the tgtd as the deploy ramdisk does (Export, ExportCHAP).
	Daemon *tgt.Daemon
	// Port is the iSCSI portal port on 127.0.0.1; Portal is "127.0.0.1:Port".
	Port   int
	Portal string

	mu      sync.Mutex
	nextTID int
	tids    []int // targets made by AddTarget, oldest first
}

// Start runs a tgtd logging to dir/tgtd-CTL.log. opts.ControlPort and
// opts.Portal are chosen here; Stock, timeouts and the like are the
// caller's. A control port taken by another process in the meantime is
// tried again with another.
func Start(ctx context.Context, dir string, opts tgt.Options) (*Target, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	opts.Portal = "127.0.0.1:" + strconv.Itoa(port)
	for range 5 {
		if opts.ControlPort, err = ControlPort(); err != nil {
			return nil, err
		}
		opts.LogPath = filepath.Join(dir, fmt.Sprintf("tgtd-%d.log", opts.ControlPort))
		d, err := tgt.Start(ctx, opts)
		if err != nil {
			out, _ := os.ReadFile(opts.LogPath)
			return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
		}
		if !d.Owned() {
			continue
		}
		return &Target{Daemon: d, Port: port, Portal: opts.Portal, nextTID: 1}, nil
	}
	return nil, errors.New("every tgtd control port tried was taken by another tgtd")
}

// Adm runs tgtadm against this tgtd, for settings a test changes itself.
func (t *Target) Adm(args ...string) error {
	_, err := t.adm(args...)
	return err
}

func (t *Target) adm(args ...string) (string, error) {
	return t.Daemon.Adm(context.Background(), args...)
}

// AddTarget creates a target with one LUN per backing file (LUN 1, 2, ...),
// open to every initiator address, with tgtd's parameters as they are, and
// returns its tid.
func (t *Target) AddTarget(iqn string, backing ...string) (int, error) {
	t.mu.Lock()
	tid := t.nextTID
	t.nextTID++
	t.mu.Unlock()
	id := strconv.Itoa(tid)
	if _, err := t.adm("--mode", "target", "--op", "new", "--tid", id, "--targetname", iqn); err != nil {
		return 0, err
	}
	t.mu.Lock()
	t.tids = append(t.tids, tid)
	t.mu.Unlock()
	for i, file := range backing {
		if _, err := t.adm("--mode", "logicalunit", "--op", "new", "--tid", id, "--lun", strconv.Itoa(i+1), "--backing-store", file); err != nil {
			return 0, err
		}
	}
	_, err := t.adm("--mode", "target", "--op", "bind", "--tid", id, "--initiator-address", "ALL")
	return tid, err
}

// Export is AddTarget of one LUN, for callers that do not need the tid.
func (t *Target) Export(iqn, backing string) error {
	_, err := t.AddTarget(iqn, backing)
	return err
}

// ExportCHAP is Export admitting only the initiator logging in as user
// with secret, as the ramdisks export.
func (t *Target) ExportCHAP(iqn, backing, user, secret string) error {
	tid, err := t.AddTarget(iqn, backing)
	if err != nil {
		return err
	}
	return t.RequireCHAP(tid, user, secret)
}

// RequireCHAP creates an incoming account and binds it to the target, which
// then refuses logins without it.
func (t *Target) RequireCHAP(tid int, user, secret string) error {
	if _, err := t.adm("--mode", "account", "--op", "new", "--user", user, "--password", secret); err != nil {
		return err
	}
	_, err := t.adm("--mode", "account", "--op", "bind", "--tid", strconv.Itoa(tid), "--user", user)
	return err
}

// SetSerial makes LUN 1 of the last target AddTarget made report serial as
// its unit serial number, as the node's disk would.
func (t *Target) SetSerial(serial string) error {
	t.mu.Lock()
	if len(t.tids) == 0 {
		t.mu.Unlock()
		return errors.New("tgttest: no target to set a serial on")
	}
	tid := t.tids[len(t.tids)-1]
	t.mu.Unlock()
	_, err := t.adm("--mode", "logicalunit", "--op", "update", "--tid", strconv.Itoa(tid), "--lun", "1",
		"--params", "scsi_sn="+serial)
	return err
}

// Connections lists the target's connections, with the initiator names.
func (t *Target) Connections(tid int) (string, error) {
	return t.adm("--mode", "conn", "--op", "show", "--tid", strconv.Itoa(tid))
}

// DeleteTarget removes a target even with sessions logged in. With commands
// in flight tgtd first drops the connections and answers "logical unit is
// still active" until they have drained, so that answer is retried a while.
func (t *Target) DeleteTarget(tid int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := t.adm("--mode", "target", "--op", "delete", "--force", "--tid", strconv.Itoa(tid))
		if err == nil {
			t.mu.Lock()
			for i, x := range t.tids {
				if x == tid {
					t.tids = append(t.tids[:i], t.tids[i+1:]...)
					break
				}
			}
			t.mu.Unlock()
			return nil
		}
		if !strings.Contains(err.Error(), "still active") || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// RemoveTargets deletes every target AddTarget made, as a ramdisk going
// away does.
func (t *Target) RemoveTargets() error {
	t.mu.Lock()
	tids := append([]int(nil), t.tids...)
	t.mu.Unlock()
	var errs []error
	for _, tid := range tids {
		errs = append(errs, t.DeleteTarget(tid))
	}
	return errors.Join(errs...)
}

// Stop deletes the targets (tgtd ignores a stop request while any exists)
// and ends tgtd, killing it by PID if it lingers. Stopping a tgtd that has
// died only removes its sockets.
func (t *Target) Stop() error {
	var errs []error
	select {
	case <-t.Daemon.Exited():
	default:
		errs = append(errs, t.RemoveTargets())
	}
	errs = append(errs, t.Daemon.Stop(context.Background()))
	return errors.Join(errs...)
}

// Kill ends tgtd at once, as a node losing power would.
func (t *Target) Kill() {
	_ = syscall.Kill(t.Daemon.PID(), syscall.SIGKILL)
	<-t.Daemon.Exited()
	_ = t.Daemon.Stop(context.Background())
}

// Freeze stops tgtd without closing its sockets, like a node that lost
// power or network: the initiator sees no reset, only silence. The
// returned function resumes it.
func (t *Target) Freeze() (resume func()) {
	pid := t.Daemon.PID()
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	return func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
}
