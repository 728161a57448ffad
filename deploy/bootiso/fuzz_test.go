package bootiso

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadBootConfig reads hostile ISOs, as a BMC simulator may be handed:
// errors are fine, panics and endless walks are not.
func FuzzReadBootConfig(f *testing.F) {
	dir := f.TempDir()
	kernel, ramdisk := filepath.Join(dir, "kernel"), filepath.Join(dir, "ramdisk")
	for _, p := range []string{kernel, ramdisk} {
		if err := os.WriteFile(p, []byte("placeholder"), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	iso := filepath.Join(dir, "boot.iso")
	if err := Build(context.Background(), iso, Options{Kernel: kernel, Ramdisk: ramdisk, KernelParams: "root=UUID=x a=b"}); err != nil {
		f.Skip("xorriso: ", err)
	}
	seed, err := os.ReadFile(iso)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ReadBootConfig(bytes.NewReader(data))
	})
}
