package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ferricbm/ferric/deploy/floppy"
)

// VirtualMediaRoots are where the virtual-media floppy is looked for; tests
// point them into a temporary tree.
type VirtualMediaRoots struct {
	// ByLabel holds the udev label links (/dev/disk/by-label).
	ByLabel string
	// SysBlock lists the block devices with their device/model (/sys/class/block).
	SysBlock string
	// Dev holds the device nodes named as in SysBlock (/dev).
	Dev string
}

// DefaultVirtualMediaRoots are a booted ramdisk's.
var DefaultVirtualMediaRoots = VirtualMediaRoots{ByLabel: "/dev/disk/by-label", SysBlock: "/sys/class/block", Dev: "/dev"}

// floppyLabels are the labels the floppy is known by: Ironic labels it
// ir-vfd-dev, and tools that upper-case labels make it IR-VFD-DEV.
var floppyLabels = []string{floppy.Label, strings.ToUpper(floppy.Label)}

// FindVirtualMediaDevice returns the virtual-media floppy: the device labelled
// ir-vfd-dev or IR-VFD-DEV, else (images built before the floppy had a
// label) the block device whose model contains "virtual media". It retries
// until ctx ends because virtual media can appear late during boot.
func FindVirtualMediaDevice(ctx context.Context, roots VirtualMediaRoots) (string, error) {
	for {
		if dev := findVirtualMediaDevice(roots); dev != "" {
			return dev, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no virtual-media floppy (label %s, or model \"virtual media\"): %w",
				strings.Join(floppyLabels, " or "), ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

func findVirtualMediaDevice(roots VirtualMediaRoots) string {
	for _, l := range floppyLabels {
		p := filepath.Join(roots.ByLabel, l)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	devs, _ := os.ReadDir(roots.SysBlock)
	for _, d := range devs {
		model, err := os.ReadFile(filepath.Join(roots.SysBlock, d.Name(), "device", "model"))
		if err == nil && strings.Contains(strings.ToLower(string(model)), "virtual media") {
			return filepath.Join(roots.Dev, d.Name())
		}
	}
	return ""
}

// VirtualMediaCmdline gives the deploy parameters of a virtual-media boot.
// When cmdline (the kernel command line) has boot_method=vmedia, it reads
// parameters.txt from the floppy at dev, without mounting it, and returns it
// appended to cmdline: ParseCmdline lets later tokens win, so the floppy's
// values override the command line's. Other boots return cmdline unchanged.
func VirtualMediaCmdline(cmdline, dev string) (string, error) {
	if !IsVirtualMediaBoot(cmdline) {
		return cmdline, nil
	}
	fs, f, err := floppy.OpenFile(dev)
	if err != nil {
		return "", fmt.Errorf("open virtual-media floppy: %w", err)
	}
	defer f.Close()
	params, err := fs.ReadFile(floppy.ParametersFile)
	if errors.Is(err, floppy.ErrNotExist) {
		return "", fmt.Errorf("virtual-media floppy %s holds no %s", dev, floppy.ParametersFile)
	}
	if err != nil {
		return "", fmt.Errorf("read %s from %s: %w", floppy.ParametersFile, dev, err)
	}
	return strings.TrimSpace(cmdline) + " " + string(params), nil
}

// IsVirtualMediaBoot reports whether the kernel command line says the node
// booted from virtual media (boot_method=vmedia, set by the deploy ISO).
func IsVirtualMediaBoot(cmdline string) bool {
	return ParseCmdline(cmdline).All["boot_method"] == "vmedia"
}
