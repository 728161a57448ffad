package bootiso_test

import (
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
	var missing []string
	for file, pkg := range needs {
		if _, err := os.Stat(file); err != nil {
			missing = append(missing, pkg)
		}
	}
	if len(missing) > 0 {
		run("apt-get", append([]string{"-o", "DPkg::Lock::Timeout=600", "install", "-y"}, missing...)...)
	}
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
