package erase_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/erase"
)

// randomFile creates a file of size bytes of pseudo-random data, standing in for a
// disk with a previous tenant's data on it.
func randomFile(dir string, size int) (string, []byte) {
	data := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{7}).Read(data)
	p := filepath.Join(dir, "disk.img")
	Expect(os.WriteFile(p, data, 0o600)).To(Succeed())
	return p, data
}

// expectZeroed checks that the file at path holds size zeros, and rec reports a
// shred of that many passes verified with the default samples.
func expectZeroed(path string, size int, rec erase.Record, passes int) {
	GinkgoHelper()
	got, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	Expect(got).To(HaveLen(size))
	Expect(allZero(got)).To(BeTrue())
	Expect(rec.Method).To(Equal("shred"))
	Expect(rec.Passes).To(Equal(passes))
	Expect(rec.Bytes).To(Equal(int64(size)))
	Expect(rec.SamplesChecked).To(Equal(256 + 2))
}

// sameBytes counts the positions where a and b hold the same byte: independent
// random data agrees by chance about once in 256.
func sameBytes(a, b []byte) int {
	same := 0
	for i := range a {
		if a[i] == b[i] {
			same++
		}
	}
	return same
}

func allZero(b []byte) bool { return bytes.Count(b, []byte{0}) == len(b) }

// corrupt is a Hook that inverts n bytes at off before verification, so every one of them
// differs from what the pass wrote, whatever that was.
type corrupt struct {
	off  int64
	n    int
	hits int
}

func (c *corrupt) BeforeVerify(dev string) error {
	c.hits++
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, c.n)
	if _, err := f.ReadAt(buf, c.off); err != nil {
		return err
	}
	for i := range buf {
		buf[i] = ^buf[i]
	}
	_, err = f.WriteAt(buf, c.off)
	return err
}

var _ = Describe("Device", func() {
	var ctx context.Context
	BeforeEach(func() { ctx = context.Background() })

	// An odd size exercises the unaligned tail, written through the buffered path.
	const size = 24<<20 + 3*512 + 17

	It("leaves only zeros after random passes and a final zero pass, and reports the erase", func() {
		path, _ := randomFile(GinkgoT().TempDir(), size)
		var last, total int64
		rec, err := erase.Device(ctx, path, erase.Options{Iterations: 2, Zeroize: true, BlockSize: 1 << 20,
			Progress: func(done, t int64) { last, total = done, t }})
		Expect(err).NotTo(HaveOccurred())
		expectZeroed(path, size, rec, 3)
		Expect(total).To(Equal(int64(3 * size)))
		Expect(last).To(Equal(total))
	})

	It("overwrites every byte with new random data when no zero pass is asked for", func() {
		path, before := randomFile(GinkgoT().TempDir(), size)
		rec, err := erase.Device(ctx, path, erase.Options{Iterations: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Passes).To(Equal(1))
		after, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(sameBytes(before, after)).To(BeNumerically("<", size/128))
		Expect(allZero(after[:1<<20])).To(BeFalse())
	})

	It("refuses to run no pass at all", func() {
		path, _ := randomFile(GinkgoT().TempDir(), 1<<20)
		_, err := erase.Device(ctx, path, erase.Options{})
		Expect(err).To(MatchError(ContainSubstring("no pass")))
	})

	DescribeTable("catches data that changed between the overwrite and the verification",
		func(opts erase.Options, off int64) {
			path, _ := randomFile(GinkgoT().TempDir(), size)
			hook := &corrupt{off: off, n: 2}
			opts.Hook = hook
			_, err := erase.Device(ctx, path, opts)
			var verr *erase.VerifyError
			Expect(errors.As(err, &verr)).To(BeTrue(), "a *VerifyError: %v", err)
			Expect(verr.Offset).To(Equal(off))
			Expect(hook.hits).To(Equal(1))
		},
		Entry("zeros, in the first MiB", erase.Options{Zeroize: true}, int64(4097)),
		Entry("zeros, in the last MiB", erase.Options{Zeroize: true}, int64(size-10)),
		Entry("random, in the first MiB", erase.Options{Iterations: 1}, int64(123)),
		Entry("random, in the last MiB", erase.Options{Iterations: 1}, int64(size-2)),
	)

	It("catches corruption in the middle when the samples cover it", func() {
		path, _ := randomFile(GinkgoT().TempDir(), 8<<20)
		// 6 MiB between the edges in 4 KiB samples: with 1536 samples every one is read.
		hook := &corrupt{off: 5<<20 + 77, n: 1}
		_, err := erase.Device(ctx, path, erase.Options{Zeroize: true, Samples: 1536, Hook: hook})
		Expect(err).To(MatchError(ContainSubstring("offset 5242957")))
	})
})

var _ = Describe("Metadata", func() {
	const size = 64 << 20

	signatures := func(path string) string {
		out, err := exec.Command("wipefs", "-n", path).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		return strings.TrimSpace(string(out))
	}
	blkidFinds := func(path string) bool {
		err := exec.Command("blkid", "-p", path).Run()
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 2 {
			return false // nothing found
		}
		Expect(err).NotTo(HaveOccurred())
		return true
	}

	It("removes a GPT (both copies) and its protective MBR, zeroing the ends of the disk and of each partition only", func() {
		path, before := randomFile(GinkgoT().TempDir(), size)
		// Partition 1 spans [1 MiB, 41 MiB), partition 2 from there to the backup GPT.
		out, err := exec.Command("sgdisk", "-n", "1:2048:+40M", "-n", "2:0:0", path).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(signatures(path)).To(And(ContainSubstring("gpt"), ContainSubstring("PMBR")))

		rec, err := erase.Metadata(context.Background(), path)
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Method).To(Equal("metadata"))
		Expect(signatures(path)).To(BeEmpty())
		Expect(blkidFinds(path)).To(BeFalse())
		after, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		const mib = 1 << 20
		Expect(allZero(after[:2*mib])).To(BeTrue())
		Expect(allZero(after[40*mib : 42*mib])).To(BeTrue())
		Expect(allZero(after[size-mib-17<<10:])).To(BeTrue())
		Expect(bytes.Equal(after[2*mib:40*mib], before[2*mib:40*mib])).To(BeTrue())
		Expect(bytes.Equal(after[42*mib:size-2*mib], before[42*mib:size-2*mib])).To(BeTrue())
	})

	It("removes a filesystem made on the whole disk", func() {
		path := filepath.Join(GinkgoT().TempDir(), "fs.img")
		Expect(os.WriteFile(path, nil, 0o600)).To(Succeed())
		Expect(os.Truncate(path, size)).To(Succeed())
		out, err := exec.Command("mkfs.ext4", "-q", "-F", path).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(blkidFinds(path)).To(BeTrue())
		_, err = erase.Metadata(context.Background(), path)
		Expect(err).NotTo(HaveOccurred())
		Expect(signatures(path)).To(BeEmpty())
		Expect(blkidFinds(path)).To(BeFalse())
	})
})

var _ = Describe("ReadOnly", func() {
	It("treats a file without write permission bits as read-only", func() {
		path, _ := randomFile(GinkgoT().TempDir(), 4096)
		Expect(erase.ReadOnly(path)).To(BeFalse())
		Expect(os.Chmod(path, 0o444)).To(Succeed())
		Expect(erase.ReadOnly(path)).To(BeTrue())
	})
})
