// Package lab is the virtual lab: simulated bare-metal nodes on loopback
// that a conductor can deploy with the ipmi hardware type, or by virtual
// media with the ilo and redfish types (Options.BMCKind, vmedia.go). A
// node is a BMC (package bmc's ipmi_sim, or a simulated iLO), a sparse
// disk file, a MAC address and an IP address of its own. The lab plays
// the node's firmware: when the BMC powers the node on with boot device
// pxe it reads the PXELINUX configuration the
// conductor wrote for the node's MAC and, for a deploy label, runs
// ferric-agent with that kernel command line and the node's disk and
// address; powering off stops the agent and its tgtd. Any other boot is
// only recorded (Boots), so a test can check what the node would have
// started.
//
// Each node has its own address in 127.77.0.0/16 (Node.Address, reserved
// across processes, see address.go), as real machines have their own IP:
// its agent API (port 9999, the agent's advertised callback URL), its
// tgtd portal (Options.PortalPort, the conductor's [iscsi] portal_port)
// and the callback-only ramdisk's "done" listener (port 10000) bind
// there. The conductor learns the address from the agent's callback URL
// or from pass_deploy_info, so any number of nodes deploy at once with
// one conductor configuration.
//
// API changes (2026-12): Node.Address, AgentPort, DonePort, ModeSilent
// and Node.TargetPID are new; AgentListen, Portal and DoneListen keep
// their meaning but hold Address instead of 127.0.0.1, and AgentListen's
// port is AgentPort on every node. Later: Options.BMCKind, Node.ILO (nil
// BMC on iLO nodes), Boot.ISO, Floppy, Root and RootFound, BuildDeployISO,
// Node.VMediaDriverInfo and Node.Driver; then DeployISO replaced
// BuildDeployISO (it copies the ISO package deployiso caches).
//
// A node with an iLO (vmedia.go) follows the simulated iLO's power
// changes: a start from the virtual CD fetches the ISO, reads its kernel
// command line, and for a deploy ISO fetches the floppy, reads its
// parameters.txt and runs ferric-agent with both; an instance's boot ISO
// is only recorded, with whether its root= names a partition of the disk.
package lab

import (
	"bufio"
	"context"
	"crypto/rand"
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

	"github.com/ferricbm/ferric/deploy/agent/tgt"
	"github.com/ferricbm/ferric/deploy/agent/tgt/tgttest"
	"github.com/ferricbm/ferric/tests/lab/bmc"
)

// Boot devices as a Boot records them.
const (
	BootPXE  = "pxe"
	BootDisk = "disk"
)

// Ports every node's ramdisk uses on its own address: the agent API
// (ironic-python-agent's default) and the callback-only ramdisk's "done"
// listener (the conductor's notify port).
const (
	AgentPort = 9999
	DonePort  = 10000
)

// Modes a node's ramdisk runs in (ferric-agent -mode).
const (
	// ModeAuto lets ferric-agent pick: agent when the command line has
	// ipa-api-url, which the conductor always writes.
	ModeAuto = "auto"
	// ModeCallback emulates the bash deploy ramdisk: one pass_deploy_info
	// call, then "done" on port 10000.
	ModeCallback = "callback"
	// ModeSilent boots a ramdisk that never calls back (hung, or cut off
	// from the API): the lab records the boot and starts nothing.
	ModeSilent = "silent"
)

// Options configure a lab.
type Options struct {
	// Nodes is how many nodes to run (at least one).
	Nodes int
	// AgentBinary is ferric-agent (see BuildAgent).
	AgentBinary string
	// TFTPRoot is the conductor's [pxe] tftp_root.
	TFTPRoot string
	// DiskSize is each node's disk in bytes (a sparse file); default 64 MiB.
	DiskSize int64
	// PortalPort is the conductor's [iscsi] portal_port, the port the
	// agent's tgtd listens on.
	PortalPort int
	// TempDir is where the lab's directory is made; default os.TempDir.
	TempDir string
	// AgentGrace is how long a stopped agent may take to release its disk
	// before it is killed; default 10 s.
	AgentGrace time.Duration
	// BMC configures the BMC fleet (BMCKind ipmi).
	BMC bmc.Options
	// BMCKind is the nodes' BMC: BMCIPMI (the default), BMCILO or
	// BMCRedfish.
	BMCKind string
}

