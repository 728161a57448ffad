package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab/bmc"
)

// Dirs are the conductor directories a lab shares with it.
type Dirs struct {
	// TFTPRoot is [pxe] tftp_root: the lab reads PXE configurations there.
	TFTPRoot string
	// HTTPRoot is [deploy] http_root; Images is [pxe] instance_master_path.
	HTTPRoot, Images string
}

// MakeDirs creates the conductor directories under parent.
func MakeDirs(parent string) (Dirs, error) {
	d := Dirs{TFTPRoot: filepath.Join(parent, "tftpboot"), HTTPRoot: filepath.Join(parent, "httpboot"),
		Images: filepath.Join(parent, "images")}
	for _, p := range []string{d.TFTPRoot, d.HTTPRoot, d.Images} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return Dirs{}, fmt.Errorf("lab: %w", err)
		}
	}
	return d, nil
}

// Configure sets the options a conductor needs to deploy lab nodes: the
// ipmi hardware type (next to fake-hardware), the directories, the boot
// file server on httpPort, the iSCSI portal port the lab's agents use, and
// IPMI timings suited to the local ipmi_sim BMCs. [conductor] api_url is
// set once the API runs (SetAPIURL).
// The conductor retries commands that fail with bmc.LateAnswer.
func Configure(c harness.Config, d Dirs, portalPort, httpPort int) harness.Config {
	return c.Set("conductor", "enabled_hardware_types", []string{"ipmi", "fake-hardware"}).
		Set("pxe", "tftp_root", d.TFTPRoot).
		Set("pxe", "instance_master_path", d.Images).
		Set("deploy", "http_root", d.HTTPRoot).
		Set("deploy", "http_url", fmt.Sprintf("http://127.0.0.1:%d", httpPort)).
		// The lab's images, kernels and ramdisks are served from
		// 127.0.0.1, which a conductor otherwise refuses to download from.
		Set("conductor", "image_download_allowed_networks", []string{"127.0.0.0/8"}).
		Set("iscsi", "portal_port", portalPort).
		Set("ipmi", "min_command_interval", "100ms").
		Set("ipmi", "connect_timeout", time.Second).
		Set("ipmi", "cipher_suite", 3).
		Set("ipmi", "power_state_poll_interval", "200ms").
		Set("ipmi", "additional_retryable_ipmi_errors", []string{bmc.LateAnswer})
}

// SetAPIURL points the ramdisks at the API: [conductor] api_url.
func SetAPIURL(c harness.Config, apiURL string) harness.Config {
	return c.Set("conductor", "api_url", apiURL)
}

// DriverInfo is the ipmi driver_info for a lab node, with the deploy
// kernel and ramdisk references.
func (n *Node) DriverInfo(deployKernel, deployRamdisk string) map[string]any {
	return map[string]any{
		"ipmi_address":   n.BMC.Address,
		"ipmi_port":      n.BMC.Port,
		"ipmi_username":  n.BMC.Username,
		"ipmi_password":  n.BMC.Password,
		"deploy_kernel":  deployKernel,
		"deploy_ramdisk": deployRamdisk,
	}
}

// ConfigureVMedia adds what a conductor needs to deploy the lab's iLO and
// Redfish nodes: the ilo and redfish hardware types next to ipmi and
// fake-hardware, and quick power polling (the simulated iLOs change power
// at once). Media are published on the boot file server unless
// WithSwift is applied too.
func ConfigureVMedia(c harness.Config) harness.Config {
	return c.Set("conductor", "enabled_hardware_types", []string{"ipmi", "ilo", "redfish", "fake-hardware"}).
		Set("ilo", "power_wait", 1).
		Set("ilo", "power_retry", 10).
		Set("ilo", "use_web_server_for_images", true)
}

// Swift is a Swift all-in-one's tempauth account (scripts/swift-aio.sh).
type Swift struct {
	AuthURL, Username, Key string
}

// WithSwift makes a conductor publish virtual media in Swift's container.
func WithSwift(c harness.Config, sw Swift, container string) harness.Config {
	return c.Set("ilo", "use_web_server_for_images", false).
		Set("ilo", "swift_ilo_container", container).
		Set("swift", "auth_type", "tempauth").
		Set("swift", "auth_url", sw.AuthURL).
		Set("swift", "username", sw.Username).
		Set("swift", "password", sw.Key)
}

// StartSwift starts the Swift all-in-one of scripts/swift-aio.sh when it
// does not answer (the script is idempotent) and returns its account.
func StartSwift(ctx context.Context, repoRoot string) (Swift, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, "scripts", "swift-aio.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Swift{}, fmt.Errorf("lab: start Swift: %w: %s", err, stderr.String())
	}
	// The auth URL is the last line: a first run also prints what it
	// installed.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return Swift{AuthURL: strings.TrimSpace(lines[len(lines)-1]), Username: "test:tester", Key: "testing"}, nil
}
