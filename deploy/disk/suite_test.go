package disk_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/disk"
	"github.com/ferricbm/ferric/deploy/tooltest"
)

func TestDisk(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Disk Suite")
}

// Tools the tests check results with, and the Debian packages that hold
// them.
var tools = map[string]string{
	"qemu-img":  "qemu-utils",
	"mkfs.ext4": "e2fsprogs",
	"fsck.ext4": "e2fsprogs",
	"sfdisk":    "fdisk",
	"sgdisk":    "gdisk",
	"mkfs.vfat": "dosfstools",
	"fsck.vfat": "dosfstools",
	"blkid":     "util-linux",
	"cmp":       "diffutils",
}

var _ = BeforeSuite(func() {
	Expect(tooltest.Install(context.Background(), tools)).To(Succeed())
})

func run(name string, args ...string) string {
	GinkgoHelper()
	out, err := exec.Command(name, args...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s %v: %s", name, args, out)
	return string(out)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// sparseFile creates a file of size bytes that reads as zeros.
func sparseFile(path string, size int64) {
	GinkgoHelper()
	f, err := os.Create(path)
	Expect(err).NotTo(HaveOccurred())
	Expect(f.Truncate(size)).To(Succeed())
	Expect(f.Close()).To(Succeed())
}

// garbageFile creates a file of size bytes of random data: a disk with old
// contents.
func garbageFile(path string, size int64) {
	GinkgoHelper()
	f, err := os.Create(path)
	Expect(err).NotTo(HaveOccurred())
	chunk := randomBytes(1 << 20)
	for off := int64(0); off < size; off += int64(len(chunk)) {
		_, err := f.WriteAt(chunk[:min(int64(len(chunk)), size-off)], off)
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(f.Close()).To(Succeed())
}

func openTarget(path string) *disk.File {
	GinkgoHelper()
	t, err := disk.OpenFile(path)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(t.Close)
	return t
}

// writeTestImage writes a raw image mixing random data, holes and explicit
// zeros, of size bytes.
func writeTestImage(path string, size int64) {
	GinkgoHelper()
	f, err := os.Create(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	Expect(f.Truncate(size)).To(Succeed())
	for off := int64(0); off < size; off += 4 << 20 {
		// In each 4 MiB: 1 MiB of data, 1 MiB of written zeros, a 100 KiB
		// unaligned data run, the rest a hole.
		write := func(at int64, b []byte) {
			if at < size {
				_, err := f.WriteAt(b[:min(int64(len(b)), size-at)], at)
				Expect(err).NotTo(HaveOccurred())
			}
		}
		write(off, randomBytes(1<<20))
		write(off+1<<20, make([]byte, 1<<20))
		write(off+2<<20+4097, randomBytes(100<<10))
	}
}

type sfdiskPart struct {
	Node     string `json:"node"`
	Start    int64  `json:"start"`
	Size     int64  `json:"size"`
	Type     string `json:"type"`
	UUID     string `json:"uuid"`
	Name     string `json:"name"`
	Bootable bool   `json:"bootable"`
}

type sfdiskTable struct {
	Label      string       `json:"label"`
	ID         string       `json:"id"`
	FirstLBA   int64        `json:"firstlba"`
	LastLBA    int64        `json:"lastlba"`
	Partitions []sfdiskPart `json:"partitions"`
}

// sfdiskDump reads a disk's partition table with sfdisk.
func sfdiskDump(path string) sfdiskTable {
	GinkgoHelper()
	var out struct {
		PT sfdiskTable `json:"partitiontable"`
	}
	Expect(json.Unmarshal([]byte(run("sfdisk", "--json", path)), &out)).To(Succeed())
	return out.PT
}

// blkid probes the filesystem at [off, off+size) of path.
func blkid(path string, off, size int64) map[string]string {
	GinkgoHelper()
	out, _ := exec.Command("blkid", "-p", "-o", "export", "-O", fmt.Sprint(off), "-S", fmt.Sprint(size), path).CombinedOutput()
	tags := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			tags[k] = v
		}
	}
	return tags
}

// extract copies [off, off+size) of path into a new file.
func extract(path string, off, size int64) string {
	GinkgoHelper()
	src, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer src.Close()
	dst := path + fmt.Sprintf(".%d", off)
	b := make([]byte, size)
	_, err = src.ReadAt(b, off)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(dst, b, 0o644)).To(Succeed())
	return dst
}