// Lab is a running set of nodes.
type Lab struct {
	Nodes []*Node

	opts  Options
	dir   string
	fleet *bmc.Fleet
	wg    sync.WaitGroup
}

// Boot is one start of a node: the device it booted from and, for PXE, the
// label and kernel command line it found (empty when there was no
// configuration for its MAC).
type Boot struct {
	Time    time.Time
	Device  string
	Label   string
	Cmdline string
	// Agent tells whether the boot started the deploy ramdisk.
	Agent bool
	// ISO is the URL of the virtual CD a BootCD started from, Floppy the
	// virtual floppy's then. Cmdline is the ISO's kernel command line,
	// with the floppy's parameters for a deploy ISO.
	ISO, Floppy string
	// Root is the root= of a boot ISO's command line; RootFound tells
	// whether it names a partition of the node's disk.
	Root      string
	RootFound bool
}

// Node is one simulated machine.
type Node struct {
	Name string
	// BMC is the node's ipmi_sim (BMCKind ipmi); ILO its simulated iLO
	// (BMCKind ilo or redfish). The other is nil.
	BMC *bmc.BMC
	ILO *ILO
	MAC string
	// Address is the node's IP address, which its ramdisk binds to.
	Address string
	// Disk is the node's disk file.
	Disk string
	// AgentListen is the agent API address; Portal the iSCSI portal the
	// agent's tgtd uses; TgtdControlPort its control port; DoneListen
	// where a callback-only ramdisk waits for "done".
	AgentListen     string
	Portal          string
	TgtdControlPort int
	DoneListen      string
	// Dir holds the node's disk, agent log and power-off helper.
	Dir string

	lab    *Lab
	addr   *address
	events *powerEvents

	mu    sync.Mutex
	mode  string
	boots []Boot
	agent *agentProc
}

type agentProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Start makes the nodes and their BMCs and starts following the BMCs'
// events. ctx bounds the start-up only.
func Start(ctx context.Context, opts Options) (*Lab, error) {
	if opts.Nodes < 1 {
		return nil, fmt.Errorf("lab: want at least one node, got %d", opts.Nodes)
	}
	if opts.AgentBinary == "" || opts.TFTPRoot == "" || opts.PortalPort == 0 {
		return nil, errors.New("lab: AgentBinary, TFTPRoot and PortalPort are required")
	}
	if opts.DiskSize <= 0 {
		opts.DiskSize = 64 << 20
	}
	if opts.AgentGrace <= 0 {
		opts.AgentGrace = 10 * time.Second
	}
	if opts.BMC.TempDir == "" {
		opts.BMC.TempDir = opts.TempDir
	}
	if opts.BMCKind == "" {
		opts.BMCKind = BMCIPMI
	}
	if opts.BMCKind != BMCIPMI && models[opts.BMCKind] == "" {
		return nil, fmt.Errorf("lab: BMC kind %q is not one of %s, %s, %s", opts.BMCKind, BMCIPMI, BMCILO, BMCRedfish)
	}
	dir, err := os.MkdirTemp(opts.TempDir, "ferric-lab-")
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	l := &Lab{opts: opts, dir: dir}
	bmcs := make([]*bmc.BMC, opts.Nodes)
	if opts.BMCKind == BMCIPMI {
		if l.fleet, err = bmc.Start(ctx, opts.Nodes, opts.BMC); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("lab: %w", err)
		}
		bmcs = l.fleet.BMCs
	}
	for i, b := range bmcs {
		n, err := l.newNode(i, b)
		if err != nil {
			_ = l.Stop()
			return nil, err
		}
		l.Nodes = append(l.Nodes, n)
	}
	for _, n := range l.Nodes {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			if n.ILO != nil {
				n.vmediaFirmware()
			} else {
				n.firmware()
			}
		}()
	}
	return l, nil
}

