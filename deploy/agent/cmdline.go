package agent

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Params are the deploy parameters the conductor hands the ramdisk on the kernel
// command line (PXE append line) or in the virtual floppy's parameters.txt: Ironic's
// agent names (ipa-*) and the bash ramdisk's names, which a conductor sends together
// so one ramdisk image can be either kind.
type Params struct {
	// APIURL is ipa-api-url, the agent's Ironic API endpoint.
	APIURL string
	// IronicAPIURL is ironic_api_url, the bash ramdisk's endpoint (same URL).
	IronicAPIURL string
	// NodeUUID is ipa-node-uuid (fast-track and virtual-media boots).
	NodeUUID string
	// AgentToken is ipa-agent-token, a token issued before boot.
	AgentToken string
	// DriverName is ipa-driver-name.
	DriverName string
	// DeploymentID is deployment_id, the node UUID for the bash ramdisk callback.
	DeploymentID string
	// DeploymentKey is deployment_key, proof of identity for pass_deploy_info.
	DeploymentKey string
	// IQN is iscsi_target_iqn.
	IQN string
	// Disks is disk: candidate device names ("cciss/c0d0,sda,hda,vda").
	Disks []string
	// BootOption is boot_option (local or netboot), BootMode boot_mode (bios or uefi).
	BootOption, BootMode string
	// RootDevice is root_device: decoded root device hints.
	RootDevice map[string]string
	// AutoTLS is ipa-enable-auto-tls: serve the agent API over HTTPS with a
	// certificate of the agent's own making, which the conductor pins.
	AutoTLS bool
	// BootIf is BOOTIF, the PXE MAC ("01-aa-bb-cc-dd-ee-ff" → "aa:bb:cc:dd:ee:ff").
	BootIf string
	// All holds every name=value token as given.
	All map[string]string
}

// ParseCmdline reads a kernel command line or parameters.txt: whitespace-separated
// tokens, the parameters being the name=value ones (the first "=" splits, so values
// may contain "="). Later tokens win, as on a kernel command line.
func ParseCmdline(s string) Params {
	all := map[string]string{}
	for _, tok := range strings.Fields(s) {
		if k, v, ok := strings.Cut(tok, "="); ok && k != "" {
			all[k] = strings.Trim(v, `"`)
		}
	}
	p := Params{
		APIURL:        strings.TrimRight(all["ipa-api-url"], "/"),
		IronicAPIURL:  strings.TrimRight(all["ironic_api_url"], "/"),
		NodeUUID:      all["ipa-node-uuid"],
		AgentToken:    all["ipa-agent-token"],
		DriverName:    all["ipa-driver-name"],
		DeploymentID:  all["deployment_id"],
		DeploymentKey: all["deployment_key"],
		IQN:           all["iscsi_target_iqn"],
		BootOption:    all["boot_option"],
		BootMode:      all["boot_mode"],
		All:           all,
	}
	p.AutoTLS, _ = strconv.ParseBool(all["ipa-enable-auto-tls"])
	for _, d := range strings.Split(all["disk"], ",") {
		if d = strings.TrimSpace(d); d != "" {
			p.Disks = append(p.Disks, d)
		}
	}
	if hints := all["root_device"]; hints != "" {
		p.RootDevice = map[string]string{}
		for _, kv := range strings.Split(hints, ",") {
			k, v, _ := strings.Cut(kv, "=")
			if dv, err := url.QueryUnescape(v); err == nil {
				v = dv
			}
			p.RootDevice[k] = v
		}
	}
	if b := all["BOOTIF"]; b != "" {
		// pxelinux prefixes the ARP hardware type (01 = Ethernet).
		b = strings.TrimPrefix(b, "01-")
		p.BootIf = strings.ToLower(strings.ReplaceAll(b, "-", ":"))
	}
	return p
}

// Mode is how the ramdisk talks to the conductor.
type Mode string

const (
	// ModeAgent is the IPA-compatible agent: lookup, heartbeats, command API.
	ModeAgent Mode = "agent"
	// ModeCallback is the bash ramdisk: export the disk, call pass_deploy_info once,
	// wait for "done" on port 10000.
	ModeCallback Mode = "callback"
)

// Mode picks the agent when the agent API URL is given, else the callback-only
// ramdisk when the bash parameters are; "" when neither is complete.
func (p Params) Mode() Mode {
	switch {
	case p.APIURL != "":
		return ModeAgent
	case p.IronicAPIURL != "" && p.DeploymentID != "" && p.IQN != "":
		return ModeCallback
	}
	return ""
}

// FindDisk returns the first of the bash ramdisk's candidate names ("sda",
// "cciss/c0d0") that exists under /dev, retrying until ctx ends because disks can
// appear late during boot.
func FindDisk(ctx context.Context, names []string) (string, error) {
	if len(names) == 0 {
		return "", errors.New("no disk candidates")
	}
	for {
		for _, n := range names {
			path := n
			if !strings.HasPrefix(path, "/") {
				path = "/dev/" + n
			}
			if _, err := os.Stat(path); err == nil {
				return path, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("none of the disks %s appeared: %w", strings.Join(names, ","), ctx.Err())
		case <-time.After(time.Second):
		}
	}
}
