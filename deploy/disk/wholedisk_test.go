package disk_test

import (
	"context"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/disk"
	"github.com/ferricbm/ferric/deploy/image"
)

var _ = Describe("WriteWholeDiskImage", func() {
	var dir, imgPath, target string
	var configDrive []byte

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		imgPath = filepath.Join(dir, "whole.raw")
		sparseFile(imgPath, 96*mib)
		target = filepath.Join(dir, "disk")
		sparseFile(target, 256*mib)
		configDrive = randomBytes(300 << 10)
	})

	sfdiskScript := func(path, script string) {
		GinkgoHelper()
		cmd := exec.Command("sfdisk", "-q", path)
		cmd.Stdin = strings.NewReader(script)
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	}

	write := func(cd []byte) (*disk.WholeDiskResult, error) {
		// Deploy the image as qcow2, as it would come from the cache.
		q := imgPath + ".qcow2"
		run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", imgPath, q)
		img, err := image.Open(q)
		Expect(err).NotTo(HaveOccurred())
		defer img.Close()
		return disk.WriteWholeDiskImage(context.Background(), openTarget(target), img, disk.WholeDiskOptions{ConfigDrive: cd})
	}

	hexdumpID := func() string {
		GinkgoHelper()
		return run("hexdump", "-s", "440", "-n", "4", "-e", `"0x%08x"`, target)
	}

	It("adds a 64 MiB config drive partition at the end of a GPT disk and moves the backup GPT", func() {
		sfdiskScript(imgPath, "label: gpt\nstart=2048, size=65536, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4\n")
		res, err := write(configDrive)
		Expect(err).NotTo(HaveOccurred())
		Expect(run("sgdisk", "-v", target)).To(ContainSubstring("No problems found"))
		pt := sfdiskDump(target)
		Expect(pt.Partitions).To(HaveLen(2))
		cd := pt.Partitions[1]
		Expect(cd.Start+cd.Size-1).To(Equal(pt.LastLBA), "the partition ends at the last usable sector")
		Expect(cd.Start % 2048).To(BeZero())
		Expect(cd.Size).To(BeNumerically(">=", 64*2048))
		Expect(cd.Size).To(BeNumerically("<", 65*2048))
		Expect(cd.Name).To(Equal("config-2"))
		Expect(res.ConfigDrive.Number).To(Equal(2))
		Expect(res.ConfigDrive.Start).To(Equal(cd.Start * 512))
		Expect(fileSum(target, cd.Start*512, int64(len(configDrive)))).To(Equal(sha256.Sum256(configDrive)))
		Expect(res.DiskIdentifier).To(Equal(hexdumpID()))
	})

	It("adds a primary partition at the end of an msdos disk and reports the disk identifier", func() {
		sfdiskScript(imgPath, "label: dos\nlabel-id: 0xdeadbeef\nstart=2048, size=32768, type=83, bootable\nstart=34816, size=32768, type=82\n")
		res, err := write(configDrive)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.DiskIdentifier).To(Equal("0xdeadbeef"))
		Expect(res.DiskIdentifier).To(Equal(hexdumpID()))
		pt := sfdiskDump(target)
		Expect(pt.ID).To(Equal("0xdeadbeef"))
		Expect(pt.Partitions).To(HaveLen(3))
		Expect(pt.Partitions[0].Bootable).To(BeTrue())
		Expect(pt.Partitions[2].Start).To(BeEquivalentTo(256*2048 - 64*2048))
		Expect(pt.Partitions[2].Size).To(BeEquivalentTo(64 * 2048))
		Expect(fileSum(target, pt.Partitions[2].Start*512, int64(len(configDrive)))).To(Equal(sha256.Sum256(configDrive)))
	})

	It("reuses a partition labelled config-2", func() {
		sfdiskScript(imgPath, "label: dos\nstart=2048, size=32768, type=83\nstart=34816, size=4096, type=83\n")
		vfat := filepath.Join(dir, "cd.vfat")
		sparseFile(vfat, 2*mib)
		run("mkfs.vfat", "-n", "config-2", vfat)
		b, err := os.ReadFile(vfat)
		Expect(err).NotTo(HaveOccurred())
		f, err := os.OpenFile(imgPath, os.O_RDWR, 0)
		Expect(err).NotTo(HaveOccurred())
		_, err = f.WriteAt(b, 34816*512)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Close()).To(Succeed())

		res, err := write(configDrive)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.ConfigDrive.Number).To(Equal(2))
		Expect(sfdiskDump(target).Partitions).To(HaveLen(2))
		Expect(fileSum(target, 34816*512, int64(len(configDrive)))).To(Equal(sha256.Sum256(configDrive)))
	})

	It("refuses a config drive when the msdos table is full or the drive too big", func() {
		sfdiskScript(imgPath, "label: dos\nstart=2048, size=2048\nstart=4096, size=2048\nstart=6144, size=2048\nstart=8192, size=2048\n")
		_, err := write(configDrive)
		Expect(err).To(MatchError(ContainSubstring("no free slot")))
		_, err = write(make([]byte, 64*mib+1))
		Expect(err).To(MatchError(ContainSubstring("64 MiB")))
	})

	It("writes the image as it is without a config drive", func() {
		sfdiskScript(imgPath, "label: dos\nlabel-id: 0x0badcafe\nstart=2048, size=32768, type=83\n")
		res, err := write(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.ConfigDrive).To(BeNil())
		Expect(res.DiskIdentifier).To(Equal("0x0badcafe"))
		run("cmp", "-n", "100663296", imgPath, target)
	})
})
