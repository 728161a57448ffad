// Package grubroot builds, for tests, the smallest root filesystem tree a
// deployed image needs for its boot loader to be installed: the host's
// grub-install with the shared libraries it loads, the GRUB platform
// files for BIOS and UEFI, and udevadm, which grub-install asks where a
// partition starts. The tree goes into an ext4 image with mkfs.ext4 -d.
package grubroot

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
)

// Packages are the Debian packages Build copies from.
var Packages = []string{"grub-pc-bin", "grub-efi-amd64-bin", "grub2-common", "udev"}

// Build fills dir with the tree; dir must exist.
func Build(dir string) error {
	for _, d := range []string{"dev", "proc", "sys", "tmp", "etc", "boot/efi"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	for _, bin := range []string{"/usr/sbin/grub-install", "/usr/bin/udevadm"} {
		libs, err := sharedLibraries(bin)
		if err != nil {
			return err
		}
		for _, f := range append([]string{bin}, libs...) {
			if err := cp("-L", "--parents", "-n", f, dir); err != nil {
				return err
			}
		}
	}
	grubLib := filepath.Join(dir, "usr", "lib", "grub")
	if err := os.MkdirAll(grubLib, 0o755); err != nil {
		return err
	}
	return cp("-a", "/usr/lib/grub/i386-pc", "/usr/lib/grub/x86_64-efi", grubLib)
}

var libPath = regexp.MustCompile(`(?m)(/\S+\.so[.\d]*)\s+\(0x`)

// sharedLibraries lists the files ldd resolves bin's libraries to.
func sharedLibraries(bin string) ([]string, error) {
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w (install %v)", bin, err, Packages)
	}
	var libs []string
	for _, m := range libPath.FindAllStringSubmatch(string(out), -1) {
		libs = append(libs, m[1])
	}
	return libs, nil
}

func cp(args ...string) error {
	if out, err := exec.Command("cp", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("cp %v: %w: %s", args, err, out)
	}
	return nil
}
