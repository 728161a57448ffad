package steps

import (
	"bytes"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// DiskImage is a whole-disk image of random bytes, served to the lab.
type DiskImage struct {
	// Raw holds the random bytes the image was made from.
	Raw string
	// QCOW2 is the served image, under the work directory's served/.
	QCOW2 string
	// CheckRaw is the qcow2 converted back to raw: the bytes a deployed
	// disk must begin with.
	CheckRaw string
	// MD5 is the image_checksum of QCOW2.
	MD5 string
}

// NewDiskImage writes size random bytes to dir/name.raw and converts them
// to the served image dir/served/name.qcow2.
func NewDiskImage(dir, name string, size int64) DiskImage {
	GinkgoHelper()
	img := DiskImage{
		Raw:      filepath.Join(dir, name+".raw"),
		QCOW2:    filepath.Join(dir, "served", name+".qcow2"),
		CheckRaw: filepath.Join(dir, name+".check.raw"),
	}
	RandomFile(img.Raw, size)
	Run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", img.Raw, img.QCOW2)
	Run("qemu-img", "convert", "-O", "raw", img.QCOW2, img.CheckRaw)
	img.MD5 = MD5File(img.QCOW2)
	return img
}

// RandomFile creates path holding size random bytes, so that no two images
// of a suite are alike and a disk's content says which one was written.
func RandomFile(path string, size int64) {
	GinkgoHelper()
	f, err := os.Create(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	_, err = io.CopyN(f, rand.Reader, size)
	Expect(err).NotTo(HaveOccurred())
}

// MD5File is the hex MD5 of path's content, as image_checksum takes it.
func MD5File(path string) string {
	GinkgoHelper()
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	h := md5.New()
	_, err = io.Copy(h, f)
	Expect(err).NotTo(HaveOccurred())
	return hex.EncodeToString(h.Sum(nil))
}

// Run runs a command the spec depends on and fails the spec, with the
// command's stderr, if it fails.
func Run(name string, args ...string) {
	GinkgoHelper()
	Output(name, args...)
}

// Output runs a command like Run and returns its standard output.
func Output(name string, args ...string) string {
	GinkgoHelper()
	out, err := exec.Command(name, args...).Output()
	var stderr []byte
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		stderr = ee.Stderr
	}
	Expect(err).NotTo(HaveOccurred(), "%s %s: %s", name, strings.Join(args, " "), stderr)
	return string(out)
}

// DiskStartsWith tells whether the disk file begins with want's bytes.
func DiskStartsWith(disk, want string) bool {
	GinkgoHelper()
	return DiskHolds(disk, 0, want)
}

// DiskHolds tells whether the disk file holds want's bytes at offset.
func DiskHolds(disk string, offset int64, want string) bool {
	GinkgoHelper()
	w, err := os.ReadFile(want)
	Expect(err).NotTo(HaveOccurred())
	f, err := os.Open(disk)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	got := make([]byte, len(w))
	_, err = f.ReadAt(got, offset)
	Expect(err).NotTo(HaveOccurred())
	return bytes.Equal(got, w)
}

// Zeroed tells whether every byte of the disk file is zero, as an erase
// leaves it.
func Zeroed(disk string) bool {
	GinkgoHelper()
	data, err := os.ReadFile(disk)
	Expect(err).NotTo(HaveOccurred())
	return bytes.Count(data, []byte{0}) == len(data)
}
