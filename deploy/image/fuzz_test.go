package image

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ferricbm/ferric/deploy/tooltest"
)

// qemuSeeds returns small qcow2 images made by qemu-img, covering v2, v3,
// compressed, zero and unallocated clusters.
func qemuSeeds(t testing.TB) [][]byte {
	if err := tooltest.Install(context.Background(), map[string]string{"qemu-img": "qemu-utils"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	raw := filepath.Join(dir, "seed.raw")
	// Small seeds keep the fuzzer's minimisation of new inputs quick.
	data := make([]byte, 32<<10)
	_, _ = rand.Read(data[:2<<10])
	_, _ = rand.Read(data[20<<10 : 22<<10])
	if err := os.WriteFile(raw, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmds := [][]string{
		{"create", "-f", "qcow2", "-o", "cluster_size=512", "empty.qcow2", "1M"},
		{"convert", "-O", "qcow2", "-o", "compat=0.10,cluster_size=512", raw, "v2.qcow2"},
		{"convert", "-O", "qcow2", "-o", "compat=1.1,cluster_size=1024", raw, "v3.qcow2"},
		{"convert", "-c", "-O", "qcow2", "-o", "cluster_size=512", raw, "compressed.qcow2"},
	}
	var seeds [][]byte
	for _, c := range cmds {
		cmd := exec.Command("qemu-img", c...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("qemu-img %v: %v: %s", c, err, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, c[len(c)-1]))
		if c[0] == "create" {
			b, err = os.ReadFile(filepath.Join(dir, c[len(c)-2]))
		}
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// FuzzQcow2 feeds hostile qcow2 files to the header and table parser and
// the extent walk: they must fail cleanly, never panic or read outside the
// file.
func FuzzQcow2(f *testing.F) {
	for _, s := range qemuSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := detect(bytes.NewReader(data)); err != nil {
			return
		}
		q, err := parseQcow2(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		if q.size > 1<<20 {
			// Walking a huge virtual disk is slow, not unsafe; the parse
			// above already covered the header and L1 table.
			q.size = 1 << 20
		}
		var next int64
		err = walk(q, q.size, func(e Extent) error {
			if e.Offset != next || e.Length <= 0 || (!e.Zero && int64(len(e.Data)) != e.Length) {
				t.Fatalf("bad extent %+v after %d", e, next)
			}
			next += e.Length
			return nil
		})
		if err == nil && next != q.size {
			t.Fatalf("extents cover %d of %d bytes", next, q.size)
		}
	})
}
