package iscsi_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// tgtd is one tgtd process started by a test, with its own control port and iSCSI portal.
// Plain errors (no gomega) so benchmarks can use it too.
type tgtd struct {
	ctl     int
	portal  string
	dir     string
	cmd     *exec.Cmd
	exited  chan struct{}
	targets map[int]bool
	nextTID int
}

const tgtdSocketDir = "/var/run/tgtd"

// ensureTools installs the Debian packages holding tgtd and the reference initiators
// when one of them is missing (a fresh machine).
func ensureTools() error {
	missing := false
	for _, bin := range []string{"tgtd", "tgtadm", "iscsi-inq", "iscsi-readcapacity16", "qemu-img"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	for _, args := range [][]string{
		{"-o", "DPkg::Lock::Timeout=600", "update"},
		{"-o", "DPkg::Lock::Timeout=600", "install", "-y", "tgt", "libiscsi-bin", "qemu-utils", "qemu-block-extra"},
	} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %v: %w\n%s", args, err, out)
		}
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startTgtd runs `tgtd -f -C N --iscsi portal=127.0.0.1:PORT` with a control port N that
// no other tgtd on this machine uses, and waits until both ports answer.
func startTgtd(dir string) (*tgtd, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	ctl := 0
	for range 100 {
		n := 10000 + rand.IntN(22000) // tgtd accepts control ports up to 32767
		if _, err := os.Stat(filepath.Join(tgtdSocketDir, "socket."+strconv.Itoa(n)+".lock")); errors.Is(err, os.ErrNotExist) {
			ctl = n
			break
		}
	}
	if ctl == 0 {
		return nil, errors.New("no free tgtd control port")
	}
	log, err := os.Create(filepath.Join(dir, fmt.Sprintf("tgtd-%d.log", ctl)))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	t := &tgtd{ctl: ctl, portal: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, exited: make(chan struct{}),
		targets: map[int]bool{}, nextTID: 1}
	t.cmd = exec.Command("tgtd", "-f", "-C", strconv.Itoa(ctl), "--iscsi", "portal="+t.portal)
	t.cmd.Stdout, t.cmd.Stderr = log, log
	if err := t.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start tgtd: %w", err)
	}
	go func() {
		_ = t.cmd.Wait()
		close(t.exited)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := t.adm("--mode", "system", "--op", "show"); err == nil {
			if c, err := net.DialTimeout("tcp", t.portal, time.Second); err == nil {
				c.Close()
				return t, nil
			}
		}
		select {
		case <-t.exited:
			out, _ := os.ReadFile(log.Name())
			return nil, fmt.Errorf("tgtd exited during start-up: %s", out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.kill()
			return nil, errors.New("tgtd did not become ready within 10s")
		}
	}
}

func (t *tgtd) adm(args ...string) error {
	full := append([]string{"-C", strconv.Itoa(t.ctl), "--lld", "iscsi"}, args...)
	out, err := tgtadm(full...)
	if err != nil {
		return fmt.Errorf("tgtadm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// connections lists the target's connections, with the initiator names.
func (t *tgtd) connections(tid int) (string, error) {
	out, err := tgtadm("-C", strconv.Itoa(t.ctl), "--lld", "iscsi",
		"--mode", "conn", "--op", "show", "--tid", strconv.Itoa(tid))
	return string(out), err
}

// tgtadm runs the tool with a time limit: it can block forever on the socket of a
// tgtd that is gone.
func tgtadm(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "tgtadm", args...).CombinedOutput()
}

// addTarget creates a target with one LUN per backing file (LUN 1, 2, ...), open to
// every initiator address, and returns its tid.
func (t *tgtd) addTarget(iqn string, backing ...string) (int, error) {
	tid := t.nextTID
	t.nextTID++
	if err := t.adm("--mode", "target", "--op", "new", "--tid", strconv.Itoa(tid), "--targetname", iqn); err != nil {
		return 0, err
	}
	t.targets[tid] = true
	for i, file := range backing {
		if err := t.adm("--mode", "logicalunit", "--op", "new", "--tid", strconv.Itoa(tid),
			"--lun", strconv.Itoa(i+1), "--backing-store", file); err != nil {
			return 0, err
		}
	}
	return tid, t.adm("--mode", "target", "--op", "bind", "--tid", strconv.Itoa(tid), "--initiator-address", "ALL")
}

// deleteTarget removes a target even with sessions logged in. With commands in flight
// tgtd first drops the connections and answers "logical unit is still active" until the
// commands have drained, so that answer is retried for a while.
func (t *tgtd) deleteTarget(tid int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := t.adm("--mode", "target", "--op", "delete", "--force", "--tid", strconv.Itoa(tid))
		if err == nil {
			delete(t.targets, tid)
			return nil
		}
		if !strings.Contains(err.Error(), "still active") || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// requireCHAP creates an incoming account and binds it to the target, which then
// refuses logins without it.
func (t *tgtd) requireCHAP(tid int, user, secret string) error {
	if err := t.adm("--mode", "account", "--op", "new", "--user", user, "--password", secret); err != nil {
		return err
	}
	return t.adm("--mode", "account", "--op", "bind", "--tid", strconv.Itoa(tid), "--user", user)
}

// stop deletes the targets (tgtd ignores SIGTERM while any exists), then asks tgtd to
// exit, and kills this tgtd by PID if it does not.
func (t *tgtd) stop() error {
	var errs []error
	select {
	case <-t.exited:
	default:
		for tid := range t.targets {
			if err := t.deleteTarget(tid); err != nil {
				errs = append(errs, err)
			}
		}
		if err := t.adm("--mode", "system", "--op", "delete"); err != nil {
			errs = append(errs, err)
		}
		select {
		case <-t.exited:
		case <-time.After(5 * time.Second):
			errs = append(errs, errors.New("tgtd did not exit within 5s; killed"))
			t.kill()
		}
	}
	t.removeSockets()
	return errors.Join(errs...)
}

// kill ends tgtd abruptly, as a crashed or powered-off node would.
func (t *tgtd) kill() {
	_ = t.cmd.Process.Signal(syscall.SIGKILL)
	<-t.exited
	t.removeSockets()
}

// freeze stops tgtd without closing its sockets, like a node that lost power or network:
// the initiator sees no reset, only silence. The returned function resumes it.
func (t *tgtd) freeze() (resume func()) {
	_ = t.cmd.Process.Signal(syscall.SIGSTOP)
	return func() { _ = t.cmd.Process.Signal(syscall.SIGCONT) }
}

func (t *tgtd) removeSockets() {
	base := filepath.Join(tgtdSocketDir, "socket."+strconv.Itoa(t.ctl))
	_ = os.Remove(base)
	_ = os.Remove(base + ".lock")
}
