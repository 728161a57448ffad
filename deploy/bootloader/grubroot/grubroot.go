// Package grubroot builds, for tests, the smallest root filesystem tree a
// deployed image needs for its boot loader to be installed: the host's
// grub-install with the shared libraries it loads, the GRUB platform
// files for BIOS and UEFI, and udevadm, which grub-install asks where a
// partition starts. The tree goes into an ext4 image with mkfs.ext4 -d.
package grubroot

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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

// Image writes at path an ext4 filesystem image of size bytes holding a
// root tree, with GRUB when withGRUB, and returns its UUID.
func Image(path string, size int64, withGRUB bool) (string, error) {
	tree, err := os.MkdirTemp(filepath.Dir(path), "tree-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tree)
	if err := os.MkdirAll(filepath.Join(tree, "etc"), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tree, "etc", "hostname"), []byte("instance\n"), 0o644); err != nil {
		return "", err
	}
	if withGRUB {
		if err := Build(tree); err != nil {
			return "", err
		}
	}
	if err := sparse(path, size); err != nil {
		return "", err
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-d", tree, path).CombinedOutput(); err != nil {
		return "", fmt.Errorf("mkfs.ext4: %w: %s", err, out)
	}
	out, err := exec.Command("blkid", "-s", "UUID", "-o", "value", path).Output()
	if err != nil {
		return "", fmt.Errorf("blkid %s: %w", path, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Disk writes at path a disk file of size bytes laid out as the
// conductor lays out a BIOS local-boot deploy without swap or ephemeral:
// an msdos table whose one, active partition from 1 MiB holds image.
func Disk(path string, size int64, image string) error {
	img, err := os.Open(image)
	if err != nil {
		return err
	}
	defer img.Close()
	st, err := img.Stat()
	if err != nil {
		return err
	}
	if err := sparse(path, size); err != nil {
		return err
	}
	cmd := exec.Command("sfdisk", "-q", path)
	cmd.Stdin = strings.NewReader(fmt.Sprintf("label: dos\nstart=2048, size=%d, type=83, bootable\n", st.Size()/512))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("sfdisk: %w: %s", err, out)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.Seek(1<<20, io.SeekStart); err != nil {
		f.Close()
		return err
	}
	if _, err := io.Copy(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func sparse(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
