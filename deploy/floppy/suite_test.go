package floppy_test

import (
	"os/exec"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestFloppy(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Floppy Suite")
}

// Tools the tests check images with, and the Debian packages that hold them.
var tools = map[string]string{
	"mdir":     "mtools",
	"mtype":    "mtools",
	"mcopy":    "mtools",
	"mlabel":   "mtools",
	"fsck.fat": "dosfstools",
	"mkfs.fat": "dosfstools",
}

var _ = BeforeSuite(func() {
	var missing []string
	for tool, pkg := range tools {
		if _, err := exec.LookPath(tool); err != nil {
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
