package bootiso

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// BootMethodParam is on a deploy ISO's kernel command line; it tells the
// ramdisk to read its parameters from the virtual floppy.
const BootMethodParam = "boot_method=vmedia"

// DeployISO describes the lab's deploy ISO.
type DeployISO struct {
	// Kernel and Ramdisk are files; the lab may pass placeholders.
	Kernel, Ramdisk string
	// Params are added to boot_method=vmedia on the command line.
	Params string
	// GrubEFI is the GRUB EFI binary for the UEFI entry; "" means
	// DefaultGrubEFI.
	GrubEFI string
}

// BuildDeployISO writes a deploy ISO bootable in BIOS and UEFI mode whose
// kernel command line carries boot_method=vmedia and d.Params.
func BuildDeployISO(ctx context.Context, out string, d DeployISO) error {
	if d.GrubEFI == "" {
		d.GrubEFI = DefaultGrubEFI
	}
	grub, err := os.ReadFile(d.GrubEFI)
	if err != nil {
		return fmt.Errorf("build deploy ISO: %w", err)
	}
	efi, err := BuildEFIBoot(grub)
	if err != nil {
		return fmt.Errorf("build deploy ISO: %w", err)
	}
	params := strings.TrimSpace(BootMethodParam + " " + d.Params)
	if err := Build(ctx, out, Options{Kernel: d.Kernel, Ramdisk: d.Ramdisk, KernelParams: params, VolumeID: "FERRIC_DEPLOY", EFI: efi}); err != nil {
		return fmt.Errorf("build deploy ISO: %w", err)
	}
	return nil
}