// newNode makes node i; b is its ipmi_sim, nil for a node with an iLO.
func (l *Lab) newNode(i int, b *bmc.BMC) (*Node, error) {
	n := &Node{Name: fmt.Sprintf("lab-node-%d", i), BMC: b, MAC: randomMAC(), lab: l, mode: ModeAuto,
		Dir: filepath.Join(l.dir, fmt.Sprintf("node%d", i))}
	if err := os.MkdirAll(n.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	n.Disk = filepath.Join(n.Dir, "disk.img")
	f, err := os.Create(n.Disk)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	err = f.Truncate(l.opts.DiskSize)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("lab: disk of %s: %w", n.Name, err)
	}
	if n.TgtdControlPort, err = l.freeControlPort(); err != nil {
		return nil, err
	}
	if n.addr, err = reserveAddress(); err != nil {
		return nil, err
	}
	n.Address = n.addr.ip
	n.AgentListen = net.JoinHostPort(n.Address, strconv.Itoa(AgentPort))
	n.Portal = net.JoinHostPort(n.Address, strconv.Itoa(l.opts.PortalPort))
	n.DoneListen = net.JoinHostPort(n.Address, strconv.Itoa(DonePort))
	if b == nil {
		if err := n.startILO(l.opts.BMCKind); err != nil {
			_ = n.addr.release()
			return nil, err
		}
	}
	return n, nil
}

// Stop stops every agent, the BMCs, and removes the lab's directory.
func (l *Lab) Stop() error {
	var problems []error
	for _, n := range l.Nodes {
		if err := n.stopAgent(); err != nil {
			problems = append(problems, err)
		}
	}
	// Closing the BMCs' event channels ends the firmware goroutines.
	if l.fleet != nil {
		if err := l.fleet.Stop(); err != nil {
			problems = append(problems, err)
		}
	}
	for _, n := range l.Nodes {
		if err := n.stopILO(); err != nil {
			problems = append(problems, err)
		}
	}
	l.wg.Wait()
	for _, n := range l.Nodes {
		if err := n.stopAgent(); err != nil {
			problems = append(problems, err)
		}
	}
	for _, n := range l.Nodes {
		if err := n.addr.release(); err != nil {
			problems = append(problems, err)
		}
	}
	if err := os.RemoveAll(l.dir); err != nil {
		problems = append(problems, err)
	}
	return errors.Join(problems...)
}

// Node returns the node with the MAC, nil if none.
func (l *Lab) Node(mac string) *Node {
	for _, n := range l.Nodes {
		if strings.EqualFold(n.MAC, mac) {
			return n
		}
	}
	return nil
}

// SetMode sets how the node's next deploy ramdisk runs: ModeAuto or
// ModeCallback.
func (n *Node) SetMode(mode string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mode = mode
}

// Boots lists the node's boots so far, oldest first.
func (n *Node) Boots() []Boot {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Boot(nil), n.boots...)
}

// LastBoot is the most recent boot; ok is false before the first.
func (n *Node) LastBoot() (b Boot, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.boots) == 0 {
		return Boot{}, false
	}
	return n.boots[len(n.boots)-1], true
}

func (n *Node) silent() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mode == ModeSilent
}

// TargetPID is the process id of the tgtd the node's ramdisk runs on its
// control port, 0 when none runs. Tests kill or freeze it to make the
// target vanish or hang.
func (n *Node) TargetPID() (int, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("lab: %w", err)
	}
	want := []string{"tgtd", "-f", "-C", strconv.Itoa(n.TgtdControlPort)}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if len(args) >= len(want) && filepath.Base(args[0]) == want[0] && slices.Equal(args[1:len(want)], want[1:]) && !zombie(pid) {
			return pid, nil
		}
	}
	return 0, nil
}

// ReadChars is rchar of /proc/PID/io: the bytes a process has read through
// read-like system calls, from sockets and files alike. Of a node's tgtd
// (TargetPID) it tells how far an initiator's write has got.
func ReadChars(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, fmt.Errorf("lab: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rchar: "); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("lab: no rchar in /proc/%d/io", pid)
}

// zombie tells whether pid has exited but was not reaped (here exited
// processes can linger as zombies of someone else).
func zombie(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return strings.HasPrefix(rest, "Z") || strings.HasPrefix(rest, "X")
}

