// Package bmc runs simulated IPMI BMCs for the virtual lab: one ipmi_sim
// process per machine on 127.0.0.1, each with its own port, state
// directory and credentials, and a chassis_control hook (cmd/bmc-hook)
// that keeps the simulated machine's power and boot device in a state file
// and records every change as an Event. The lab follows the events to
// boot a node's ramdisk when it is powered on with boot device pxe.
//
// ipmi_sim keeps only the boot device: the persistent and EFI flags a
// client sets are dropped, and "chassis bootdev safe" is refused. "power
// cycle" powers off at once and on again by itself about a second later;
// "power soft" reaches the hook as a shutdown request, which the simulated
// OS obeys unless told to ignore it (IgnoreShutdown).
package bmc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ferricbm/ferric/deploy/tooltest"
	"github.com/ferricbm/ferric/tests/lab/bmc/internal/state"
)

// Event is one change a BMC command made to its machine: Kind is "power"
// (Value "on"/"off"), "reset", "boot" (Value = the device as ipmi_sim
// names it: pxe, default, cdrom, bios, none) or "shutdown" (ACPI soft
// off); Power and Boot are the machine's state right after it.
type Event = state.Event

// Event kinds.
const (
	KindPower    = state.KindPower
	KindReset    = state.KindReset
	KindBoot     = state.KindBoot
	KindShutdown = state.KindShutdown
)

// Power states as PowerState reports them, worded as ipmitool prints them.
const (
	PowerOn  = "on"
	PowerOff = "off"
)

// LateAnswer is what ipmitool says when an answer arrives after it
// retransmitted its request: ipmi_sim answers a power or boot device
// command only once its chassis hook ran, which on a loaded machine can
// take longer than ipmitool waits. The command did run; the power and boot
// device commands are idempotent, so a driver may retry on it (the ipmi
// driver's [ipmi] additional_retryable_ipmi_errors).
const LateAnswer = "IPMI Request Match NOT FOUND"

// Options configures a fleet. Zero values are fine.
type Options struct {
	// Username is every BMC's administrator; default "admin".
	Username string
	// Password is every BMC's password; default a random one per BMC. At
	// most 16 characters, no whitespace or quotes.
	Password string
	// HookBinary is a prebuilt cmd/bmc-hook; empty builds it from this
	// package's source with the go tool (so not in -trimpath builds).
	HookBinary string
	// TempDir is where the fleet's directory is made; default os.TempDir.
	// Its path must not contain whitespace (ipmi_sim splits the hook
	// command line on it).
	TempDir string
	// EventBuffer is the capacity of each BMC's event channel; default
	// 1024. A full channel holds the events back, it never drops them.
	EventBuffer int
}

// Fleet is a set of running BMCs.
type Fleet struct {
	BMCs []*BMC

	dir    string
	cancel context.CancelFunc
	tails  sync.WaitGroup
}

// BMC is one simulated BMC and the machine behind it.
type BMC struct {
	Address  string
	Port     int
	Username string
	Password string
	// Dir holds the conf, emu, state and ipmi_sim.log files.
	Dir string

	hook   string
	events chan Event

	mu   sync.Mutex
	proc *process
}

type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start runs n BMCs, installing openipmi and ipmitool first when they are
// missing (as root, with apt-get). ctx bounds the start-up only; the
// fleet runs until Stop.
func Start(ctx context.Context, n int, opts Options) (*Fleet, error) {
	if n < 1 {
		return nil, fmt.Errorf("bmc: want at least one BMC, got %d", n)
	}
	if opts.Username == "" {
		opts.Username = "admin"
	}
	if opts.EventBuffer <= 0 {
		opts.EventBuffer = 1024
	}
	for _, v := range []string{opts.Username, opts.Password} {
		if strings.ContainsAny(v, " \t\n\"'\\") || len(v) > 16 {
			return nil, fmt.Errorf("bmc: username and password must be at most 16 characters without whitespace or quotes")
		}
	}
	if err := ensureTools(ctx); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(opts.TempDir, "ferric-bmc-")
	if err != nil {
		return nil, fmt.Errorf("bmc: %w", err)
	}
	if strings.ContainsAny(dir, " \t\n\"") {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bmc: fleet directory %q contains whitespace or quotes", dir)
	}
	tailCtx, cancel := context.WithCancel(context.Background())
	f := &Fleet{dir: dir, cancel: cancel}
	fail := func(err error) (*Fleet, error) {
		_ = f.Stop()
		return nil, err
	}
	hook := opts.HookBinary
	if hook == "" {
		if hook, err = buildHook(ctx, dir); err != nil {
			return fail(err)
		}
	}
	for i := range n {
		password := opts.Password
		if password == "" {
			password = randomHex(6)
		}
		b := &BMC{
			Address:  "127.0.0.1",
			Username: opts.Username,
			Password: password,
			Dir:      filepath.Join(dir, fmt.Sprintf("bmc%d", i)),
			hook:     hook,
			events:   make(chan Event, opts.EventBuffer),
		}
		if err := os.MkdirAll(filepath.Join(b.Dir, "sim"), 0o700); err != nil {
			return fail(fmt.Errorf("bmc: %w", err))
		}
		f.BMCs = append(f.BMCs, b)
		if err := b.startFresh(ctx); err != nil {
			return fail(fmt.Errorf("bmc %d: %w", i, err))
		}
		f.tails.Add(1)
		go func() {
			defer f.tails.Done()
			b.follow(tailCtx)
		}()
	}
	return f, nil
}

