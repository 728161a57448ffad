package floppy_test

import (
	"context"
	"os/exec"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/tooltest"
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
	Expect(tooltest.Install(context.Background(), tools)).To(Succeed())
})

func run(name string, args ...string) string {
	GinkgoHelper()
	out, err := exec.Command(name, args...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s %v: %s", name, args, out)
	return string(out)
}