// AgentRunning tells whether the node's deploy ramdisk runs.
func (n *Node) AgentRunning() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.agent == nil {
		return false
	}
	select {
	case <-n.agent.exited:
		return false
	default:
		return true
	}
}

// AgentLog is the path of the node's agent output (every boot appends).
func (n *Node) AgentLog() string { return filepath.Join(n.Dir, "agent.log") }

// PXEConfigPath is where the conductor writes the node's PXELINUX
// configuration.
func (n *Node) PXEConfigPath() string {
	return filepath.Join(n.lab.opts.TFTPRoot, "pxelinux.cfg", "01-"+strings.ReplaceAll(strings.ToLower(n.MAC), ":", "-"))
}

// firmware follows the BMC: power on boots, power off (or a soft power
// off the OS obeyed) stops what runs, reset does both.
func (n *Node) firmware() {
	for ev := range n.BMC.Events() {
		switch ev.Kind {
		case bmc.KindPower:
			if err := n.stopAgent(); err != nil {
				n.logf("stop agent: %v", err)
			}
			if ev.Power {
				n.boot(ev.Boot)
			}
		case bmc.KindReset:
			if err := n.stopAgent(); err != nil {
				n.logf("stop agent: %v", err)
			}
			if ev.Power {
				n.boot(ev.Boot)
			}
		case bmc.KindShutdown:
			if !ev.Power {
				if err := n.stopAgent(); err != nil {
					n.logf("stop agent: %v", err)
				}
			}
		}
	}
}

// boot starts the node from device (ipmi_sim's name).
func (n *Node) boot(device string) {
	b := Boot{Time: time.Now(), Device: BootDisk}
	if device == "pxe" {
		b.Device = BootPXE
		label, cmdline, err := ReadPXEConfig(n.PXEConfigPath())
		switch {
		case err != nil:
			n.logf("PXE boot without a configuration: %v", err)
		default:
			b.Label, b.Cmdline = label, cmdline
			if IsDeployCmdline(cmdline) && n.silent() {
				n.logf("deploy ramdisk booted silent: it will never call back")
			} else if IsDeployCmdline(cmdline) {
				if err := n.startAgent(cmdline); err != nil {
					n.logf("start agent: %v", err)
				} else {
					b.Agent = true
				}
			}
		}
	}
	n.mu.Lock()
	n.boots = append(n.boots, b)
	n.mu.Unlock()
}

// IsDeployCmdline tells whether a kernel command line boots a deploy
// ramdisk (agent or callback parameters) rather than an instance.
func IsDeployCmdline(cmdline string) bool {
	for _, tok := range strings.Fields(cmdline) {
		k, _, _ := strings.Cut(tok, "=")
		if k == "ipa-api-url" || k == "deployment_id" {
			return true
		}
	}
	return false
}

// ReadPXEConfig reads a PXELINUX configuration as the firmware and
// PXELINUX would: the default label's append line is the kernel command
// line (with its initrd= argument, which a kernel ignores).
func ReadPXEConfig(path string) (label, cmdline string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	var current string
	appends := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		key, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToLower(key) {
		case "default":
			label = rest
		case "label":
			current = rest
		case "append":
			appends[current] = rest
		}
	}
	if label == "" {
		return "", "", fmt.Errorf("%s: no default label", path)
	}
	cmdline, ok := appends[label]
	if !ok {
		return "", "", fmt.Errorf("%s: label %s has no append line", path, label)
	}
	return label, cmdline, nil
}

