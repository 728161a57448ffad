package floppy_test

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/floppy"
)

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func writeImage(b []byte) string {
	GinkgoHelper()
	path := filepath.Join(GinkgoT().TempDir(), "floppy.img")
	Expect(os.WriteFile(path, b, 0o644)).To(Succeed())
	return path
}

func openImage(b []byte) *floppy.FS {
	GinkgoHelper()
	fs, err := floppy.Open(bytes.NewReader(b))
	Expect(err).NotTo(HaveOccurred())
	return fs
}

// fsck checks an image read-only; fsck.fat exits non-zero on any error.
func fsck(path string) {
	GinkgoHelper()
	out := run("fsck.fat", "-n", "-v", path)
	Expect(out).NotTo(ContainSubstring("differ"))
	Expect(out).NotTo(MatchRegexp(`(?i)\b(invalid|bad|broken|wrong|lost)\b`))
}

var params = map[string]string{
	"deployment_id":    "1be26c0b-03f2-4d2e-ae87-c02d7f33c123",
	"deployment_key":   "Vfq3Tb0S2J7x0Zc1hXJk4mL8sQ9rWp6u",
	"iscsi_target_iqn": "iqn.2008-10.org.openstack:1be26c0b-03f2-4d2e-ae87-c02d7f33c123",
	"ironic_api_url":   "http://192.0.2.10:6385",
	"ipa-api-url":      "http://192.0.2.10:6385",
	"BOOTIF":           "52:54:00:12:34:56",
	"root_device":      "serial=S1%2C2,size=10",
}

var _ = Describe("the parameter floppy", func() {
	It("is a 1.44 MB FAT12 image labelled ir-vfd-dev that mtools, fsck.fat and blkid accept", func() {
		img, err := floppy.Parameters(params)
		Expect(err).NotTo(HaveOccurred())
		Expect(img).To(HaveLen(1474560))
		path := writeImage(img)
		fsck(path)
		Expect(run("blkid", "-p", "-o", "export", path)).To(And(
			ContainSubstring("LABEL=ir-vfd-dev\n"), ContainSubstring("TYPE=vfat"), ContainSubstring("VERSION=FAT12")))
		dir := run("mdir", "-i", path, "::")
		Expect(dir).To(ContainSubstring("Volume in drive : is ir-vfd-dev"))
		Expect(dir).To(ContainSubstring("parameters.txt"))
		Expect(run("mtype", "-i", path, "::parameters.txt")).To(Equal(
			"BOOTIF=52:54:00:12:34:56\n" +
				"deployment_id=1be26c0b-03f2-4d2e-ae87-c02d7f33c123\n" +
				"deployment_key=Vfq3Tb0S2J7x0Zc1hXJk4mL8sQ9rWp6u\n" +
				"ipa-api-url=http://192.0.2.10:6385\n" +
				"ironic_api_url=http://192.0.2.10:6385\n" +
				"iscsi_target_iqn=iqn.2008-10.org.openstack:1be26c0b-03f2-4d2e-ae87-c02d7f33c123\n" +
				"root_device=serial=S1%2C2,size=10"))
	})

	It("is the same bytes for the same parameters and differs for others", func() {
		a, err := floppy.Parameters(params)
		Expect(err).NotTo(HaveOccurred())
		b, err := floppy.Parameters(params)
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes.Equal(a, b)).To(BeTrue())
		c, err := floppy.Parameters(map[string]string{"deployment_key": "other"})
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes.Equal(a, c)).To(BeFalse())
	})

	It("refuses values and names with whitespace without echoing the value", func() {
		for _, v := range []string{"two words", "line\nbreak", "tab\there", "trailing\r"} {
			_, err := floppy.Parameters(map[string]string{"deployment_key": v})
			Expect(err).To(MatchError(ContainSubstring("deployment_key")), "%q", v)
			Expect(err.Error()).NotTo(ContainSubstring(strings.Fields(v)[0]))
		}
		for _, k := range []string{"", "a b", "a=b", "x\n"} {
			_, err := floppy.Parameters(map[string]string{k: "v"})
			Expect(err).To(HaveOccurred(), "%q", k)
		}
	})

	It("carries extra files, in subdirectories and with long names, that mtools reads back", func() {
		big := randomBytes(300<<10 + 7)
		img, err := floppy.Parameters(params,
			floppy.File{Name: "token", Data: []byte("keystone-token")},
			floppy.File{Name: "EFI/BOOT/BOOTX64.EFI", Data: big},
			floppy.File{Name: "openstack/latest/a rather long file name.json", Data: []byte(`{"a": 1}`)},
			floppy.File{Name: "openstack/latest/a rather long file name.txt", Data: []byte("second alias")},
			floppy.File{Name: "empty", Data: nil})
		Expect(err).NotTo(HaveOccurred())
		path := writeImage(img)
		fsck(path)
		Expect(run("mtype", "-i", path, "::token")).To(Equal("keystone-token"))
		Expect(run("mtype", "-i", path, "::openstack/latest/a rather long file name.json")).To(Equal(`{"a": 1}`))
		Expect(run("mtype", "-i", path, "::openstack/latest/a rather long file name.txt")).To(Equal("second alias"))
		Expect(run("mdir", "-i", path, "::")).To(ContainSubstring("empty"))
		out := filepath.Join(GinkgoT().TempDir(), "boot.efi")
		run("mcopy", "-i", path, "::EFI/BOOT/BOOTX64.EFI", out)
		Expect(os.ReadFile(out)).To(Equal(big))

		fs := openImage(img)
		Expect(fs.ReadFile("efi/boot/bootx64.efi")).To(Equal(big))
		Expect(fs.ReadFile("openstack/latest/a rather long file name.txt")).To(Equal([]byte("second alias")))
		Expect(fs.ReadFile("empty")).To(BeEmpty())
		entries, err := fs.ReadDir("/")
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, e := range entries {
			names = append(names, e.Name)
		}
		Expect(names).To(Equal([]string{"parameters.txt", "token", "EFI", "openstack", "empty"}))
	})

	It("refuses duplicate and invalid names and content that does not fit", func() {
		_, err := floppy.Parameters(params, floppy.File{Name: "PARAMETERS.TXT"})
		Expect(err).To(MatchError(ContainSubstring("already exists")))
		// parameters.txt's 8.3 alias is PARAME~1.TXT.
		_, err = floppy.Parameters(params, floppy.File{Name: "PARAME~1.TXT"})
		Expect(err).To(MatchError(ContainSubstring("short name")))
		for _, name := range []string{"a/../b", "a//b", "what?", "dot.", "/abs"} {
			_, err = floppy.Parameters(params, floppy.File{Name: name})
			Expect(err).To(HaveOccurred(), name)
		}
		_, err = floppy.Parameters(params, floppy.File{Name: "big", Data: make([]byte, 1500000)})
		Expect(err).To(MatchError(ContainSubstring("do not fit")))
	})
})

