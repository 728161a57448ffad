package lab

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferricbm/ferric/conductor/bmc/ilotest"
	"github.com/ferricbm/ferric/deploy/bootiso"
	"github.com/ferricbm/ferric/deploy/disk"
	"github.com/ferricbm/ferric/deploy/floppy"
	"github.com/ferricbm/ferric/tests/lab/deployiso"
)

// BMC kinds a lab's nodes can have (Options.BMCKind).
const (
	// BMCIPMI is ipmi_sim (package bmc), for the ipmi hardware type.
	BMCIPMI = "ipmi"
	// BMCILO is a simulated iLO 4 (a ProLiant Gen9) speaking RIBCL, for
	// the ilo hardware type.
	BMCILO = "ilo"
	// BMCRedfish is a simulated iLO 5 (a ProLiant Gen10) speaking Redfish,
	// for the redfish hardware type.
	BMCRedfish = "redfish"
)

// BootCD is a Boot's device for a start from the virtual CD.
const BootCD = "cdrom"

// Credentials of every simulated iLO.
const (
	iloUsername = "admin"
	iloPassword = "lab-ilo-pw"
)

// models are the servers the simulated iLOs say they are: the protocol the
// conductor picks follows from the generation (docs/ilo.md).
var models = map[string]string{BMCILO: "ProLiant DL360 Gen9", BMCRedfish: "ProLiant DL360 Gen10"}

// ILO is a node's simulated iLO: HTTPS on the node's own address with a
// self-signed certificate (CAFile trusts it).
type ILO struct {
	*ilotest.Server
	Username, Password string
	// CAFile holds the iLO's certificate, for driver_info ca_file.
	CAFile string
}

// powerEvent is a power change the simulated iLO reported.
type powerEvent struct {
	on     bool
	device string
}

// powerEvents carries a fake iLO's power changes to the node's firmware
// goroutine. The fake reports them under its own lock, so send never
// blocks; the buffer is far more than a conductor's few power actions.
type powerEvents struct {
	mu     sync.Mutex
	ch     chan powerEvent
	closed bool
	lost   int
}

func newPowerEvents() *powerEvents { return &powerEvents{ch: make(chan powerEvent, 256)} }

func (p *powerEvents) send(on bool, device string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	select {
	case p.ch <- powerEvent{on: on, device: device}:
	default:
		p.lost++
	}
}

func (p *powerEvents) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.ch)
	}
}

// startILO starts the node's simulated iLO of kind on its address.
func (n *Node) startILO(kind string) error {
	n.events = newPowerEvents()
	srv, err := ilotest.Start(net.JoinHostPort(n.Address, "0"), ilotest.Options{Username: iloUsername,
		Password: iloPassword, Model: models[kind], OnPower: n.events.send})
	if err != nil {
		return fmt.Errorf("lab: iLO of %s: %w", n.Name, err)
	}
	ca, err := srv.WriteCAFile(n.Dir)
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("lab: %w", err)
	}
	n.ILO = &ILO{Server: srv, Username: iloUsername, Password: iloPassword, CAFile: ca}
	return nil
}

// stopILO stops the node's iLO; its firmware goroutine then ends.
func (n *Node) stopILO() error {
	if n.ILO == nil {
		return nil
	}
	err := n.ILO.Close()
	n.events.close()
	return err
}

// vmediaFirmware follows the simulated iLO: every power change stops what
// runs, a start boots from the device the iLO chose.
func (n *Node) vmediaFirmware() {
	for ev := range n.events.ch {
		if err := n.stopAgent(); err != nil {
			n.logf("stop agent: %v", err)
		}
		if ev.on {
			n.bootVMedia(ev.device)
		}
	}
}

// bootVMedia starts the node from an iLO boot device: RIBCL's CDROM, HDD,
// NETWORK or Redfish's Cd, Hdd, Pxe.
func (n *Node) bootVMedia(device string) {
	switch strings.ToLower(device) {
	case "network", "pxe":
		n.boot("pxe")
	case "cdrom", "cd":
		n.bootCD()
	default:
		n.boot("disk")
	}
}

