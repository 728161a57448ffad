package iscsi_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestISCSI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "iSCSI initiator Suite")
}

var _ = BeforeSuite(func() {
	Expect(ensureTools()).To(Succeed())
})

// ensureTools installs the Debian packages holding tgtd and the reference initiators
// when one of them is missing (a fresh machine).
func ensureTools() error {
	missing := false
	for _, bin := range []string{"tgtd", "tgtadm", "iscsi-inq", "iscsi-readcapacity16", "qemu-img"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	for _, args := range [][]string{
		{"-o", "DPkg::Lock::Timeout=600", "update"},
		{"-o", "DPkg::Lock::Timeout=600", "install", "-y", "tgt", "libiscsi-bin", "qemu-utils", "qemu-block-extra"},
	} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %v: %w\n%s", args, err, out)
		}
	}
	return nil
}

var packageFrame = regexp.MustCompile(`ferric/deploy/iscsi\.`)

// packageGoroutines counts goroutines running code of package iscsi (test code lives
// in iscsi_test and does not match).
func packageGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range regexp.MustCompile(`\n\n`).Split(string(buf), -1) {
		if packageFrame.MatchString(g) {
			count++
		}
	}
	return count
}
