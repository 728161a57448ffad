// Package bootiso builds the ISOs a server boots from virtual media (the deploy
// ISO and a partition image's boot ISO) and reads their kernel command lines
// back; docs/vmedia.md describes the layout.
package bootiso

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Debian's locations of the BIOS boot loader (isolinux, syslinux-common) and
// of a GRUB EFI image that finds its configuration on the ISO by /.disk/info
// (grub-efi-amd64-bin).
const (
	DefaultIsolinuxBin = "/usr/lib/ISOLINUX/isolinux.bin"
	DefaultLdlinux     = "/usr/lib/syslinux/modules/bios/ldlinux.c32"
	DefaultGrubEFI     = "/usr/lib/grub/x86_64-efi/monolithic/grubx64.efi"

	// DefaultVolumeID is the volume name Ironic gives its boot ISOs.
	DefaultVolumeID = "VMEDIA_BOOT_ISO"
)

// Paths inside the ISO.
const (
	kernelPath      = "vmlinuz"
	ramdiskPath     = "initrd"
	isolinuxBinPath = "isolinux/isolinux.bin"
	isolinuxCfgPath = "isolinux/isolinux.cfg"
	ldlinuxPath     = "isolinux/ldlinux.c32"
	// EFIBootPath and GrubCfgPath are where a built efiboot.img and grub.cfg go.
	EFIBootPath = "boot/grub/efiboot.img"
	GrubCfgPath = "boot/grub/grub.cfg"
	// diskInfoPath is the file the GRUB EFI image searches for to find the
	// ISO among the machine's devices.
	diskInfoPath = ".disk/info"
)

// EFIBoot is the UEFI half of a boot ISO: the El Torito EFI image (a FAT image
// holding the GRUB EFI binary) and where the ISO's grub.cfg goes, the place
// that GRUB reads it from.
type EFIBoot struct {
	Image []byte
	// ImagePath and GrubCfgPath are relative paths inside the ISO.
	ImagePath, GrubCfgPath string
}

// Options describe a boot ISO.
type Options struct {
	// Kernel and Ramdisk are files on this machine.
	Kernel, Ramdisk string
	// KernelParams is the kernel command line (see KernelParams).
	KernelParams string
	// VolumeID defaults to DefaultVolumeID.
	VolumeID string
	// IsolinuxBin and Ldlinux default to Debian's files.
	IsolinuxBin, Ldlinux string
	// EFI, when set, adds a UEFI El Torito entry next to the BIOS one.
	EFI *EFIBoot
}

// KernelParams is a partition image's kernel command line: root=UUID=<root
// uuid> when the root is known, then the configured append parameters.
func KernelParams(rootUUID, appendParams string) string {
	var parts []string
	if rootUUID != "" {
		parts = append(parts, "root=UUID="+rootUUID)
	}
	if a := strings.TrimSpace(appendParams); a != "" {
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

func isolinuxCfg(params string) string {
	return "default boot\nlabel boot\nkernel /" + kernelPath + "\nappend initrd=/" + ramdiskPath + " text " + params + " --\n"
}

// grubCfg is Ironic's UEFI menu; it says linux/initrd where Ironic said
// linuxefi/initrdefi, which current GRUB no longer has (linux boots EFI
// kernels itself).
func grubCfg(params string) string {
	return "set default=0\nset timeout=5\nset hidden_timeout_quiet=false\n" +
		"menuentry \"boot_partition\" {\nlinux /" + kernelPath + " " + params + " --\ninitrd /" + ramdiskPath + "\n}\n"
}

// Build writes a boot ISO to out (replacing it) with xorriso: ISO 9660 with Rock Ridge and
// Joliet names, an El Torito BIOS entry booting isolinux and, with opts.EFI,
// an El Torito UEFI entry booting the EFI image.
func Build(ctx context.Context, out string, opts Options) error {
	if strings.ContainsAny(opts.KernelParams, "\n\r") {
		return fmt.Errorf("build boot ISO: kernel parameters hold a line break")
	}
	for _, f := range []string{opts.Kernel, opts.Ramdisk} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("build boot ISO: %w", err)
		}
	}
	if opts.VolumeID == "" {
		opts.VolumeID = DefaultVolumeID
	}
	if opts.IsolinuxBin == "" {
		opts.IsolinuxBin = DefaultIsolinuxBin
	}
	if opts.Ldlinux == "" {
		opts.Ldlinux = DefaultLdlinux
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".bootiso-")
	if err != nil {
		return fmt.Errorf("build boot ISO: %w", err)
	}
	defer os.RemoveAll(tmp)
	// isolinux patches its boot info table into the file it boots from, so it
	// gets a copy rather than Debian's file.
	isolinux, err := os.ReadFile(opts.IsolinuxBin)
	if err != nil {
		return fmt.Errorf("build boot ISO: %w", err)
	}
	generated := map[string][]byte{
		isolinuxBinPath: isolinux,
		isolinuxCfgPath: []byte(isolinuxCfg(opts.KernelParams)),
	}
	grafts := map[string]string{kernelPath: opts.Kernel, ramdiskPath: opts.Ramdisk, ldlinuxPath: opts.Ldlinux}
	args := []string{"-as", "mkisofs", "-r", "-J", "-l", "-V", opts.VolumeID,
		"-b", isolinuxBinPath, "-c", "isolinux/boot.cat", "-no-emul-boot", "-boot-load-size", "4", "-boot-info-table"}
	if opts.EFI != nil {
		for _, p := range []string{opts.EFI.ImagePath, opts.EFI.GrubCfgPath} {
			if !filepath.IsLocal(p) || strings.ContainsAny(p, "\\\x00") {
				return fmt.Errorf("build boot ISO: EFI file path %q is not a relative path inside the ISO", p)
			}
		}
		generated[opts.EFI.ImagePath] = opts.EFI.Image
		generated[opts.EFI.GrubCfgPath] = []byte(grubCfg(opts.KernelParams))
		generated[diskInfoPath] = []byte("Ferric virtual media boot ISO\n")
		args = append(args, "-eltorito-alt-boot", "-e", opts.EFI.ImagePath, "-no-emul-boot")
	}
	// Written beside out and renamed into place, so that whoever serves out
	// never sees half an ISO.
	partial := filepath.Join(tmp, "boot.iso")
	args = append(args, "-o", partial, "-graft-points")
	for iso, data := range generated {
		local := filepath.Join(tmp, filepath.FromSlash(iso))
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return fmt.Errorf("build boot ISO: %w", err)
		}
		if err := os.WriteFile(local, data, 0o644); err != nil {
			return fmt.Errorf("build boot ISO: %w", err)
		}
		grafts[iso] = local
	}
	// A graft point is ISO_PATH=LOCAL_PATH, in which xorriso reads "\=" as a
	// literal "=" and "\\" as "\".
	escape := strings.NewReplacer(`\`, `\\`, `=`, `\=`)
	for _, iso := range slices.Sorted(maps.Keys(grafts)) {
		args = append(args, "/"+escape.Replace(iso)+"="+escape.Replace(grafts[iso]))
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "xorriso", args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build boot ISO with xorriso: %w: %s", err, lastLines(stderr.String(), 5))
	}
	if err := os.Rename(partial, out); err != nil {
		return fmt.Errorf("build boot ISO: %w", err)
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}
