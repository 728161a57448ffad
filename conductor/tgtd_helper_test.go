package conductor_test

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

// tgtdTarget is a tgtd started by a test, standing in for the deploy
// ramdisk exporting a node's disk: a file plays the disk.
type tgtdTarget struct {
	ctl     int
	portal  string
	port    int
	cmd     *exec.Cmd
	exited  chan struct{}
	nextTID int
	tids    []int
}

func freeTCPPort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startTargetDaemon runs tgtd on its own control port and a free portal.
func startTargetDaemon(dir string) (*tgtdTarget, error) {
	port := freeTCPPort()
	ctl := 0
	for range 100 {
		// tgtd takes control ports up to 32767; its lock file tells which
		// are in use.
		n := 10001 + rand.IntN(22000)
		if _, err := os.Stat(fmt.Sprintf("/var/run/tgtd/socket.%d.lock", n)); errors.Is(err, os.ErrNotExist) {
			ctl = n
			break
		}
	}
	if ctl == 0 {
		return nil, errors.New("no free tgtd control port")
	}
	logFile, err := os.Create(filepath.Join(dir, fmt.Sprintf("tgtd-%d.log", ctl)))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	t := &tgtdTarget{ctl: ctl, port: port, portal: fmt.Sprintf("127.0.0.1:%d", port), exited: make(chan struct{}), nextTID: 1}
	t.cmd = exec.Command("tgtd", "-f", "-C", strconv.Itoa(ctl), "--iscsi", "portal="+t.portal)
	t.cmd.Stdout, t.cmd.Stderr = logFile, logFile
	if err := t.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start tgtd: %w", err)
	}
	go func() {
		_ = t.cmd.Wait()
		close(t.exited)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if t.adm("--mode", "system", "--op", "show") == nil {
			if c, err := net.DialTimeout("tcp", t.portal, time.Second); err == nil {
				c.Close()
				return t, nil
			}
		}
		select {
		case <-t.exited:
			return nil, errors.New("tgtd exited during start-up")
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.kill()
	return nil, errors.New("tgtd did not become ready within 10s")
}

func (t *tgtdTarget) adm(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	full := append([]string{"-C", strconv.Itoa(t.ctl), "--lld", "iscsi"}, args...)
	out, err := exec.CommandContext(ctx, "tgtadm", full...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("tgtadm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// export makes backing LUN 1 of a new target named iqn, open to all.
func (t *tgtdTarget) export(iqn, backing string) error {
	tid := strconv.Itoa(t.nextTID)
	t.nextTID++
	if err := t.adm("--mode", "target", "--op", "new", "--tid", tid, "--targetname", iqn); err != nil {
		return err
	}
	t.tids = append(t.tids, t.nextTID-1)
	if err := t.adm("--mode", "logicalunit", "--op", "new", "--tid", tid, "--lun", "1", "--backing-store", backing); err != nil {
		return err
	}
	return t.adm("--mode", "target", "--op", "bind", "--tid", tid, "--initiator-address", "ALL")
}

// exportCHAP is export admitting only the initiator logging in as user
// with secret, as the ramdisks export.
func (t *tgtdTarget) exportCHAP(iqn, backing, user, secret string) error {
	if err := t.export(iqn, backing); err != nil {
		return err
	}
	if err := t.adm("--mode", "account", "--op", "new", "--user", user, "--password", secret); err != nil {
		return err
	}
	return t.adm("--mode", "account", "--op", "bind", "--tid", strconv.Itoa(t.tids[len(t.tids)-1]), "--user", user)
}

// setSerial makes the last exported LUN report serial as its unit serial
// number, as the node's disk would.
func (t *tgtdTarget) setSerial(serial string) error {
	return t.adm("--mode", "logicalunit", "--op", "update", "--tid", strconv.Itoa(t.tids[len(t.tids)-1]), "--lun", "1",
		"--params", "scsi_sn="+serial)
}

// stop removes the targets (tgtd ignores a stop request while any exists)
// and ends tgtd, killing it if it lingers.
func (t *tgtdTarget) stop() {
	select {
	case <-t.exited:
		return
	default:
	}
	t.removeTargets()
	_ = t.adm("--mode", "system", "--op", "delete")
	select {
	case <-t.exited:
	case <-time.After(5 * time.Second):
		t.kill()
	}
}

// removeTargets deletes every target, as a ramdisk going away does.
func (t *tgtdTarget) removeTargets() {
	for _, tid := range t.tids {
		_ = t.adm("--mode", "target", "--op", "delete", "--force", "--tid", strconv.Itoa(tid))
	}
	t.tids = nil
}

// kill ends tgtd at once, as a node losing power would.
func (t *tgtdTarget) kill() {
	_ = t.cmd.Process.Signal(syscall.SIGKILL)
	<-t.exited
	_ = os.Remove(fmt.Sprintf("/var/run/tgtd/socket.%d", t.ctl))
	_ = os.Remove(fmt.Sprintf("/var/run/tgtd/socket.%d.lock", t.ctl))
}
