package image_test

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/image"
)

// reassemble walks img's extents, checks they tile the virtual disk, and
// returns the disk's bytes and how many were carried as data.
func reassemble(img image.Image) ([]byte, int64) {
	GinkgoHelper()
	out := make([]byte, img.VirtualSize())
	var next, data int64
	Expect(img.Extents(func(e image.Extent) error {
		Expect(e.Offset).To(Equal(next), "extents must be contiguous")
		Expect(e.Length).To(BeNumerically(">", 0))
		if e.Zero {
			Expect(e.Data).To(BeNil())
		} else {
			Expect(int64(len(e.Data))).To(Equal(e.Length))
			// No 64 KiB-aligned piece of a data extent is all zeros.
			for i := int64(0); i < e.Length; {
				j := min(e.Length, i+image.BlockSize-(e.Offset+i)%image.BlockSize)
				Expect(image.IsZero(e.Data[i:j])).To(BeFalse(), "zero block at %d sent as data", e.Offset+i)
				i = j
			}
			copy(out[e.Offset:], e.Data)
			data += e.Length
		}
		next += e.Length
		return nil
	})).To(Succeed())
	Expect(next).To(Equal(img.VirtualSize()))
	return out, data
}

// nonZeroBlocks counts the bytes of content in 64 KiB blocks (aligned on
// the disk) that are not all zero.
func nonZeroBlocks(content []byte) int64 {
	var n int64
	for i := 0; i < len(content); i += image.BlockSize {
		b := content[i:min(len(content), i+image.BlockSize)]
		if !image.IsZero(b) {
			n += int64(len(b))
		}
	}
	return n
}

func open(path string) image.Image {
	GinkgoHelper()
	img, err := image.Open(path)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(img.Close)
	return img
}