// startAgent starts ferric-agent with the kernel command line and extra
// arguments.
func (n *Node) startAgent(cmdline string, extra ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	powerOff, err := n.powerOffScript()
	if err != nil {
		return err
	}
	args := []string{"-cmdline", cmdline, "-mode", n.mode, "-disk", n.Disk, "-listen", n.AgentListen,
		"-iscsi-portal", n.Portal, "-tgtd-control-port", strconv.Itoa(n.TgtdControlPort),
		"-tgtd-log", filepath.Join(n.Dir, "tgtd.log"), "-mac", n.MAC, "-address", n.Address, "-done-listen", n.DoneListen,
		"-heartbeat-interval", "2s", "-lookup-backoff", "500ms", "-lookup-max-backoff", "2s",
		"-power-off-command", powerOff, "-debug"}
	args = append(args, extra...)
	logf, err := os.OpenFile(n.AgentLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== %s boot: ferric-agent -mode %s\n", time.Now().UTC().Format(time.RFC3339), n.mode)
	cmd := exec.Command(n.lab.opts.AgentBinary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own group holds the agent and its tgtd, so a kill reaches both;
	// Pdeathsig ends it with the lab.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start ferric-agent: %w", err)
	}
	p := &agentProc{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	n.agent = p
	return nil
}

// powerOffScript writes the command the agent runs to power its node off:
// ipmitool against the node's own BMC, as the OS's last act.
func (n *Node) powerOffScript() (string, error) {
	if n.ILO != nil {
		return n.iloPowerOffScript()
	}
	pw := filepath.Join(n.Dir, "bmc.pw")
	if err := os.WriteFile(pw, []byte(n.BMC.Password), 0o600); err != nil {
		return "", err
	}
	return fmt.Sprintf("ipmitool -I lanplus -C 3 -N 1 -R 3 -H %s -p %d -U %s -f %s chassis power off",
		n.BMC.Address, n.BMC.Port, n.BMC.Username, pw), nil
}

// stopAgent ends the node's agent: SIGTERM (it releases its iSCSI target
// and stops its tgtd), then SIGKILL of its process group after the grace
// period; a tgtd left behind is shut down through its control port.
func (n *Node) stopAgent() error {
	n.mu.Lock()
	p := n.agent
	n.agent = nil
	n.mu.Unlock()
	if p == nil {
		return nil
	}
	pgid := p.cmd.Process.Pid
	select {
	case <-p.exited:
	default:
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(n.lab.opts.AgentGrace):
			n.logf("agent %d ignored SIGTERM for %s; killing its group", pgid, n.lab.opts.AgentGrace)
		}
	}
	// The agent is gone; a tgtd it started may still run in its group.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.exited
	return n.ensureTgtdGone()
}

// ensureTgtdGone waits until nothing answers on the node's tgtd control
// port and the portal is free, and removes control sockets a killed tgtd
// left behind.
func (n *Node) ensureTgtdGone() error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if !tgt.Answers(context.Background(), n.TgtdControlPort) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lab: tgtd on control port %d of %s still answers", n.TgtdControlPort, n.Name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	sock := filepath.Join(tgtdSocketDir, "socket."+strconv.Itoa(n.TgtdControlPort))
	_ = os.Remove(sock)
	_ = os.Remove(sock + ".lock")
	return nil
}

func (n *Node) logf(format string, args ...any) {
	f, err := os.OpenFile(n.AgentLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "=== lab: "+format+"\n", args...)
}

// BuildAgent compiles cmd/ferric-agent into dir and returns its path.
func BuildAgent(ctx context.Context, repoRoot, dir string) (string, error) {
	out := filepath.Join(dir, "ferric-agent")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./ferric-agent")
	cmd.Dir = filepath.Join(repoRoot, "cmd")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("lab: build ferric-agent: %w: %s", err, msg)
	}
	return out, nil
}

// tgtdSocketDir is where tgtd puts its control socket, socket.<port>.
const tgtdSocketDir = "/var/run/tgtd"

// freeControlPort picks a tgtd control port no tgtd uses and no other lab
// node has. tgtd accepts 0-32767; it is a socket name, not a TCP port, so
// a free one is one without a socket lock file (stale ones are skipped too).
func (l *Lab) freeControlPort() (int, error) {
	for range 100 {
		port, err := tgttest.ControlPort()
		if err != nil {
			return 0, fmt.Errorf("lab: %w", err)
		}
		if !slices.ContainsFunc(l.Nodes, func(n *Node) bool { return n.TgtdControlPort == port }) {
			return port, nil
		}
	}
	return 0, errors.New("lab: no free tgtd control port")
}

// FreeTCPPort returns a port nothing listens on at the moment.
func FreeTCPPort() (int, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("lab: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// randomMAC is a locally administered unicast address.
func randomMAC() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	b[0] = b[0]&0xfe | 0x02
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5])
}