// InsertedMedia is the image URL in the iLO's CD and floppy drives ("" for
// an empty drive), read from the side that keeps the server's state.
func (n *Node) InsertedMedia() (cd, fl string) {
	if r := n.ILO.Redfish; r != nil {
		if m := r.Media("CD"); m.Inserted {
			cd = m.Image
		}
		if m := r.Media("Floppy"); m.Inserted {
			fl = m.Image
		}
		return cd, fl
	}
	if m := n.ILO.RIBCL.VirtualMedia("CDROM"); m.Inserted {
		cd = m.URL
	}
	if m := n.ILO.RIBCL.VirtualMedia("FLOPPY"); m.Inserted {
		fl = m.URL
	}
	return cd, fl
}

// bootCD boots the ISO in the virtual CD as firmware and boot loader
// would: the kernel command line of the ISO's boot configuration. A deploy
// ISO (boot_method=vmedia) starts ferric-agent, which reads its parameters
// from the virtual floppy; any other ISO is an instance's boot ISO, whose
// root= must name a partition on the node's disk.
func (n *Node) bootCD() {
	b := Boot{Time: time.Now(), Device: BootCD}
	defer func() {
		n.mu.Lock()
		n.boots = append(n.boots, b)
		n.mu.Unlock()
	}()
	cdURL, flURL := n.InsertedMedia()
	b.ISO, b.Floppy = cdURL, flURL
	if cdURL == "" {
		n.logf("CD boot without a medium: nothing to start")
		return
	}
	iso := filepath.Join(n.Dir, "cdrom.iso")
	if err := fetch(cdURL, iso); err != nil {
		n.logf("fetch the CD image: %v", err)
		return
	}
	cmdline, err := isoCmdline(iso)
	if err != nil {
		n.logf("CD image: %v", err)
		return
	}
	b.Cmdline = cmdline
	if !strings.Contains(" "+cmdline+" ", " "+bootiso.BootMethodParam+" ") {
		b.Root, b.RootFound = n.checkRoot(cmdline)
		return
	}
	if flURL == "" {
		n.logf("deploy ISO booted without a floppy: the ramdisk would wait for its parameters")
		return
	}
	fl := filepath.Join(n.Dir, "floppy.img")
	if err := fetch(flURL, fl); err != nil {
		n.logf("fetch the floppy image: %v", err)
		return
	}
	params, err := floppyParameters(fl)
	if err != nil {
		n.logf("floppy: %v", err)
		return
	}
	b.Cmdline = strings.TrimSpace(cmdline + " " + strings.Join(strings.Fields(params), " "))
	switch {
	case !IsDeployCmdline(b.Cmdline):
		n.logf("the floppy has no deploy parameters")
	case n.silent():
		n.logf("deploy ramdisk booted silent: it will never call back")
	default:
		// The agent reads parameters.txt itself, from the floppy image
		// as from the device a real BMC attaches.
		if err := n.startAgent(cmdline, "-vmedia-device", fl); err != nil {
			n.logf("start agent: %v", err)
		} else {
			b.Agent = true
		}
	}
}

// isoCmdline is the kernel command line an ISO boots: the BIOS entry's,
// else the UEFI one's.
func isoCmdline(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	cfg, err := bootiso.ReadBootConfig(f)
	if err != nil {
		return "", err
	}
	if cfg.BIOS != "" {
		return cfg.BIOS, nil
	}
	return cfg.UEFI, nil
}

