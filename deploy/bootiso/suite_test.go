package bootiso_test

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/tooltest"
)

func TestBootISO(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Boot ISO Suite")
}

// Files the builder and the tests need, and the Debian packages that hold them.
var needs = map[string]string{
	"/usr/bin/xorriso":                                "xorriso",
	"/usr/bin/isoinfo":                                "genisoimage",
	"/usr/bin/mtype":                                  "mtools",
	"/usr/lib/ISOLINUX/isolinux.bin":                  "isolinux",
	"/usr/lib/syslinux/modules/bios/ldlinux.c32":      "syslinux-common",
	"/usr/lib/grub/x86_64-efi/monolithic/grubx64.efi": "grub-efi-amd64-bin",
}

var _ = BeforeSuite(func() {
	Expect(tooltest.Install(context.Background(), needs)).To(Succeed())
})

func run(name string, args ...string) string {
	GinkgoHelper()
	out, err := exec.Command(name, args...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s %v: %s", name, args, out)
	return string(out)
}

// randomFile writes n random bytes to a new file named name.
func randomFile(dir, name string, n int) (string, []byte) {
	GinkgoHelper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	p := filepath.Join(dir, name)
	Expect(os.WriteFile(p, b, 0o644)).To(Succeed())
	return p, b
}
