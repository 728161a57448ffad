package ipmi

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
)

// Boot devices, named as in Ironic's API (and as ipmitool's bootdev).
const (
	BootPXE   = "pxe"
	BootDisk  = "disk"
	BootCDROM = "cdrom"
	BootBIOS  = "bios"
	BootSafe  = "safe"
)

var bootDevices = []string{BootPXE, BootDisk, BootCDROM, BootBIOS, BootSafe}

// Management is the ipmitool management interface: the node's next boot
// device.
type Management struct{ h *Hardware }

var _ driver.ManagementInterface = (*Management)(nil)

// Validate checks the node's driver_info; it does not contact the BMC.
func (m *Management) Validate(_ context.Context, t driver.TaskContext) error {
	_, err := parseDriverInfo(t.Node())
	return err
}

// Properties describes the driver_info keys this interface reads.
func (m *Management) Properties() map[string]string { return Properties() }

// SupportedBootDevices are the devices SetBootDevice accepts.
func (m *Management) SupportedBootDevices(context.Context, driver.TaskContext) ([]string, error) {
	return slices.Clone(bootDevices), nil
}

// SetBootDevice sets the device the node boots from next time, or every
// time when persistent. Nodes booting in UEFI mode get the EFI boot flag.
// Unless disabled, the BMC is first asked to keep the setting beyond the
// 60 seconds after which the IPMI specification lets it forget; a BMC
// that refuses that request only earns a warning.
func (m *Management) SetBootDevice(ctx context.Context, t driver.TaskContext, device string, persistent bool) error {
	if !slices.Contains(bootDevices, device) {
		return errs.InvalidParameterValue("Invalid boot device %s specified.", device)
	}
	node := t.Node()
	b, err := parseDriverInfo(node)
	if err != nil {
		return err
	}
	disableTimeout := m.h.opts.IPMI.DisableBootTimeout
	if b.DisableBootTimeout != nil {
		disableTimeout = *b.DisableBootTimeout
	}
	if disableTimeout {
		// Boot options parameter 3 (boot info acknowledge), data 0x08:
		// the BMC does not clear the boot flags on its 60 s timer.
		if _, err := m.h.tool.run(ctx, node.UUID, b, "raw", "0x00", "0x08", "0x03", "0x08"); err != nil {
			logging.FromContext(ctx, m.h.tool.log).WithField("node", node.UUID).Warnf("could not disable the boot device timeout: %v", err)
		}
	}
	args := []string{"chassis", "bootdev", device}
	var options []string
	if persistent {
		options = append(options, "persistent")
	}
	if BootMode(node) == "uefi" {
		options = append(options, "efiboot")
	}
	if len(options) > 0 {
		args = append(args, "options="+strings.Join(options, ","))
	}
	_, err = m.h.tool.run(ctx, node.UUID, b, args...)
	return err
}

var bootSelector = regexp.MustCompile(`Boot Device Selector : (.+)`)

// GetBootDevice reads the boot flags (boot option parameter 5). Device is
// nil when the BMC reports no forced device.
func (m *Management) GetBootDevice(ctx context.Context, t driver.TaskContext) (driver.BootDevice, error) {
	b, err := parseDriverInfo(t.Node())
	if err != nil {
		return driver.BootDevice{}, err
	}
	out, err := m.h.tool.run(ctx, t.Node().UUID, b, "chassis", "bootparam", "get", "5")
	if err != nil {
		return driver.BootDevice{}, err
	}
	var device *string
	if match := bootSelector.FindStringSubmatch(out); match != nil {
		sel := match[1]
		var d string
		switch {
		case strings.Contains(sel, "PXE"):
			d = BootPXE
		case strings.Contains(sel, "Hard-Drive") && strings.Contains(sel, "Safe-Mode"):
			d = BootSafe
		case strings.Contains(sel, "Hard-Drive"):
			d = BootDisk
		case strings.Contains(sel, "BIOS"):
			d = BootBIOS
		case strings.Contains(sel, "CD/DVD"):
			d = BootCDROM
		}
		if d != "" {
			device = &d
		}
	}
	persistent := strings.Contains(out, "Options apply to all future boots")
	return driver.BootDevice{Device: device, Persistent: &persistent}, nil
}

// BootMode is the node's boot mode, "uefi" or "bios", decided as Ironic
// does: the mode chosen for the current deploy, then the instance's
// requested capability, then the node's, and "bios" when none says.
func BootMode(node *model.Node) string {
	if s, ok := node.DriverInternalInfo["deploy_boot_mode"].(string); ok && s != "" {
		return s
	}
	for _, caps := range []any{node.InstanceInfo["capabilities"], node.Properties["capabilities"]} {
		if mode := capabilities(caps)["boot_mode"]; mode != "" {
			return mode
		}
	}
	return "bios"
}

// capabilities reads a capabilities value: Ironic's "key:value,key:value"
// string, a JSON object, or that object encoded as a string (as
// instance_info carries it).
func capabilities(v any) map[string]string {
	out := map[string]string{}
	switch c := v.(type) {
	case string:
		var obj map[string]any
		if json.Unmarshal([]byte(c), &obj) == nil {
			return capabilities(obj)
		}
		for _, item := range strings.Split(c, ",") {
			if k, val, ok := strings.Cut(strings.TrimSpace(item), ":"); ok {
				out[strings.TrimSpace(k)] = strings.TrimSpace(val)
			}
		}
	case map[string]any:
		for k, val := range c {
			out[k] = fmt.Sprint(val)
		}
	}
	return out
}