// floppyParameters reads parameters.txt from a floppy image.
func floppyParameters(path string) (string, error) {
	fs, f, err := floppy.OpenFile(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := fs.ReadFile("parameters.txt")
	if err != nil {
		return "", fmt.Errorf("read parameters.txt: %w", err)
	}
	return string(data), nil
}

// checkRoot finds the partition of the node's disk that the command line's
// root= (UUID= of its filesystem, or PARTUUID=) names; it returns the
// root= value and whether a partition matched.
func (n *Node) checkRoot(cmdline string) (string, bool) {
	var root string
	for _, tok := range strings.Fields(cmdline) {
		if v, ok := strings.CutPrefix(tok, "root="); ok {
			root = v
		}
	}
	if root == "" {
		n.logf("boot ISO without root=")
		return "", false
	}
	d, err := disk.OpenFile(n.Disk)
	if err != nil {
		n.logf("boot ISO: %v", err)
		return root, false
	}
	defer d.Close()
	t, err := disk.ReadTable(d)
	if err != nil {
		n.logf("boot ISO with root=%s: the disk: %v", root, err)
		return root, false
	}
	kind, want, _ := strings.Cut(root, "=")
	for _, p := range t.Partitions {
		var got string
		switch kind {
		case "PARTUUID":
			got = t.PartUUID(p)
		case "UUID":
			out, err := exec.Command("blkid", "-p", "-O", strconv.FormatInt(p.Start, 10), "-s", "UUID", "-o", "value", n.Disk).Output()
			if err != nil {
				continue
			}
			got = strings.TrimSpace(string(out))
		}
		if got != "" && strings.EqualFold(got, want) {
			return root, true
		}
	}
	n.logf("boot ISO with root=%s: no such partition on the disk", root)
	return root, false
}

// mediaClient fetches virtual media as a BMC does; image servers in the
// lab have self-signed certificates, which BMCs accept.
var mediaClient = &http.Client{
	Timeout:   time.Minute,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
}

// fetch downloads url into path.
func fetch(url, path string) error {
	resp, err := mediaClient.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET answered %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return errors.Join(err, f.Close())
}

// iloPowerOffScript writes the command the agent runs to power its node
// off: a hard power off through the node's own iLO.
func (n *Node) iloPowerOffScript() (string, error) {
	script := filepath.Join(n.Dir, "power-off.sh")
	var body string
	if n.ILO.Redfish != nil {
		body = fmt.Sprintf("exec curl -sf --cacert %s -u %s:%s -H 'Content-Type: application/json' -d '{\"ResetType\": \"ForceOff\"}' %s/redfish/v1/Systems/1/Actions/ComputerSystem.Reset\n",
			n.ILO.CAFile, n.ILO.Username, n.ILO.Password, n.ILO.URL)
	} else {
		body = fmt.Sprintf("exec curl -sf --cacert %s --data-binary '<RIBCL VERSION=\"2.0\"><LOGIN USER_LOGIN=\"%s\" PASSWORD=\"%s\"><SERVER_INFO MODE=\"write\"><HOLD_PWR_BTN TOGGLE=\"NO\"/></SERVER_INFO></LOGIN></RIBCL>' %s/ribcl\n",
			n.ILO.CAFile, n.ILO.Username, n.ILO.Password, n.ILO.URL)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"+body), 0o700); err != nil {
		return "", err
	}
	return script, nil
}

// VMediaDriverInfo is the driver_info of the node's hardware type (ilo or
// redfish) with the deploy ISO's URL.
func (n *Node) VMediaDriverInfo(deployISO string) map[string]any {
	if n.ILO.Redfish != nil {
		return map[string]any{
			"redfish_address":   n.ILO.Addr,
			"redfish_username":  n.ILO.Username,
			"redfish_password":  n.ILO.Password,
			"redfish_verify_ca": n.ILO.CAFile,
			"deploy_iso":        deployISO,
		}
	}
	return map[string]any{
		"ilo_address":  n.Address,
		"client_port":  n.ILO.Port,
		"ilo_username": n.ILO.Username,
		"ilo_password": n.ILO.Password,
		"ca_file":      n.ILO.CAFile,
		"deploy_iso":   deployISO,
	}
}

// Driver is the hardware type that drives the node's BMC.
func (n *Node) Driver() string {
	switch {
	case n.ILO == nil:
		return "ipmi"
	case n.ILO.Redfish != nil:
		return "redfish"
	default:
		return "ilo"
	}
}

// DeployISO puts the lab's deploy ISO at out: a copy of the one `make
// setup` cached under the repository's bin/ folder (package deployiso),
// built first when that is missing or out of date.
func DeployISO(ctx context.Context, repoRoot, out string) error {
	if err := deployiso.CopyTo(ctx, repoRoot, out); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return nil
}
