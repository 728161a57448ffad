package disk_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/disk"
	"github.com/ferricbm/ferric/deploy/image"
)

const mib = 1 << 20

func gzipBase64(b []byte) string {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// fourKn is a disk with 4 KiB logical blocks.
type fourKn struct{ disk.Target }

func (fourKn) BlockSize() int { return 4096 }

func fileSum(path string, off, size int64) [32]byte {
	GinkgoHelper()
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	b := make([]byte, size)
	_, err = f.ReadAt(b, off)
	Expect(err).NotTo(HaveOccurred())
	return sha256.Sum256(b)
}

var _ = Describe("WritePartitionImage", func() {
	const rootUUID = "3c1b2a4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
	var dir, rootQcow string
	var configDrive []byte

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		// A root filesystem image, as a partition image is: ext4 in qcow2.
		rootRaw := filepath.Join(dir, "root.raw")
		sparseFile(rootRaw, 48*mib)
		run("mkfs.ext4", "-q", "-F", "-L", "root", "-U", rootUUID, rootRaw)
		rootQcow = filepath.Join(dir, "root.qcow2")
		run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", rootRaw, rootQcow)
		configDrive = randomBytes(300<<10 + 5)
	})

	openImage := func(path string) image.Image {
		GinkgoHelper()
		img, err := image.Open(path)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(img.Close)
		return img
	}

	deploy := func(target string, o disk.PartitionOptions) *disk.PartitionResult {
		GinkgoHelper()
		o.TempDir = dir
		res, err := disk.WritePartitionImage(context.Background(), openTarget(target), openImage(rootQcow), o)
		Expect(err).NotTo(HaveOccurred())
		return res
	}

	It("lays out bios/local/msdos like Ironic: ephemeral, swap, config drive, bootable root last", func() {
		target := filepath.Join(dir, "disk")
		garbageFile(target, 320*mib) // an old disk
		decoded, err := disk.DecodeConfigDrive(context.Background(), gzipBase64(configDrive), nil)
		Expect(err).NotTo(HaveOccurred())
		res := deploy(target, disk.PartitionOptions{
			RootMB: 64, SwapMB: 32, EphemeralMB: 100, BootOption: "local", BootMode: "bios",
			ConfigDrive: decoded,
		})

		pt := sfdiskDump(target)
		Expect(pt.Label).To(Equal("dos"))
		Expect(res.DiskLabel).To(Equal("msdos"))
		Expect(pt.Partitions).To(HaveLen(4))
		want := []struct {
			start, size int64
			typ         string
			boot        bool
		}{
			{2048, 100 * 2048, "83", false}, // ephemeral
			{101 * 2048, 32 * 2048, "82", false},
			{133 * 2048, 1 * 2048, "83", false}, // config drive, 300 KiB rounded up
			{134 * 2048, 64 * 2048, "83", true}, // root
		}
		for i, w := range want {
			p := pt.Partitions[i]
			Expect([]any{p.Start, p.Size, p.Type, p.Bootable}).To(Equal([]any{w.start, w.size, w.typ, w.boot}), "partition %d", i+1)
		}
		Expect(res.Partitions).To(HaveKey("ephemeral"))
		Expect(res.Partitions["root"].Number).To(Equal(4))
		Expect(res.Partitions["swap"].Number).To(Equal(2))
		Expect(res.Partitions["configdrive"].Number).To(Equal(3))
		Expect(res.EFISystemPartitionUUID).To(BeEmpty())

		root := res.Partitions["root"]
		Expect(res.RootUUID).To(Equal(rootUUID))
		tags := blkid(target, root.Start, root.Size)
		Expect(tags).To(HaveKeyWithValue("TYPE", "ext4"))
		Expect(tags).To(HaveKeyWithValue("UUID", rootUUID))
		run("fsck.ext4", "-n", "-f", extract(target, root.Start, root.Size))

		sw := res.Partitions["swap"]
		tags = blkid(target, sw.Start, sw.Size)
		Expect(tags).To(HaveKeyWithValue("TYPE", "swap"))
		Expect(tags).To(HaveKeyWithValue("LABEL", "swap1"))
		Expect(tags).To(HaveKey("UUID"))

		eph := res.Partitions["ephemeral"]
		tags = blkid(target, eph.Start, eph.Size)
		Expect(tags).To(HaveKeyWithValue("TYPE", "ext4"))
		Expect(tags).To(HaveKeyWithValue("LABEL", "ephemeral0"))
		run("fsck.ext4", "-n", "-f", extract(target, eph.Start, eph.Size))

		cd := res.Partitions["configdrive"]
		Expect(fileSum(target, cd.Start, int64(len(configDrive)))).To(Equal(sha256.Sum256(configDrive)))

		// The first 33 and last 33 sectors hold no old data.
		Expect(fileSum(target, 512, 32*512)).To(Equal(sha256.Sum256(make([]byte, 32*512))))
		Expect(fileSum(target, 320*mib-33*512, 33*512)).To(Equal(sha256.Sum256(make([]byte, 33*512))))
	})

	It("lays out uefi/local on GPT with an ESP that sgdisk and blkid accept", func() {
		target := filepath.Join(dir, "disk")
		sparseFile(target, 320*mib)
		res := deploy(target, disk.PartitionOptions{
			RootMB: 64, SwapMB: 8, BootOption: "local", BootMode: "uefi",
			Write: disk.Options{AssumeZeroed: true},
		})
		Expect(res.DiskLabel).To(Equal("gpt"))
		Expect(run("sgdisk", "-v", target)).To(ContainSubstring("No problems found"))
		pt := sfdiskDump(target)
		Expect(pt.Label).To(Equal("gpt"))
		Expect(pt.Partitions).To(HaveLen(3))
		Expect(pt.Partitions[0].Start).To(BeEquivalentTo(2048))
		Expect(pt.Partitions[0].Size).To(BeEquivalentTo(200 * 2048))
		Expect(pt.Partitions[0].Type).To(Equal("C12A7328-F81F-11D2-BA4B-00A0C93EC93B"))
		Expect(pt.Partitions[1].Type).To(Equal("0657FD6D-A4AB-43C4-84E5-0933C84B4F4F"))
		Expect(pt.Partitions[2].Type).To(Equal("0FC63DAF-8483-4772-8E79-3D69D8477DE4"))
		Expect(pt.Partitions[2].Start).To(BeEquivalentTo(209 * 2048))
		Expect(pt.Partitions[2].Name).To(Equal("root"))
		for i, key := range []string{"efi system partition", "swap", "root"} {
			Expect(strings.ToLower(pt.Partitions[i].UUID)).To(Equal(res.Partitions[key].GUID))
		}

		esp := res.Partitions["efi system partition"]
		tags := blkid(target, esp.Start, esp.Size)
		Expect(tags).To(HaveKeyWithValue("TYPE", "vfat"))
		Expect(tags).To(HaveKeyWithValue("LABEL", "efi-part"))
		Expect(tags).To(HaveKeyWithValue("UUID", res.EFISystemPartitionUUID))
		run("fsck.vfat", "-n", extract(target, esp.Start, esp.Size))
		Expect(res.RootUUID).To(Equal(rootUUID))
	})

	It("adds the BIOS boot partition for bios/local on GPT and flags no root boot", func() {
		target := filepath.Join(dir, "disk")
		sparseFile(target, 128*mib)
		res := deploy(target, disk.PartitionOptions{RootMB: 64, BootOption: "local", BootMode: "bios", DiskLabel: "gpt"})
		pt := sfdiskDump(target)
		Expect(pt.Partitions).To(HaveLen(2))
		Expect(pt.Partitions[0].Type).To(Equal("21686148-6449-6E6F-744E-656564454649"))
		Expect(pt.Partitions[0].Size).To(BeEquivalentTo(2048))
		Expect(pt.Partitions[1].Start).To(BeEquivalentTo(2 * 2048))
		Expect(res.Partitions).To(HaveKey("bios boot partition"))
		Expect(run("sgdisk", "-v", target)).To(ContainSubstring("No problems found"))
	})

	It("marks the ESP on msdos and adds PReP for ppc64", func() {
		target := filepath.Join(dir, "disk")
		sparseFile(target, 320*mib)
		deploy(target, disk.PartitionOptions{RootMB: 64, BootOption: "local", BootMode: "uefi", DiskLabel: "msdos"})
		pt := sfdiskDump(target)
		Expect(pt.Partitions).To(HaveLen(2))
		Expect(pt.Partitions[0].Type).To(Equal("ef"))
		Expect(pt.Partitions[0].Bootable).To(BeTrue())
		Expect(pt.Partitions[1].Bootable).To(BeFalse())

		res := deploy(target, disk.PartitionOptions{RootMB: 64, CPUArch: "ppc64le", DiskLabel: "gpt"})
		pt = sfdiskDump(target)
		Expect(pt.Partitions).To(HaveLen(2))
		Expect(pt.Partitions[0].Type).To(Equal("9E1A2D38-C612-4316-AA26-8B49521E5A8B"))
		Expect(pt.Partitions[0].Size).To(BeEquivalentTo(8 * 2048))
		Expect(res.Partitions["PReP Boot partition"].Number).To(Equal(1))
	})

	It("reads the root UUID of an XFS root filesystem", func() {
		const xfsUUID = "6f0e5d4c-3b2a-4918-8776-655443322110"
		rootRaw := filepath.Join(dir, "xfs.raw")
		sparseFile(rootRaw, 300*mib)
		run("mkfs.xfs", "-q", "-m", "uuid="+xfsUUID, rootRaw)
		rootQcow = filepath.Join(dir, "xfs.qcow2")
		run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", rootRaw, rootQcow)
		target := filepath.Join(dir, "disk")
		sparseFile(target, 302*mib)
		res := deploy(target, disk.PartitionOptions{RootMB: 300, Write: disk.Options{AssumeZeroed: true}})
		Expect(res.RootUUID).To(Equal(xfsUUID))
		root := res.Partitions["root"]
		Expect(blkid(target, root.Start, root.Size)).To(HaveKeyWithValue("UUID", xfsUUID))
	})

	It("falls back to the partition UUID when the root holds no known filesystem", func() {
		rootRaw := filepath.Join(dir, "noise.raw")
		Expect(os.WriteFile(rootRaw, randomBytes(3*mib), 0o644)).To(Succeed())
		rootQcow = rootRaw
		for _, label := range []string{"msdos", "gpt"} {
			target := filepath.Join(dir, "disk-"+label)
			sparseFile(target, 64*mib)
			res := deploy(target, disk.PartitionOptions{RootMB: 16, DiskLabel: label})
			pt := sfdiskDump(target)
			if label == "gpt" {
				Expect(res.RootUUID).To(Equal(strings.ToLower(pt.Partitions[0].UUID)))
			} else {
				// blkid's PARTUUID on an msdos disk: <disk id>-<number>.
				Expect(res.RootUUID).To(Equal(strings.TrimPrefix(pt.ID, "0x") + "-01"))
			}
		}
	})

	It("keeps the ephemeral partition on rebuild with preserve_ephemeral", func() {
		target := filepath.Join(dir, "disk")
		sparseFile(target, 256*mib)
		opts := disk.PartitionOptions{RootMB: 64, SwapMB: 16, EphemeralMB: 64, BootMode: "bios"}
		first := deploy(target, opts)
		eph := first.Partitions["ephemeral"]
		// Data the instance left on its ephemeral disk.
		t := openTarget(target)
		_, err := t.WriteAt([]byte("instance data"), eph.Start+40*mib)
		Expect(err).NotTo(HaveOccurred())
		ephBefore := fileSum(target, eph.Start, eph.Size)
		tableBefore := sfdiskDump(target)

		// A new root image.
		newRoot := filepath.Join(dir, "root2.raw")
		sparseFile(newRoot, 32*mib)
		run("mkfs.ext4", "-q", "-F", "-U", "11111111-2222-4333-8444-555555555555", newRoot)
		rootQcow = newRoot
		opts.PreserveEphemeral = true
		second := deploy(target, opts)
		Expect(second.RootUUID).To(Equal("11111111-2222-4333-8444-555555555555"))
		Expect(fileSum(target, eph.Start, eph.Size)).To(Equal(ephBefore))
		Expect(sfdiskDump(target)).To(Equal(tableBefore))
		Expect(second.Partitions["ephemeral"]).To(Equal(eph))

		// A different layout cannot preserve anything.
		opts.SwapMB = 32
		_, err = disk.WritePartitionImage(context.Background(), openTarget(target), openImage(rootQcow), opts)
		Expect(err).To(MatchError(ContainSubstring("preserve_ephemeral")))
	})

	It("refuses layouts that cannot work", func() {
		target := filepath.Join(dir, "disk")
		sparseFile(target, 64*mib)
		t := openTarget(target)
		_, err := disk.WritePartitionImage(context.Background(), t, openImage(rootQcow), disk.PartitionOptions{RootMB: 16})
		Expect(err).To(MatchError("Root partition is too small for requested image. Image virtual size: 48 MB, Root size: 16 MB"))
		_, err = disk.WritePartitionImage(context.Background(), t, openImage(rootQcow), disk.PartitionOptions{RootMB: 100})
		Expect(err).To(MatchError(ContainSubstring("too small for the 101 MiB of partitions")))
		_, err = disk.WritePartitionImage(context.Background(), t, openImage(rootQcow), disk.PartitionOptions{
			RootMB: 48, SwapMB: 1, EphemeralMB: 1, BootMode: "uefi", BootOption: "local", DiskLabel: "msdos", ConfigDrive: []byte("x"),
		})
		Expect(err).To(MatchError(ContainSubstring("msdos partition table holds 4")))
		_, err = disk.WritePartitionImage(context.Background(), fourKn{t}, openImage(rootQcow), disk.PartitionOptions{RootMB: 48})
		Expect(err).To(MatchError(ContainSubstring("4096-byte blocks")))
	})
})

var _ = Describe("DecodeConfigDrive", func() {
	It("decodes gzip+base64, plain base64 and URLs, and rejects garbage", func() {
		iso := randomBytes(70 << 10)
		got, err := disk.DecodeConfigDrive(context.Background(), gzipBase64(iso), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(iso))

		got, err = disk.DecodeConfigDrive(context.Background(), base64.StdEncoding.EncodeToString(iso), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(iso))

		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/cd" {
				http.NotFound(w, r)
				return
			}
			fmt.Fprint(w, gzipBase64(iso))
		}))
		defer srv.Close()
		got, err = disk.DecodeConfigDrive(context.Background(), srv.URL+"/cd?temp_url_sig=s3cret", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(iso))
		_, err = disk.DecodeConfigDrive(context.Background(), srv.URL+"/missing?temp_url_sig=s3cret", nil)
		Expect(err).To(MatchError(ContainSubstring("404")))
		Expect(err.Error()).NotTo(ContainSubstring("s3cret"))

		_, err = disk.DecodeConfigDrive(context.Background(), "not base64!", nil)
		Expect(err).To(MatchError(ContainSubstring("not base64")))
	})
})
