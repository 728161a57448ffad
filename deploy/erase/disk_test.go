package erase_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/agent/tgt"
	"github.com/ferricbm/ferric/deploy/agent/tgt/tgttest"
	"github.com/ferricbm/ferric/deploy/erase"
	"github.com/ferricbm/ferric/deploy/iscsi"
)

// The conductor erases through the ramdisk's target with this type.
var _ erase.Disk = (*iscsi.Device)(nil)

// startTarget runs a tgtd for the calling container, tuned as the ramdisk
// runs it, and stops it when the container ends.
func startTarget() *tgt.Daemon {
	t, err := tgttest.Start(context.Background(), GinkgoT().TempDir(), tgt.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(t.Stop()).To(Succeed()) })
	return t.Daemon
}

var targets atomic.Int32

// overISCSI exports path as LUN 1 of a new target on daemon and returns the LUN as
// the conductor sees it: through a logged-in session of the user-space initiator.
func overISCSI(daemon *tgt.Daemon, path string) *iscsi.Device {
	ctx := context.Background()
	iqn := fmt.Sprintf("iqn.2026-12.io.ferricbm.test:erase-%d", targets.Add(1))
	Expect(daemon.Export(ctx, iqn, path)).To(Succeed())
	DeferCleanup(func() { Expect(daemon.Unexport(context.Background(), iqn)).To(Succeed()) })
	s, err := iscsi.Dial(ctx, daemon.Portal(), iqn, iscsi.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(s.Close)
	id, err := s.FirstDisk(ctx)
	Expect(err).NotTo(HaveOccurred())
	lun, err := s.OpenLUN(ctx, id)
	Expect(err).NotTo(HaveOccurred())
	return lun.Device(ctx)
}

// partition is a partition of a test disk, in bytes, and what was made in it.
type partition struct {
	start, size int64
	fs          string
}

// mkfs makes the filesystems and swap an installer would; xfs needs 300 MiB.
var mkfs = map[string][]string{
	"ext4": {"mkfs.ext4", "-q", "-F"},
	"swap": {"mkswap"},
	"vfat": {"mkfs.vfat"},
	"xfs":  {"mkfs.xfs", "-q", "-f"},
}

// installedDisk builds a 400 MiB disk image as a previous tenant's installer would
// leave it: a partition table ("gpt" by sgdisk; "dos" by sfdisk, all primary, or
// "dos-logical" with the last two in an extended partition) with ext4, swap, vfat
// and xfs partitions, each filesystem made in a file of the partition's size and
// copied into place, and a block of the tenant's data in the middle of the xfs
// partition.
func installedDisk(dir, layout string) (string, []partition, []byte) {
	path := filepath.Join(dir, layout+".img")
	Expect(os.WriteFile(path, nil, 0o600)).To(Succeed())
	Expect(os.Truncate(path, 400<<20)).To(Succeed())
	cmd := exec.Command("sfdisk", "-q", path)
	switch layout {
	case "gpt":
		cmd = exec.Command("sgdisk", "-n", "1:2048:+24M", "-t", "1:8300", "-n", "2:0:+16M", "-t", "2:8200",
			"-n", "3:0:+32M", "-t", "3:ef00", "-n", "4:0:0", path)
	case "dos":
		cmd.Stdin = strings.NewReader("label: dos\n,24M,83\n,16M,82\n,32M,ef\n,,83\n")
	case "dos-logical":
		cmd.Stdin = strings.NewReader("label: dos\n,24M,83\n,16M,82\n,,5\n,32M,ef\n,,83\n")
	}
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	out, err = exec.Command("sfdisk", "-J", path).Output()
	Expect(err).NotTo(HaveOccurred())
	type entry struct {
		Start, Size int64 // sectors
		Type        string
	}
	var table struct{ PartitionTable struct{ Partitions []entry } }
	Expect(json.Unmarshal(out, &table)).To(Succeed())
	// The extended partition only holds the logical ones.
	entries := slices.DeleteFunc(table.PartitionTable.Partitions, func(e entry) bool { return e.Type == "5" })
	Expect(entries).To(HaveLen(4))
	disk, err := os.OpenFile(path, os.O_RDWR, 0)
	Expect(err).NotTo(HaveOccurred())
	defer disk.Close()
	var parts []partition
	for i, fs := range []string{"ext4", "swap", "vfat", "xfs"} {
		p := partition{start: entries[i].Start * 512, size: entries[i].Size * 512, fs: fs}
		img := filepath.Join(dir, fs+".img")
		Expect(os.WriteFile(img, nil, 0o600)).To(Succeed())
		Expect(os.Truncate(img, p.size)).To(Succeed())
		out, err := exec.Command(mkfs[fs][0], append(mkfs[fs][1:], img)...).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		copyNonZero(disk, img, p.start)
		Expect(os.Remove(img)).To(Succeed())
		parts = append(parts, p)
	}
	data := make([]byte, 64<<10)
	_, _ = rand.NewChaCha8([32]byte{9}).Read(data)
	_, err = disk.WriteAt(data, parts[3].start+100<<20)
	Expect(err).NotTo(HaveOccurred())
	return path, parts, data
}

// copyNonZero writes the non-zero 64 KiB blocks of file src into dst at off, so the
// mostly empty filesystem images stay sparse on the disk image.
func copyNonZero(dst *os.File, src string, off int64) {
	f, err := os.Open(src)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	buf := make([]byte, 64<<10)
	for pos := int64(0); ; pos += int64(len(buf)) {
		n, err := f.ReadAt(buf, pos)
		if n > 0 && !allZero(buf[:n]) {
			_, werr := dst.WriteAt(buf[:n], off+pos)
			Expect(werr).NotTo(HaveOccurred())
		}
		if err != nil {
			return
		}
	}
}

// probe is what `blkid -p` finds at offset off of path: a filesystem or other
// signature type, or "" for nothing.
func probe(path string, off int64) string {
	out, err := exec.Command("blkid", "-p", "-o", "value", "-s", "TYPE", "-O", strconv.FormatInt(off, 10), path).Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 2 {
		return ""
	}
	Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(string(out))
}

// tableLeft is what sgdisk and sfdisk still find of a partition table on path.
func tableLeft(path string) string {
	out, err := exec.Command("sgdisk", "-p", path).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	var left []string
	if !strings.Contains(string(out), "Creating new GPT entries") {
		left = append(left, "sgdisk: "+string(out))
	}
	if _, rows, _ := strings.Cut(string(out), "Code  Name\n"); strings.TrimSpace(rows) != "" {
		left = append(left, "sgdisk partitions: "+rows)
	}
	if out, err := exec.Command("sfdisk", "-d", path).CombinedOutput(); err == nil {
		left = append(left, "sfdisk: "+string(out))
	}
	return strings.Join(left, "\n")
}

var _ = Describe("Erasing a LUN over iSCSI, as the conductor does for a ramdisk that only exports its disk", Ordered, func() {
	var daemon *tgt.Daemon
	BeforeAll(func() { daemon = startTarget() })

	DescribeTable("WipeMetadata leaves no partition table and no signature on the disk or in its partitions",
		func(label string) {
			dir := GinkgoT().TempDir()
			path, parts, data := installedDisk(dir, label)
			for _, p := range parts {
				Expect(probe(path, p.start)).To(Equal(p.fs))
			}
			Expect(tableLeft(path)).NotTo(BeEmpty())

			rec, err := erase.WipeMetadata(context.Background(), overISCSI(daemon, path), "node-disk")
			Expect(err).NotTo(HaveOccurred())
			Expect(rec.Method).To(Equal("metadata"))
			Expect(rec.SamplesChecked).To(BeNumerically(">=", 2))

			Expect(tableLeft(path)).To(BeEmpty())
			Expect(probe(path, 0)).To(BeEmpty())
			out, err := exec.Command("wipefs", "-n", path).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(out))
			Expect(strings.TrimSpace(string(out))).To(BeEmpty())
			for _, p := range parts {
				Expect(probe(path, p.start)).To(BeEmpty(), "%s partition at %d", p.fs, p.start)
			}
			// Only metadata goes: the tenant's data in the middle keeps its bytes.
			f, err := os.Open(path)
			Expect(err).NotTo(HaveOccurred())
			defer f.Close()
			got := make([]byte, len(data))
			_, err = f.ReadAt(got, parts[3].start+100<<20)
			Expect(err).NotTo(HaveOccurred())
			Expect(bytes.Equal(got, data)).To(BeTrue())
		},
		Entry("GPT made by sgdisk", "gpt"),
		Entry("MBR made by sfdisk", "dos"),
		Entry("MBR with logical partitions in an extended one", "dos-logical"),
	)

	// A LUN is a whole number of 512-byte blocks; the odd one tests the last write.
	const size = 24<<20 + 3*512

	It("Overwrite leaves only zeros after a random and a zero pass, and reports the erase", func() {
		path, _ := randomFile(GinkgoT().TempDir(), size)
		var last, total int64
		rec, err := erase.Overwrite(context.Background(), overISCSI(daemon, path), "node-disk",
			erase.Options{Iterations: 1, Zeroize: true, Progress: func(done, t int64) { last, total = done, t }})
		Expect(err).NotTo(HaveOccurred())
		expectZeroed(path, size, rec, 2)
		Expect(total).To(Equal(int64(2 * size)))
		Expect(last).To(Equal(total))
	})

	It("Overwrite replaces every byte with new random data when no zero pass is asked for", func() {
		path, before := randomFile(GinkgoT().TempDir(), size)
		_, err := erase.Overwrite(context.Background(), overISCSI(daemon, path), "node-disk", erase.Options{Iterations: 1})
		Expect(err).NotTo(HaveOccurred())
		after, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(sameBytes(before, after)).To(BeNumerically("<", size/128))
	})

	DescribeTable("Overwrite fails verification when the disk changed after the last pass",
		func(opts erase.Options, off int64) {
			path, _ := randomFile(GinkgoT().TempDir(), size)
			// The hook gets the name the erase was given; here the backing file's path,
			// so it can damage the disk behind the target's back.
			hook := &corrupt{off: off, n: 3}
			opts.Hook = hook
			_, err := erase.Overwrite(context.Background(), overISCSI(daemon, path), path, opts)
			var verr *erase.VerifyError
			Expect(errors.As(err, &verr)).To(BeTrue(), "%v", err)
			Expect(verr.Offset).To(Equal(off))
			Expect(verr.Device).To(Equal(path))
			Expect(hook.hits).To(Equal(1))
		},
		Entry("zeros, in the first MiB", erase.Options{Zeroize: true}, int64(512)),
		Entry("zeros, in the last MiB", erase.Options{Zeroize: true}, int64(size-100)),
		Entry("random, in the middle, every sample read", erase.Options{Iterations: 1, Samples: 22 << 8}, int64(7<<20+5)),
	)
})
