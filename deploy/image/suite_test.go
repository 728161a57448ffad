package image_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/tooltest"
)

func TestImage(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Image Suite")
}

var _ = BeforeSuite(func() {
	Expect(ensureTools()).To(Succeed())
})

// ensureTools installs qemu-img, which the tests compare against.
func ensureTools() error {
	return tooltest.Install(context.Background(), map[string]string{"qemu-img": "qemu-utils"})
}

// run runs a command and fails the spec with its output if it fails.
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

// writeRawImage writes a raw image with random data, a hole, explicit zero
// bytes and a size that is not a multiple of the cluster size, and returns
// its content.
func writeRawImage(path string) []byte {
	GinkgoHelper()
	const size = 9<<20 + 12800
	content := make([]byte, size)
	copy(content[0:], randomBytes(1<<20))            // data
	copy(content[4<<20+777:], randomBytes(100<<10))  // unaligned data inside a hole
	copy(content[8<<20:], randomBytes(size-(8<<20))) // data up to the odd end
	f, err := os.Create(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	Expect(f.Truncate(size)).To(Succeed())
	// Write only the non-zero parts plus 2 MiB of explicit zeros, so the
	// file has both holes and zero-filled blocks.
	for _, r := range [][2]int{{0, 1 << 20}, {1 << 20, 3 << 20}, {4<<20 + 777, 4<<20 + 777 + 100<<10}, {8 << 20, size}} {
		_, err := f.WriteAt(content[r[0]:r[1]], int64(r[0]))
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(bytes.Count(content[1<<20:3<<20], []byte{0})).To(Equal(2 << 20))
	return content
}
