package bootloader_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/bootloader"
	"github.com/ferricbm/ferric/deploy/bootloader/grubroot"
)

const (
	sector = 512
	mib    = 1 << 20
	// The root partition of every disk here: 48 MiB from sector 67584
	// (1 MiB + the 32 MiB an ESP takes on the UEFI disks).
	rootStart, rootSectors = 67584, 48 * mib / sector
	espStart, espSectors   = 2048, 32 * mib / sector
)

var _ = Describe("Install", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	It("installs the image's own GRUB into the MBR of a BIOS disk, leaving nothing attached or mounted", func(ctx SpecContext) {
		root, uuid := rootFS(dir, true)
		disk := makeDisk(dir, "dos", fmt.Sprintf("start=%d, size=%d, type=83, bootable", rootStart, rootSectors))
		place(disk, root, rootStart)

		res, err := bootloader.Install(ctx, bootloader.Request{Disk: disk, RootUUID: uuid})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Target).To(Equal("i386-pc"))
		Expect(res.Root.UUID).To(Equal(uuid))

		mbr := readAt(disk, 0, 440)
		Expect(bytes.Contains(mbr, []byte("GRUB"))).To(BeTrue(), "GRUB's boot code is in the MBR")
		Expect(readAt(disk, 510, 2)).To(Equal([]byte{0x55, 0xaa}), "the partition table survives")
		Expect(fileInFS(dir, disk, rootStart, rootSectors, "/boot/grub/i386-pc/core.img")).To(BeTrue())
		expectReleased(disk)
	})

	It("installs it by the root's PARTUUID too, and takes the last partition as root without a UUID", func(ctx SpecContext) {
		root, _ := rootFS(dir, true)
		disk := makeDisk(dir, "dos", "start=2048, size=65536, type=82", fmt.Sprintf("start=%d, size=%d, type=83", rootStart, rootSectors))
		place(disk, root, rootStart)

		_, err := bootloader.Install(ctx, bootloader.Request{Disk: disk})
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes.Contains(readAt(disk, 0, 440), []byte("GRUB"))).To(BeTrue())
		expectReleased(disk)
	})

	It("fails naming the way out for an image without GRUB, leaving the disk as it was", func(ctx SpecContext) {
		root, uuid := rootFS(dir, false)
		disk := makeDisk(dir, "dos", fmt.Sprintf("start=%d, size=%d, type=83, bootable", rootStart, rootSectors))
		place(disk, root, rootStart)
		before := readAt(disk, 0, 440)

		_, err := bootloader.Install(ctx, bootloader.Request{Disk: disk, RootUUID: uuid})
		Expect(err).To(MatchError(bootloader.ErrNoGRUB))
		Expect(err.Error()).To(ContainSubstring("boot_option=netboot"))
		Expect(err.Error()).To(ContainSubstring("whole-disk image"))
		Expect(readAt(disk, 0, 440)).To(Equal(before))
		expectReleased(disk)
	})

	It("fails naming the way out when the root partition cannot be mounted", func(ctx SpecContext) {
		disk := makeDisk(dir, "dos", fmt.Sprintf("start=%d, size=%d, type=83", rootStart, rootSectors))
		place(disk, randomFile(dir, 1*mib), rootStart)

		_, err := bootloader.Install(ctx, bootloader.Request{Disk: disk})
		Expect(err).To(MatchError(And(ContainSubstring("mount the root partition"), HaveSuffix(bootloader.WayOut))))
		expectReleased(disk)
	})

	It("refuses to mount over a symbolic link the image puts where /dev goes", func(ctx SpecContext) {
		tree := filepath.Join(dir, "tree")
		Expect(os.MkdirAll(tree, 0o755)).To(Succeed())
		Expect(grubroot.Build(tree)).To(Succeed())
		host := filepath.Join(dir, "ramdisk-dir")
		Expect(os.Mkdir(host, 0o755)).To(Succeed())
		Expect(os.Remove(filepath.Join(tree, "dev"))).To(Succeed())
		Expect(os.Symlink(host, filepath.Join(tree, "dev"))).To(Succeed())
		root := filepath.Join(dir, "root.raw")
		Expect(os.WriteFile(root, nil, 0o644)).To(Succeed())
		Expect(os.Truncate(root, rootSectors*sector)).To(Succeed())
		run("mkfs.ext4", "-q", "-F", "-d", tree, root)
		disk := makeDisk(dir, "dos", fmt.Sprintf("start=%d, size=%d, type=83, bootable", rootStart, rootSectors))
		place(disk, root, rootStart)

		_, err := bootloader.Install(ctx, bootloader.Request{Disk: disk})
		Expect(err).To(MatchError(And(ContainSubstring("/dev in the image is a symbolic link"), HaveSuffix(bootloader.WayOut))))
		Expect(os.ReadDir(host)).To(BeEmpty(), "nothing was mounted on the ramdisk's directory")
		expectReleased(disk)
	})

	It("fails when the disk has no partition with the root UUID", func(ctx SpecContext) {
		root, _ := rootFS(dir, true)
		disk := makeDisk(dir, "dos", fmt.Sprintf("start=%d, size=%d, type=83", rootStart, rootSectors))
		place(disk, root, rootStart)

		_, err := bootloader.Install(ctx, bootloader.Request{Disk: disk, RootUUID: "3e1f7d2a-0000-4000-8000-00000000cafe"})
		Expect(err).To(MatchError(And(ContainSubstring("no partition with UUID 3e1f7d2a-0000-4000-8000-00000000cafe"),
			HaveSuffix(bootloader.WayOut))))
		expectReleased(disk)
	})

	// uefiDisk writes a GPT disk with a FAT ESP (volume ID 1A2B-3C4D,
	// holding the files of espFiles) and the root, and returns it with the
	// root's UUID.
	uefiDisk := func(espFiles map[string]string) (string, string) {
		GinkgoHelper()
		root, uuid := rootFS(dir, true)
		disk := makeDisk(dir, "gpt",
			fmt.Sprintf("start=%d, size=%d, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B", espStart, espSectors),
			fmt.Sprintf("start=%d, size=%d, type=0FC63DAF-8483-4772-8E79-3D69E4C477E4", rootStart, rootSectors))
		esp := filepath.Join(dir, "esp.raw")
		Expect(os.WriteFile(esp, nil, 0o644)).To(Succeed())
		Expect(os.Truncate(esp, espSectors*sector)).To(Succeed())
		run("mkfs.vfat", "-n", "efi-part", "-i", "1A2B3C4D", esp)
		dirs := map[string]bool{}
		for name := range espFiles {
			for d := filepath.Dir(name); d != "/"; d = filepath.Dir(d) {
				dirs["::"+d] = true
			}
		}
		if len(dirs) > 0 {
			// Parents sort before their children.
			run("mmd", append([]string{"-i", esp}, slices.Sorted(maps.Keys(dirs))...)...)
		}
		for name, content := range espFiles {
			src := filepath.Join(dir, "esp-file")
			Expect(os.WriteFile(src, []byte(content), 0o644)).To(Succeed())
			run("mcopy", "-o", "-i", esp, src, "::"+name)
		}
		place(disk, esp, espStart)
		place(disk, root, rootStart)
		return disk, uuid
	}

	It("installs GRUB's EFI binary at the removable-media path of the ESP for UEFI, without mounting the ESP", func(ctx SpecContext) {
		disk, uuid := uefiDisk(nil)

		res, err := bootloader.Install(ctx, bootloader.Request{Disk: disk, RootUUID: uuid, ESPUUID: "1A2B-3C4D"})
		Expect(err).NotTo(HaveOccurred())
		expectReleased(disk)
		Expect(res.Target).To(Equal("x86_64-efi"))
		Expect(res.ESP.UUID).To(Equal("1A2B-3C4D"))

		Expect(espList(disk, "/EFI/BOOT")).To(ContainElement("BOOTX64.EFI"))
		loader := espFile(disk, "/EFI/BOOT/BOOTX64.EFI")
		Expect(loader[:2]).To(Equal([]byte("MZ")), "a PE image, as UEFI firmware loads")
		Expect(loader).To(Equal(fsFile(dir, disk, rootStart, rootSectors, "/boot/grub/x86_64-efi/core.efi")),
			"the core image grub-install built in the root, which finds /boot/grub by the root's UUID")
		run("fsck.vfat", "-n", partitionFile(dir, disk, espStart, espSectors))
	})

	It("keeps what the ESP held and replaces an older GRUB at the same path", func(ctx SpecContext) {
		disk, uuid := uefiDisk(map[string]string{"/EFI/BOOT/BOOTX64.EFI": "an older loader", "/EFI/vendor/tool.efi": "kept"})

		_, err := bootloader.Install(ctx, bootloader.Request{Disk: disk, UEFI: true})
		Expect(err).NotTo(HaveOccurred())
		expectReleased(disk)
		Expect(espFile(disk, "/EFI/vendor/tool.efi")).To(Equal([]byte("kept")))
		Expect(espFile(disk, "/EFI/BOOT/BOOTX64.EFI")).To(Equal(fsFile(dir, disk, rootStart, rootSectors, "/boot/grub/x86_64-efi/core.efi")))
		Expect(uuid).NotTo(BeEmpty())
	})

	It("fails naming the way out when the partition with the ESP's UUID is not FAT, writing nothing to it", func(ctx SpecContext) {
		disk, uuid := uefiDisk(nil)
		before := readAt(disk, espStart*sector, espSectors*sector)

		_, err := bootloader.Install(ctx, bootloader.Request{Disk: disk, RootUUID: uuid, ESPUUID: uuid})
		Expect(err).To(MatchError(And(ContainSubstring("doesn't look like an EFI partition"), HaveSuffix(bootloader.WayOut))))
		expectReleased(disk)
		Expect(readAt(disk, espStart*sector, espSectors*sector)).To(Equal(before))
	})
})

