package iscsi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/ferricbm/ferric/deploy/agent/tgt"
	"github.com/ferricbm/ferric/deploy/agent/tgt/tgttest"
	"github.com/ferricbm/ferric/deploy/iscsi"
)

// BenchmarkWrite writes ISCSI_BENCH_SIZE bytes (default 64 MiB; 1073741824 for the
// 1 GiB comparison) of random data to one tgtd LUN, first with this initiator
// (BenchWrite: login, copy, SYNCHRONIZE CACHE, logout), then with `qemu-img convert`
// (libiscsi, default writeback cache, which also flushes) on the same target. The LUN's
// backing file lives in ISCSI_BENCH_DIR (default: a temporary directory); use a tmpfs
// such as /dev/shm to measure the iSCSI path without the local disk.
func BenchmarkWrite(b *testing.B) {
	t, iqn, src, srcFile := benchTarget(b)
	size := int64(len(src))
	ctx := context.Background()

	b.Run("ferric", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			n, _, err := iscsi.BenchWrite(ctx, t.Portal, iqn, bytes.NewReader(src), size)
			if err != nil || n != size {
				b.Fatalf("wrote %d of %d bytes: %v", n, size, err)
			}
		}
	})
	b.Run("qemu-img", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			out, err := exec.Command("qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", srcFile,
				fmt.Sprintf("iscsi://%s/%s/1", t.Portal, iqn)).CombinedOutput()
			if err != nil {
				b.Fatalf("qemu-img: %v: %s", err, out)
			}
		}
	})
}

// BenchmarkRead reads the LUN back as WriteImage's verification does (4 MiB reads
// from 4 goroutines) with commands of 64 KiB (the default) and of 1 MiB: tgtd maps
// fresh pages for each command buffer of 128 KiB or more.
func BenchmarkRead(b *testing.B) {
	t, iqn, src, _ := benchTarget(b)
	size := int64(len(src))
	ctx := context.Background()
	for _, mtl := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("commands of %d KiB", mtl>>10), func(b *testing.B) {
			s, err := iscsi.Dial(ctx, t.Portal, iqn, iscsi.Options{MaxTransferLength: mtl})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			id, err := s.FirstDisk(ctx)
			if err != nil {
				b.Fatal(err)
			}
			lun, err := s.OpenLUN(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			dev := lun.Device(ctx)
			b.SetBytes(size)
			for b.Loop() {
				errs := make([]error, 4)
				var wg sync.WaitGroup
				for w := range int64(len(errs)) {
					wg.Go(func() {
						buf := make([]byte, 4<<20)
						for off := w * int64(len(buf)); off < size && errs[w] == nil; off += int64(len(errs) * len(buf)) {
							_, errs[w] = dev.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
						}
					})
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchTarget starts a tgtd exporting a LUN of ISCSI_BENCH_SIZE bytes and returns it
// with the target's IQN and random data of that size, also written to srcFile.
func benchTarget(b *testing.B) (*tgttest.Target, string, []byte, string) {
	size := int64(64 << 20)
	if v := os.Getenv("ISCSI_BENCH_SIZE"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n%512 != 0 {
			b.Fatalf("ISCSI_BENCH_SIZE=%q: want a positive multiple of 512", v)
		}
		size = n
	}
	if err := ensureTools(); err != nil {
		b.Fatal(err)
	}
	work := b.TempDir()
	backingDir := work
	if v := os.Getenv("ISCSI_BENCH_DIR"); v != "" {
		d, err := os.MkdirTemp(v, "iscsi-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		backingDir = d
	}
	t, err := tgttest.Start(context.Background(), work, tgt.Options{Stock: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := t.Stop(); err != nil {
			b.Error(err)
		}
	})
	backing := filepath.Join(backingDir, "lun.img")
	if err := os.WriteFile(backing, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.Truncate(backing, size); err != nil {
		b.Fatal(err)
	}
	const iqn = "iqn.2026-12.test:bench"
	if _, err := t.AddTarget(iqn, backing); err != nil {
		b.Fatal(err)
	}
	src := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{42}).Read(src)
	srcFile := filepath.Join(work, "src.raw")
	if err := os.WriteFile(srcFile, src, 0o600); err != nil {
		b.Fatal(err)
	}
	return t, iqn, src, srcFile
}
