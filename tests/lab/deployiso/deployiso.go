// Package deployiso builds the lab's deploy ISO and keeps it in a cache
// under the repository's bin/ folder, so that `make setup` builds it once
// and the lab, the vmedia suites and the bench only copy it. The cached
// file is named by a digest of everything the ISO is made of (see Key):
// when Debian's boot loaders, xorriso or deploy/bootiso change, the next
// user builds a new one.
package deployiso

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ferricbm/ferric/deploy/bootiso"
)

// placeholder is the kernel and the ramdisk of the lab's deploy ISO: the
// lab runs ferric-agent whatever they hold.
const placeholder = "placeholder: the lab runs ferric-agent instead\n"

// CacheDir is where the cached ISO lives, relative to the repository
// root (bin/ is ignored by git and holds the other build outputs).
const CacheDir = "bin/cache/deploy-iso"

// Build writes the lab's deploy ISO to out (xorriso, isolinux, GRUB EFI):
// boot_method=vmedia on placeholder kernel and ramdisk.
func Build(ctx context.Context, out string) error {
	dir, err := os.MkdirTemp(filepath.Dir(out), ".deploy-iso-")
	if err != nil {
		return fmt.Errorf("deploy ISO: %w", err)
	}
	defer os.RemoveAll(dir)
	kernel, ramdisk := filepath.Join(dir, "kernel"), filepath.Join(dir, "initramfs")
	for _, f := range []string{kernel, ramdisk} {
		if err := os.WriteFile(f, []byte(placeholder), 0o644); err != nil {
			return fmt.Errorf("deploy ISO: %w", err)
		}
	}
	if err := bootiso.BuildDeployISO(ctx, out, bootiso.DeployISO{Kernel: kernel, Ramdisk: ramdisk}); err != nil {
		return fmt.Errorf("lab deploy ISO: %w", err)
	}
	return nil
}

// Key is the digest of what the ISO is built from: the placeholder, the
// boot loader files bootiso copies in, xorriso's version and the Go
// sources of deploy/bootiso under root (the repository).
func Key(ctx context.Context, root string) (string, error) {
	h := sha256.New()
	add := func(name string, data []byte) {
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	add("placeholder", []byte(placeholder))
	for _, f := range []string{bootiso.DefaultIsolinuxBin, bootiso.DefaultLdlinux, bootiso.DefaultGrubEFI} {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("deploy ISO key: %w", err)
		}
		add(f, data)
	}
	version, err := exec.CommandContext(ctx, "xorriso", "-version").Output()
	if err != nil {
		return "", fmt.Errorf("deploy ISO key: xorriso -version: %w", err)
	}
	add("xorriso", version)
	sources, err := filepath.Glob(filepath.Join(root, "deploy", "bootiso", "*.go"))
	if err != nil {
		return "", fmt.Errorf("deploy ISO key: %w", err)
	}
	sources = slices.DeleteFunc(sources, func(s string) bool { return strings.HasSuffix(s, "_test.go") })
	if len(sources) == 0 {
		return "", fmt.Errorf("deploy ISO key: no Go sources in %s", filepath.Join(root, "deploy", "bootiso"))
	}
	for _, s := range sources {
		data, err := os.ReadFile(s)
		if err != nil {
			return "", fmt.Errorf("deploy ISO key: %w", err)
		}
		add(filepath.Base(s), data)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// Cached returns the cached ISO of the repository at root and whether it
// was already there; a missing one is built (beside, then renamed into
// place, so concurrent users never see half a file) and the ISOs of other
// keys are removed.
func Cached(ctx context.Context, root string) (path string, hit bool, err error) {
	key, err := Key(ctx, root)
	if err != nil {
		return "", false, err
	}
	dir := filepath.Join(root, CacheDir)
	path = filepath.Join(dir, key+".iso")
	if _, err := os.Stat(path); err == nil {
		return path, true, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, fmt.Errorf("deploy ISO cache: %w", err)
	}
	if err := Build(ctx, path); err != nil {
		return "", false, err
	}
	stale, err := filepath.Glob(filepath.Join(dir, "*.iso"))
	if err != nil {
		return "", false, fmt.Errorf("deploy ISO cache: %w", err)
	}
	for _, s := range stale {
		if s != path {
			_ = os.Remove(s)
		}
	}
	return path, false, nil
}

// CopyTo copies the cached ISO of the repository at root (built when
// missing) to out, for a server to publish.
func CopyTo(ctx context.Context, root, out string) error {
	src, _, err := Cached(ctx, root)
	if err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("deploy ISO: %w", err)
	}
	defer in.Close()
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("deploy ISO: %w", err)
	}
	_, err = io.Copy(f, in)
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("deploy ISO: copy to %s: %w", out, err)
	}
	return nil
}
