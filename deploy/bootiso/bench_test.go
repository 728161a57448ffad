package bootiso_test

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferricbm/ferric/deploy/bootiso"
)

// benchFiles writes a kernel and a ramdisk of typical sizes (10 and 60 MiB).
func benchFiles(b *testing.B) (kernel, ramdisk string) {
	dir := b.TempDir()
	for name, size := range map[string]int{"kernel": 10 << 20, "ramdisk": 60 << 20} {
		data := make([]byte, size)
		_, _ = rand.Read(data)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return filepath.Join(dir, "kernel"), filepath.Join(dir, "ramdisk")
}

// BenchmarkBuildBIOS builds a partition image's BIOS boot ISO.
func BenchmarkBuildBIOS(b *testing.B) {
	kernel, ramdisk := benchFiles(b)
	out := filepath.Join(b.TempDir(), "boot.iso")
	b.SetBytes(70 << 20)
	for b.Loop() {
		if err := bootiso.Build(context.Background(), out, bootiso.Options{Kernel: kernel, Ramdisk: ramdisk,
			KernelParams: bootiso.KernelParams("3e8f3b4a-0c51-4c2e-9a55-0d1b5e3f7a10", "nofb")}); err != nil {
			b.Fatal(err)
		}
		if err := os.Remove(out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildUEFI builds a hybrid BIOS and UEFI boot ISO, the EFI image
// included.
func BenchmarkBuildUEFI(b *testing.B) {
	kernel, ramdisk := benchFiles(b)
	grub, err := os.ReadFile(bootiso.DefaultGrubEFI)
	if err != nil {
		b.Skip(err)
	}
	out := filepath.Join(b.TempDir(), "boot.iso")
	b.SetBytes(70 << 20)
	for b.Loop() {
		efi, err := bootiso.BuildEFIBoot(grub)
		if err != nil {
			b.Fatal(err)
		}
		if err := bootiso.Build(context.Background(), out, bootiso.Options{Kernel: kernel, Ramdisk: ramdisk,
			KernelParams: bootiso.KernelParams("3e8f3b4a-0c51-4c2e-9a55-0d1b5e3f7a10", "nofb"), EFI: efi}); err != nil {
			b.Fatal(err)
		}
		if err := os.Remove(out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadBootConfig reads the command lines back, as the lab's iLO does
// on every virtual-media boot.
func BenchmarkReadBootConfig(b *testing.B) {
	kernel, ramdisk := benchFiles(b)
	grub, err := os.ReadFile(bootiso.DefaultGrubEFI)
	if err != nil {
		b.Skip(err)
	}
	efi, err := bootiso.BuildEFIBoot(grub)
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "boot.iso")
	if err := bootiso.Build(context.Background(), out, bootiso.Options{Kernel: kernel, Ramdisk: ramdisk, KernelParams: "a=b", EFI: efi}); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for b.Loop() {
		if _, err := bootiso.ReadBootConfig(f); err != nil {
			b.Fatal(err)
		}
	}
}
