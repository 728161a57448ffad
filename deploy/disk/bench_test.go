package disk_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ferricbm/ferric/deploy/disk"
	"github.com/ferricbm/ferric/deploy/image"
)

// benchImage writes a 256 MiB raw image, half random data and half zeros
// (in 1 MiB runs), and returns its path and, if format is qcow2, the path
// of its qcow2 conversion.
func benchImage(b *testing.B, format string) string {
	dir := b.TempDir()
	raw := filepath.Join(dir, "bench.raw")
	f, err := os.Create(raw)
	if err != nil {
		b.Fatal(err)
	}
	const size = 256 << 20
	if err := f.Truncate(size); err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for off := int64(0); off < size; off += 2 << 20 {
		for i := range chunk {
			chunk[i] = byte(off>>20) ^ byte(i*7)
		}
		if _, err := f.WriteAt(chunk, off); err != nil {
			b.Fatal(err)
		}
	}
	f.Close()
	if format == "raw" {
		return raw
	}
	q := filepath.Join(dir, "bench.qcow2")
	if out, err := exec.Command("qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw, q).CombinedOutput(); err != nil {
		b.Fatalf("qemu-img: %v: %s", err, out)
	}
	return q
}

func benchmarkWrite(b *testing.B, format string, opts disk.Options) {
	src := benchImage(b, format)
	targetPath := filepath.Join(b.TempDir(), "target")
	tf, err := os.Create(targetPath)
	if err != nil {
		b.Fatal(err)
	}
	if err := tf.Truncate(256 << 20); err != nil {
		b.Fatal(err)
	}
	tf.Close()
	target, err := disk.OpenFile(targetPath)
	if err != nil {
		b.Fatal(err)
	}
	defer target.Close()
	b.SetBytes(256 << 20)
	b.ResetTimer()
	for range b.N {
		img, err := image.Open(src)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := disk.WriteImage(context.Background(), target, img, opts); err != nil {
			b.Fatal(err)
		}
		img.Close()
	}
}

// MB/s here is of the image's virtual size (256 MiB, half of it data).
func BenchmarkWriteRaw(b *testing.B) {
	benchmarkWrite(b, "raw", disk.Options{AssumeZeroed: true})
}

func BenchmarkWriteQcow2(b *testing.B) {
	benchmarkWrite(b, "qcow2", disk.Options{AssumeZeroed: true})
}

func BenchmarkWriteQcow2NoVerify(b *testing.B) {
	benchmarkWrite(b, "qcow2", disk.Options{AssumeZeroed: true, SkipVerify: true})
}

func BenchmarkWriteQcow2CheckZeros(b *testing.B) {
	benchmarkWrite(b, "qcow2", disk.Options{})
}