// rootFS makes a 48 MiB ext4 image, holding GRUB when withGRUB, and
// returns its path and UUID.
func rootFS(dir string, withGRUB bool) (string, string) {
	GinkgoHelper()
	img := filepath.Join(dir, "root.raw")
	uuid, err := grubroot.Image(img, rootSectors*sector, withGRUB)
	Expect(err).NotTo(HaveOccurred())
	return img, uuid
}

// makeDisk writes a 128 MiB disk file with the sfdisk partition lines.
func makeDisk(dir, label string, parts ...string) string {
	GinkgoHelper()
	disk := filepath.Join(dir, "disk.img")
	Expect(os.WriteFile(disk, nil, 0o644)).To(Succeed())
	Expect(os.Truncate(disk, 128*mib)).To(Succeed())
	cmd := exec.Command("sfdisk", "-q", disk)
	cmd.Stdin = strings.NewReader("label: " + label + "\n" + strings.Join(parts, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "sfdisk: %s", out)
	return disk
}

// place copies the file into the disk at sector start.
func place(disk, file string, start int64) {
	GinkgoHelper()
	data, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	f, err := os.OpenFile(disk, os.O_WRONLY, 0)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	_, err = f.WriteAt(data, start*sector)
	Expect(err).NotTo(HaveOccurred())
}

func readAt(path string, off, n int64) []byte {
	GinkgoHelper()
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	b := make([]byte, n)
	_, err = f.ReadAt(b, off)
	Expect(err).NotTo(HaveOccurred())
	return b
}

func randomFile(dir string, size int64) string {
	GinkgoHelper()
	p := filepath.Join(dir, "random")
	run("dd", "if=/dev/urandom", "of="+p, "bs=1M", fmt.Sprintf("count=%d", size/mib), "status=none")
	return p
}

// partitionFile copies the disk's partition into a file and returns it.
func partitionFile(dir, disk string, start, sectors int64) string {
	GinkgoHelper()
	part := filepath.Join(dir, "part.raw")
	Expect(os.WriteFile(part, readAt(disk, start*sector, sectors*sector), 0o644)).To(Succeed())
	return part
}

// espList lists the names in a directory of the disk's ESP, read with
// mtools as firmware would read the FAT.
func espList(disk, path string) []string {
	GinkgoHelper()
	out := run("mdir", "-b", "-i", fmt.Sprintf("%s@@%d", disk, espStart*sector), "::"+path)
	var names []string
	for _, line := range strings.Fields(out) {
		names = append(names, filepath.Base(line))
	}
	return names
}

// espFile reads a file of the disk's ESP with mtools.
func espFile(disk, path string) []byte {
	GinkgoHelper()
	return []byte(run("mtype", "-i", fmt.Sprintf("%s@@%d", disk, espStart*sector), "::"+path))
}

// fsFile reads a file of the ext4 filesystem of the disk's partition.
func fsFile(dir, disk string, start, sectors int64, path string) []byte {
	GinkgoHelper()
	out := filepath.Join(dir, "dumped")
	run("debugfs", "-R", fmt.Sprintf("dump %s %s", path, out), partitionFile(dir, disk, start, sectors))
	b, err := os.ReadFile(out)
	Expect(err).NotTo(HaveOccurred())
	Expect(b).NotTo(BeEmpty(), "%s is in the filesystem", path)
	return b
}

// fileInFS tells whether the ext4 filesystem of the disk's partition
// holds path.
func fileInFS(dir, disk string, start, sectors int64, path string) bool {
	GinkgoHelper()
	out, _ := exec.Command("debugfs", "-R", "stat "+path, partitionFile(dir, disk, start, sectors)).CombinedOutput()
	return !strings.Contains(string(out), "File not found") && strings.Contains(string(out), "Inode:")
}

// expectReleased checks no loop device still backs the disk and nothing
// Install mounted is still mounted.
func expectReleased(disk string) {
	GinkgoHelper()
	Expect(strings.TrimSpace(run("losetup", "--associated", disk))).To(BeEmpty(), "no loop device left on the disk")
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	Expect(err).NotTo(HaveOccurred())
	Expect(string(mounts)).NotTo(ContainSubstring("ferric-root-"))
}

func run(name string, args ...string) string {
	GinkgoHelper()
	out, err := exec.CommandContext(context.Background(), name, args...).Output()
	var stderr []byte
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		stderr = ee.Stderr
	}
	Expect(err).NotTo(HaveOccurred(), "%s %v: %s", name, args, stderr)
	return string(out)
}
