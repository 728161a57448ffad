package disk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/disk"
	"github.com/ferricbm/ferric/deploy/image"
)

// flakyTarget corrupts what is read back at one offset, fails writes at
// another, or runs a hook on the first write.
type flakyTarget struct {
	disk.Target
	corruptAt int64 // -1: none
	failAt    int64 // -1: none
	onWrite   func()
	once      sync.Once
}

func (t *flakyTarget) ReadAt(p []byte, off int64) (int, error) {
	n, err := t.Target.ReadAt(p, off)
	if t.corruptAt >= off && t.corruptAt < off+int64(n) {
		p[t.corruptAt-off] ^= 0x40
	}
	return n, err
}

func (t *flakyTarget) WriteAt(p []byte, off int64) (int, error) {
	if t.onWrite != nil {
		t.once.Do(t.onWrite)
	}
	if t.failAt >= off && t.failAt < off+int64(len(p)) {
		return 0, errors.New("medium error")
	}
	return t.Target.WriteAt(p, off)
}

// journalTarget records, for each byte range read, whether every byte of it
// had been written and then flushed (Sync) before the read: a verification
// read must come from the medium, never from what only sits in a cache.
// Writes at or beyond gate (when set) wait for the first read, for at most
// ten seconds, so a write that finds it only proceeds once verification
// has begun.
type journalTarget struct {
	*disk.File
	gate      int64
	firstRead chan struct{}
	readOnce  sync.Once
	// gatePassed counts gated writes that found a read had happened.
	gatePassed atomic.Int64
	mu         sync.Mutex
	written    []span // written since the last completed flush
	flushed    []span
	syncs      int
	unsynced   []span // reads that were not covered by flushed writes
	reads      int
}

type span struct{ off, end int64 }

func (t *journalTarget) WriteAt(p []byte, off int64) (int, error) {
	if t.gate > 0 && off >= t.gate {
		select {
		case <-t.firstRead:
			t.gatePassed.Add(1)
		case <-time.After(10 * time.Second):
		}
	}
	n, err := t.File.WriteAt(p, off)
	t.mu.Lock()
	t.written = append(t.written, span{off, off + int64(n)})
	t.mu.Unlock()
	return n, err
}

func (t *journalTarget) Sync() error {
	t.mu.Lock()
	pending := t.written
	t.written = nil
	t.mu.Unlock()
	err := t.File.Sync()
	t.mu.Lock()
	if err == nil {
		t.flushed = append(t.flushed, pending...)
		t.syncs++
	} else {
		t.written = append(t.written, pending...)
	}
	t.mu.Unlock()
	return err
}

func (t *journalTarget) ReadAt(p []byte, off int64) (int, error) {
	t.mu.Lock()
	covered := int64(0)
	for _, s := range t.flushed {
		covered += max(0, min(s.end, off+int64(len(p)))-max(s.off, off))
	}
	if covered != int64(len(p)) {
		t.unsynced = append(t.unsynced, span{off, off + int64(len(p))})
	}
	t.reads++
	t.mu.Unlock()
	if t.firstRead != nil {
		t.readOnce.Do(func() { close(t.firstRead) })
	}
	return t.File.ReadAt(p, off)
}

// countingSource counts the bytes it was asked about.
type countingSource struct {
	src   disk.ChecksumSource
	bytes atomic.Int64
}

func (c *countingSource) Checksums(ctx context.Context, off, n int64, blockSize int) ([]uint32, error) {
	c.bytes.Add(n)
	return c.src.Checksums(ctx, off, n, blockSize)
}

type failingSource struct{}

func (failingSource) Checksums(context.Context, int64, int64, int) ([]uint32, error) {
	return nil, errors.New("agent went away")
}

var _ = Describe("ReadBack", func() {
	It("checksums each block of a span, the last one short", func(ctx SpecContext) {
		data := randomBytes(5<<20 + 1000)
		sums, err := disk.ReadBack{R: bytes.NewReader(data)}.Checksums(ctx, 1000, int64(len(data)-1000), 64<<10)
		Expect(err).NotTo(HaveOccurred())
		// 5 MiB in blocks of 64 KiB is 80 blocks, spanning two reads.
		Expect(sums).To(HaveLen(80))
		table := crc32.MakeTable(crc32.Castagnoli)
		Expect(sums[0]).To(Equal(crc32.Checksum(data[1000:1000+64<<10], table)))
		Expect(sums[79]).To(Equal(crc32.Checksum(data[1000+79*64<<10:], table)))
		Expect(sums[79]).NotTo(Equal(crc32.Checksum(data[1000+79*64<<10:len(data)-1], table)))
	})

	It("fails on a span beyond the end", func(ctx SpecContext) {
		_, err := disk.ReadBack{R: bytes.NewReader(make([]byte, 1<<20))}.Checksums(ctx, 512<<10, 1<<20, 64<<10)
		Expect(err).To(MatchError(ContainSubstring("read")))
	})
})