var _ = Describe("Open and Extents", func() {
	var dir, rawPath string
	var content []byte

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		rawPath = filepath.Join(dir, "disk.raw")
		content = writeRawImage(rawPath)
	})

	It("reads a raw image, sending only non-zero blocks", func() {
		img := open(rawPath)
		Expect(img.Format()).To(Equal("raw"))
		Expect(img.VirtualSize()).To(Equal(int64(len(content))))
		got, data := reassemble(img)
		Expect(sha256.Sum256(got)).To(Equal(sha256.Sum256(content)))
		Expect(data).To(BeNumerically("<=", nonZeroBlocks(content)))
	})

	DescribeTable("reads qcow2 images made by qemu-img convert like qemu-img does",
		func(args ...string) {
			q := filepath.Join(dir, "disk.qcow2")
			run("qemu-img", append(append([]string{"convert", "-f", "raw", "-O", "qcow2"}, args...), rawPath, q)...)
			back := filepath.Join(dir, "back.raw")
			run("qemu-img", "convert", "-f", "qcow2", "-O", "raw", q, back)
			want, err := os.ReadFile(back)
			Expect(err).NotTo(HaveOccurred())

			format, err := image.Detect(q)
			Expect(err).NotTo(HaveOccurred())
			Expect(format).To(Equal("qcow2"))
			img := open(q)
			Expect(img.Format()).To(Equal("qcow2"))
			Expect(img.VirtualSize()).To(Equal(int64(len(want))))
			got, data := reassemble(img)
			Expect(sha256.Sum256(got)).To(Equal(sha256.Sum256(want)))
			Expect(sha256.Sum256(got)).To(Equal(sha256.Sum256(content)))
			Expect(data).To(BeNumerically("<=", nonZeroBlocks(content)))
		},
		Entry("v3 (compat 1.1), 64 KiB clusters", "-o", "compat=1.1"),
		Entry("v2 (compat 0.10)", "-o", "compat=0.10"),
		Entry("deflate-compressed clusters", "-c"),
		Entry("compressed, 4 KiB clusters", "-c", "-o", "cluster_size=4096"),
		Entry("512-byte clusters", "-o", "cluster_size=512"),
		Entry("2 MiB clusters", "-o", "cluster_size=2M"),
		Entry("preallocated metadata", "-o", "preallocation=metadata"),
	)

	It("reads an empty qcow2 from qemu-img create as one zero run", func() {
		q := filepath.Join(dir, "empty.qcow2")
		run("qemu-img", "create", "-f", "qcow2", q, "10G")
		img := open(q)
		Expect(img.VirtualSize()).To(Equal(int64(10 << 30)))
		var extents []image.Extent
		Expect(img.Extents(func(e image.Extent) error { extents = append(extents, e); return nil })).To(Succeed())
		Expect(extents).To(Equal([]image.Extent{{Offset: 0, Length: 10 << 30, Zero: true}}))
	})

	It("treats v3 zero clusters as zeros without reading them", func() {
		q := filepath.Join(dir, "zero.qcow2")
		run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", rawPath, q)
		// Turn the allocated first MiB into zero clusters.
		run("qemu-io", "-f", "qcow2", "-c", "write -z 0 1M", q)
		out := run("qemu-img", "map", "--output=json", q)
		Expect(out).To(ContainSubstring(`"zero": true, "data": false`))
		img := open(q)
		got, data := reassemble(img)
		want := append([]byte{}, content...)
		clear(want[:1<<20])
		Expect(sha256.Sum256(got)).To(Equal(sha256.Sum256(want)))
		Expect(data).To(BeNumerically("<=", nonZeroBlocks(want)))
	})

	DescribeTable("refuses qcow2 features it cannot write faithfully",
		func(message string, create func(q string)) {
			q := filepath.Join(dir, "x.qcow2")
			create(q)
			_, err := image.Open(q)
			Expect(err).To(HaveOccurred())
			Expect(errors.Is(err, image.ErrUnsupported)).To(BeTrue(), err.Error())
			Expect(err.Error()).To(ContainSubstring(message))
		},
		Entry("backing file", `backing file "`, func(q string) {
			base := filepath.Join(filepath.Dir(q), "base.qcow2")
			run("qemu-img", "create", "-f", "qcow2", base, "16M")
			run("qemu-img", "create", "-f", "qcow2", "-b", base, "-F", "qcow2", q)
		}),
		Entry("encryption", "encrypted", func(q string) {
			// qemu-img times its LUKS key derivation by the thread's CPU
			// time and gives up ("Unable to get accurate CPU usage") when
			// a loaded machine reports none; a new try measures again.
			Eventually(func() ([]byte, error) {
				return exec.Command("qemu-img", "create", "-f", "qcow2", "--object", "secret,id=sec0,data=123456",
					"-o", "encrypt.format=luks,encrypt.key-secret=sec0", q, "16M").CombinedOutput()
			}).WithTimeout(time.Minute).Should(ContainSubstring("Formatting"))
		}),
		Entry("extended L2 entries", "extended L2", func(q string) {
			run("qemu-img", "create", "-f", "qcow2", "-o", "extended_l2=on", q, "16M")
		}),
		Entry("external data file", "external data file", func(q string) {
			run("qemu-img", "create", "-f", "qcow2", "-o", "data_file="+q+".data", q, "16M")
		}),
		Entry("zstd compression", "compression types", func(q string) {
			run("qemu-img", "create", "-f", "qcow2", "-o", "compression_type=zstd", q, "16M")
		}),
		Entry("vmdk", "vmdk", func(q string) {
			run("qemu-img", "create", "-f", "vmdk", q, "16M")
		}),
		Entry("vhdx", "vhdx", func(q string) {
			run("qemu-img", "create", "-f", "vhdx", q, "16M")
		}),
	)

	It("rejects an L2 table pointing outside the file", func() {
		q := filepath.Join(dir, "bad.qcow2")
		run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", rawPath, q)
		f, err := os.OpenFile(q, os.O_RDWR, 0)
		Expect(err).NotTo(HaveOccurred())
		hdr := make([]byte, 48)
		_, err = f.ReadAt(hdr, 0)
		Expect(err).NotTo(HaveOccurred())
		l1 := int64(binary.BigEndian.Uint64(hdr[40:]))
		entry := make([]byte, 8)
		binary.BigEndian.PutUint64(entry, 1<<63|1<<40) // 1 TiB: far beyond the file
		_, err = f.WriteAt(entry, l1)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Close()).To(Succeed())

		img := open(q)
		err = img.Extents(func(image.Extent) error { return nil })
		Expect(errors.Is(err, image.ErrCorrupt)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("outside the file"))
	})

	It("stops walking when the callback fails", func() {
		img := open(rawPath)
		stop := errors.New("stop")
		calls := 0
		Expect(img.Extents(func(image.Extent) error { calls++; return stop })).To(MatchError(stop))
		Expect(calls).To(Equal(1))
	})
})