// Stop kills the BMC processes this fleet started, waits until their ports
// are free, closes the event channels and removes the fleet's directory.
func (f *Fleet) Stop() error {
	var problems []error
	for _, b := range f.BMCs {
		if err := b.Stop(); err != nil {
			problems = append(problems, err)
		}
	}
	f.cancel()
	f.tails.Wait()
	for _, b := range f.BMCs {
		close(b.events)
	}
	f.BMCs = nil
	if err := os.RemoveAll(f.dir); err != nil {
		problems = append(problems, err)
	}
	return errors.Join(problems...)
}

// startFresh picks a free port and starts the BMC on it, retrying with
// another port when someone else took it between the probe and the bind.
func (b *BMC) startFresh(ctx context.Context) error {
	var err error
	for range 5 {
		if b.Port, err = freeUDPPort(); err != nil {
			return err
		}
		if err = b.Start(ctx); err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// Start runs the BMC's ipmi_sim (again, after Stop) on its port and waits
// until it answers an IPMI session with its credentials.
func (b *BMC) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc != nil {
		return fmt.Errorf("bmc %s:%d is already running", b.Address, b.Port)
	}
	if err := b.writeConfig(); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(b.Dir, "ipmi_sim.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command("ipmi_sim", "-c", filepath.Join(b.Dir, "bmc.conf"), "-f", filepath.Join(b.Dir, "bmc.emu"),
		"-s", filepath.Join(b.Dir, "sim"), "-n")
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so Stop also ends a hook it is running; and
	// killed with the test process should that die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start ipmi_sim: %w", err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	b.proc = p
	if err := b.waitReady(ctx, p); err != nil {
		_ = b.stopLocked()
		return err
	}
	return nil
}

func (b *BMC) waitReady(ctx context.Context, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("ipmi_sim exited during start-up (%s): %s", p.cmd.ProcessState, b.logTail())
		default:
		}
		if last = b.probe(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ipmi_sim on port %d not answering: %w (last: %w)", b.Port, ctx.Err(), last)
		case <-p.exited:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// probe opens one IPMI session with the BMC's credentials.
func (b *BMC) probe(ctx context.Context) error {
	if !portBound(b.Port) {
		return errors.New("port not bound yet")
	}
	pw := filepath.Join(b.Dir, "probe.pw")
	if err := os.WriteFile(pw, []byte(b.Password), 0o600); err != nil {
		return err
	}
	defer os.Remove(pw)
	out, err := exec.CommandContext(ctx, "ipmitool", "-I", "lanplus", "-C", "3", "-N", "1", "-R", "1",
		"-H", b.Address, "-p", strconv.Itoa(b.Port), "-U", b.Username, "-f", pw, "mc", "guid").CombinedOutput()
	if err != nil {
		return fmt.Errorf("ipmitool mc guid: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

func (b *BMC) logTail() string {
	data, _ := os.ReadFile(filepath.Join(b.Dir, "ipmi_sim.log"))
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return strings.TrimSpace(string(data))
}

// Stop kills this BMC's ipmi_sim (by the process group it started) and
// waits until the port is free. The machine's state is kept for Start.
func (b *BMC) Stop() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopLocked()
}

func (b *BMC) stopLocked() error {
	p := b.proc
	if p == nil {
		return nil
	}
	b.proc = nil
	select {
	case <-p.exited:
	default:
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT)
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
	// An exited process can linger as a zombie of someone else here;
	// the port is what tells whether the BMC is gone.
	deadline := time.Now().Add(5 * time.Second)
	for portBound(b.Port) {
		if time.Now().After(deadline) {
			return fmt.Errorf("bmc port %d still bound after ipmi_sim was killed", b.Port)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Freeze stops the running ipmi_sim with SIGSTOP: the port stays bound
// but nothing answers, like a hung BMC. Thaw resumes it.
func (b *BMC) Freeze() error { return b.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen BMC.
func (b *BMC) Thaw() error { return b.signal(syscall.SIGCONT) }

func (b *BMC) signal(sig syscall.Signal) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc == nil {
		return fmt.Errorf("bmc %s:%d is not running", b.Address, b.Port)
	}
	return syscall.Kill(-b.proc.cmd.Process.Pid, sig)
}

// PID is the running ipmi_sim's process id, 0 when stopped.
func (b *BMC) PID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc == nil {
		return 0
	}
	return b.proc.cmd.Process.Pid
}

// PowerState is the machine's power, PowerOn or PowerOff.
func (b *BMC) PowerState() (string, error) {
	s, err := state.Read(b.Dir)
	if err != nil {
		return "", err
	}
	if s.Power {
		return PowerOn, nil
	}
	return PowerOff, nil
}

// BootDevice is the device the machine boots from next, as ipmi_sim
// names it (pxe, default, cdrom, bios, none).
func (b *BMC) BootDevice() (string, error) {
	s, err := state.Read(b.Dir)
	if err != nil {
		return "", err
	}
	return s.Boot, nil
}

// SetPower changes the machine's power from inside, as its OS shutting
// down or a person at the machine would. No event is recorded: the lab
// made the change itself.
func (b *BMC) SetPower(on bool) error {
	return state.Update(b.Dir, func(s *state.State) (*state.Event, error) {
		s.Power = on
		return nil, nil
	})
}

// IgnoreShutdown makes the machine's OS ignore (true) or obey soft power
// off requests.
func (b *BMC) IgnoreShutdown(ignore bool) error {
	return state.Update(b.Dir, func(s *state.State) (*state.Event, error) {
		s.IgnoreShutdown = ignore
		return nil, nil
	})
}

// Events delivers the BMC's changes in order. The channel is closed by
// Fleet.Stop.
func (b *BMC) Events() <-chan Event { return b.events }

// follow tails the hook's events file into the channel.
func (b *BMC) follow(ctx context.Context) {
	path := filepath.Join(b.Dir, state.EventsFile)
	var offset int64
	var partial []byte
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if _, err := f.Seek(offset, 0); err != nil {
			f.Close()
			continue
		}
		r := bufio.NewReader(f)
		for {
			line, err := r.ReadBytes('\n')
			offset += int64(len(line))
			if err != nil {
				partial = append(partial, line...)
				break
			}
			line = append(partial, line...)
			partial = nil
			var ev Event
			if json.Unmarshal(line, &ev) != nil {
				continue
			}
			select {
			case b.events <- ev:
			case <-ctx.Done():
				f.Close()
				return
			}
		}
		f.Close()
	}
}

func (b *BMC) writeConfig() error {
	conf := fmt.Sprintf(`name "ferric-lab"
set_working_mc 0x20
  startlan 1
    addr %s %d
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid %s
  endlan
  chassis_control "%s %s 0x20"
  user 2 true "%s" "%s" admin 10 none md2 md5 straight
`, b.Address, b.Port, randomHex(16), b.hook, b.Dir, b.Username, b.Password)
	const emu = "mc_setbmc 0x20\n" +
		"mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\n" +
		"mc_enable 0x20\n"
	if err := os.WriteFile(filepath.Join(b.Dir, "bmc.conf"), []byte(conf), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(b.Dir, "bmc.emu"), []byte(emu), 0o600)
}

// buildHook compiles cmd/bmc-hook into dir. It names the package by its
// import path, so the go command finds it from anywhere in the workspace
// (the suites and ferric-lab run there) whatever the build's -trimpath.
func buildHook(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "bmc-hook")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/ferricbm/ferric/tests/lab/bmc/cmd/bmc-hook")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("bmc: build bmc-hook: %w: %s", err, msg)
	}
	return out, nil
}

// ensureTools installs ipmi_sim (openipmi) and ipmitool when they are
// missing, as on a fresh machine; that needs root and apt-get.
func ensureTools(ctx context.Context) error {
	if err := tooltest.Install(ctx, map[string]string{"ipmi_sim": "openipmi", "ipmitool": "ipmitool"}); err != nil {
		return fmt.Errorf("bmc: %w", err)
	}
	return nil
}

func freeUDPPort() (int, error) {
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bmc: find a free port: %w", err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}

// portBound reports whether something holds the UDP port.
func portBound(port int) bool {
	c, err := net.ListenPacket("udp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return true
	}
	c.Close()
	return false
}

func randomHex(n int) string {
	buf := make([]byte, n)
	_, _ = rand.Read(buf)
	return hex.EncodeToString(buf)
}