var _ = Describe("WriteImage", func() {
	var dir, rawPath, qcowPath, refPath string
	const imageSize = 24<<20 + 8192

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		rawPath = filepath.Join(dir, "image.raw")
		writeTestImage(rawPath, imageSize)
		qcowPath = filepath.Join(dir, "image.qcow2")
		run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", rawPath, qcowPath)
		// What the disk must hold, according to qemu-img itself.
		refPath = filepath.Join(dir, "ref.raw")
		run("qemu-img", "convert", "-f", "qcow2", "-O", "raw", qcowPath, refPath)
	})

	openImage := func(path string) image.Image {
		GinkgoHelper()
		img, err := image.Open(path)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(img.Close)
		return img
	}

	// sameAsReference compares the image region of the target with
	// qemu-img's raw conversion, using cmp.
	sameAsReference := func(target string, offset int64) {
		GinkgoHelper()
		run("cmp", "-n", fmt.Sprint(imageSize), "-i", fmt.Sprintf("0:%d", offset), refPath, target)
	}

	DescribeTable("writes the image so the disk matches qemu-img convert -O raw",
		func(convertArgs []string, offset int64) {
			src := qcowPath
			if convertArgs != nil {
				src = filepath.Join(dir, "variant.qcow2")
				run("qemu-img", append(append([]string{"convert", "-f", "raw", "-O", "qcow2"}, convertArgs...), rawPath, src)...)
			}
			target := filepath.Join(dir, "disk")
			sparseFile(target, 64<<20)
			var last disk.Progress
			res, err := disk.WriteImage(context.Background(), openTarget(target), openImage(src), disk.Options{
				Offset: offset, AssumeZeroed: true, Workers: 3,
				Progress: func(p disk.Progress) { last = p },
			})
			Expect(err).NotTo(HaveOccurred())
			sameAsReference(target, offset)
			// Only data was sent: 6 x (1 MiB + 100 KiB, block-rounded) at most.
			Expect(res.Written).To(BeNumerically(">=", 6*(1<<20+100<<10)))
			Expect(res.Written).To(BeNumerically("<=", 6*(1<<20+3*64<<10)+8192))
			Expect(res.Zeroed).To(BeZero())
			Expect(res.Written + res.Skipped).To(BeEquivalentTo(imageSize))
			Expect(res.Verified).To(Equal(res.Written))
			Expect(last.Done).To(BeEquivalentTo(imageSize))
			Expect(last.Total).To(BeEquivalentTo(imageSize))
			Expect(last.Written).To(Equal(res.Written))
			Expect(last.BytesPerSecond).To(BeNumerically(">", 0))
		},
		Entry("qcow2 v3", nil, int64(0)),
		Entry("compressed qcow2", []string{"-c"}, int64(0)),
		Entry("qcow2 v2 with 4 KiB clusters", []string{"-o", "compat=0.10,cluster_size=4096"}, int64(0)),
		Entry("qcow2 at a partition offset", nil, int64(1<<20)),
	)

	It("writes a raw image", func() {
		target := filepath.Join(dir, "disk")
		sparseFile(target, imageSize)
		_, err := disk.WriteImage(context.Background(), openTarget(target), openImage(rawPath), disk.Options{AssumeZeroed: true})
		Expect(err).NotTo(HaveOccurred())
		run("cmp", rawPath, target)
	})

	It("clears old data under zero runs unless told the disk is zeroed", func() {
		target := filepath.Join(dir, "disk")
		garbageFile(target, 32<<20)
		res, err := disk.WriteImage(context.Background(), openTarget(target), openImage(qcowPath), disk.Options{})
		Expect(err).NotTo(HaveOccurred())
		sameAsReference(target, 0)
		Expect(res.Zeroed).To(BeNumerically(">", 16<<20))

		// A second write finds the zeros already there and sends only data.
		res, err = disk.WriteImage(context.Background(), openTarget(target), openImage(qcowPath), disk.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Zeroed).To(BeZero())
		sameAsReference(target, 0)
	})

	It("trusts AssumeZeroed: old data survives under zero runs", func() {
		target := filepath.Join(dir, "disk")
		garbageFile(target, 32<<20)
		_, err := disk.WriteImage(context.Background(), openTarget(target), openImage(qcowPath), disk.Options{AssumeZeroed: true})
		Expect(err).NotTo(HaveOccurred())
		err = exec.Command("cmp", "-n", fmt.Sprint(imageSize), refPath, target).Run()
		Expect(err).To(HaveOccurred())
	})

	It("reports the first offset whose data does not read back", func() {
		target := filepath.Join(dir, "disk")
		sparseFile(target, 32<<20)
		// Two corruptions would be reported by the lower; one is enough
		// to show the offset is block-exact: 4 MiB + 5 blocks + 100 bytes
		// lies in the data at the start of the second 4 MiB.
		bad := int64(4<<20 + 5*64<<10 + 100)
		t := &flakyTarget{Target: openTarget(target), corruptAt: bad, failAt: -1}
		_, err := disk.WriteImage(context.Background(), t, openImage(qcowPath), disk.Options{AssumeZeroed: true})
		Expect(errors.Is(err, disk.ErrVerify)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("offset %d ", bad/(64<<10)*(64<<10))))
	})

	It("reads each block back only after a flush that followed its write, while writing goes on", func() {
		target := filepath.Join(dir, "disk")
		sparseFile(target, 32<<20)
		// The image's last 4 MiB are written only once something was read
		// back: verification must start while writing goes on.
		t := &journalTarget{File: openTarget(target), gate: imageSize - 4<<20 - 8192, firstRead: make(chan struct{})}
		res, err := disk.WriteImage(context.Background(), t, openImage(rawPath), disk.Options{
			AssumeZeroed: true, SyncInterval: 1 << 20})
		Expect(err).NotTo(HaveOccurred())
		run("cmp", "-n", fmt.Sprint(imageSize), rawPath, target)
		Expect(res.Verified).To(Equal(res.Written))
		Expect(t.unsynced).To(BeEmpty())
		Expect(t.gatePassed.Load()).To(BeNumerically(">", 0), "no read before the image's end was written")
		Expect(t.syncs).To(BeNumerically(">", 1))
	})

	It("reports the lowest bad offset when verification runs beside the write", func() {
		target := filepath.Join(dir, "disk")
		sparseFile(target, 32<<20)
		bad := int64(12<<20 + 3*64<<10 + 7)
		t := &flakyTarget{Target: openTarget(target), corruptAt: bad, failAt: -1}
		_, err := disk.WriteImage(context.Background(), t, openImage(rawPath), disk.Options{
			AssumeZeroed: true, SyncInterval: 1 << 20})
		Expect(errors.Is(err, disk.ErrVerify)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("offset %d ", bad/(64<<10)*(64<<10))))
	})

	It("asks a given checksum source what the disk holds instead of reading the target back", func() {
		target := filepath.Join(dir, "disk")
		sparseFile(target, 32<<20)
		t := &journalTarget{File: openTarget(target)}
		// What a deploy agent does on the node: read its own disk.
		agentDisk := openTarget(target)
		src := &countingSource{src: disk.ReadBack{R: agentDisk}}
		res, err := disk.WriteImage(context.Background(), t, openImage(rawPath), disk.Options{
			AssumeZeroed: true, Verifier: src})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Verified).To(Equal(res.Written))
		Expect(src.bytes.Load()).To(Equal(res.Written))
		Expect(t.reads).To(BeZero(), "the target was read back")
	})

	It("fails verification where the checksum source reports other data", func() {
		target := filepath.Join(dir, "disk")
		sparseFile(target, 32<<20)
		bad := int64(12<<20 + 3*64<<10 + 7)
		node := &flakyTarget{Target: openTarget(target), corruptAt: bad, failAt: -1}
		_, err := disk.WriteImage(context.Background(), openTarget(target), openImage(rawPath), disk.Options{
			AssumeZeroed: true, Verifier: disk.ReadBack{R: node}})
		Expect(errors.Is(err, disk.ErrVerify)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("offset %d ", bad/(64<<10)*(64<<10))))
	})

	It("fails when the checksum source cannot answer", func() {
		target := filepath.Join(dir, "disk")
		sparseFile(target, 32<<20)
		_, err := disk.WriteImage(context.Background(), openTarget(target), openImage(rawPath), disk.Options{
			AssumeZeroed: true, Verifier: failingSource{}})
		Expect(err).To(MatchError(ContainSubstring("agent went away")))
		Expect(errors.Is(err, disk.ErrVerify)).To(BeFalse())
	})

	It("fails with the offset of a write the target refuses", func() {
		target := filepath.Join(dir, "disk")
		sparseFile(target, 32<<20)
		t := &flakyTarget{Target: openTarget(target), corruptAt: -1, failAt: 8<<20 + 10}
		_, err := disk.WriteImage(context.Background(), t, openImage(qcowPath), disk.Options{AssumeZeroed: true})
		Expect(err).To(MatchError(ContainSubstring("medium error")))
		Expect(err).To(MatchError(ContainSubstring("at offset 8388608")))
	})

	It("stops when its context is cancelled", func() {
		target := filepath.Join(dir, "disk")
		sparseFile(target, 32<<20)
		ctx, cancel := context.WithCancel(context.Background())
		t := &flakyTarget{Target: openTarget(target), corruptAt: -1, failAt: -1, onWrite: cancel}
		res, err := disk.WriteImage(ctx, t, openImage(qcowPath), disk.Options{AssumeZeroed: true, Workers: 1})
		Expect(errors.Is(err, context.Canceled)).To(BeTrue(), "%v", err)
		Expect(res.Written).To(BeNumerically("<", 6<<20))
	})

	It("refuses an image larger than the target", func() {
		target := filepath.Join(dir, "disk")
		sparseFile(target, 16<<20)
		_, err := disk.WriteImage(context.Background(), openTarget(target), openImage(qcowPath), disk.Options{})
		Expect(err).To(MatchError(ContainSubstring("does not fit")))
	})
})