var _ = Describe("larger FAT12 images", func() {
	It("builds an 8 MiB image with larger clusters that fsck.fat and mtools accept", func() {
		data := randomBytes(5 << 20)
		img, err := floppy.Image{Label: "EFIBOOT", Size: 8 << 20, Files: []floppy.File{
			{Name: "EFI/BOOT/BOOTX64.EFI", Data: data}, {Name: "EFI/BOOT/grub.cfg", Data: []byte("set timeout=5\n")}}}.Build()
		Expect(err).NotTo(HaveOccurred())
		Expect(img).To(HaveLen(8 << 20))
		path := writeImage(img)
		fsck(path)
		Expect(run("blkid", "-p", "-o", "export", path)).To(ContainSubstring("VERSION=FAT12"))
		Expect(run("mtype", "-i", path, "::EFI/BOOT/grub.cfg")).To(Equal("set timeout=5\n"))
		out := filepath.Join(GinkgoT().TempDir(), "boot.efi")
		run("mcopy", "-i", path, "::EFI/BOOT/BOOTX64.EFI", out)
		Expect(os.ReadFile(out)).To(Equal(data))
	})

	It("refuses sizes FAT12 cannot hold", func() {
		_, err := floppy.Image{Size: 64 << 20}.Build()
		Expect(err).To(HaveOccurred())
		_, err = floppy.Image{Size: 1000}.Build()
		Expect(err).To(HaveOccurred())
	})
})

var _ = Describe("the reader", func() {
	It("reads label, long names and subdirectories of an image mkfs.fat and mcopy made", func() {
		dir := GinkgoT().TempDir()
		path := filepath.Join(dir, "mkfs.img")
		run("mkfs.fat", "-C", "-n", "IR-VFD-DEV", path, "100")
		src := filepath.Join(dir, "parameters.txt")
		Expect(os.WriteFile(src, []byte("a=1\nb=2"), 0o644)).To(Succeed())
		run("mcopy", "-i", path, src, "::parameters.txt")
		run("mmd", "-i", path, "::sub")
		big := randomBytes(40 << 10)
		Expect(os.WriteFile(src, big, 0o644)).To(Succeed())
		run("mcopy", "-i", path, src, "::sub/Mixed Case Name.bin")

		fs, f, err := floppy.OpenFile(path)
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		Expect(fs.Label()).To(Equal("IR-VFD-DEV"))
		Expect(fs.ReadFile("parameters.txt")).To(Equal([]byte("a=1\nb=2")))
		Expect(fs.ReadFile("SUB/mixed case name.BIN")).To(Equal(big))
		entries, err := fs.ReadDir("sub")
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).To(ConsistOf(floppy.Entry{Name: "Mixed Case Name.bin", Size: int64(len(big))}))
		_, err = fs.ReadFile("missing.txt")
		Expect(err).To(MatchError(floppy.ErrNotExist))
	})

	It("reads the label of its own images", func() {
		img, err := floppy.Parameters(params)
		Expect(err).NotTo(HaveOccurred())
		Expect(openImage(img).Label()).To(Equal("ir-vfd-dev"))
	})

	It("rejects data that is not a FAT12/16 filesystem", func() {
		_, err := floppy.Open(bytes.NewReader(randomBytes(1 << 20)))
		Expect(err).To(HaveOccurred())
		path := filepath.Join(GinkgoT().TempDir(), "fat32.img")
		run("mkfs.fat", "-F", "32", "-C", path, "40000")
		_, _, err = floppy.OpenFile(path)
		Expect(err).To(MatchError(ContainSubstring("FAT32")))
	})
})
