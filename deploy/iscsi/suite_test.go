package iscsi_test

import (
	"context"
	"regexp"
	"runtime"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/tooltest"
)

func TestISCSI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "iSCSI initiator Suite")
}

var _ = BeforeSuite(func() {
	Expect(ensureTools()).To(Succeed())
})

// ensureTools installs tgtd, the reference initiators and qemu-img with
// its iSCSI block driver.
func ensureTools() error {
	return tooltest.Install(context.Background(), map[string]string{"tgtd": "tgt", "tgtadm": "tgt",
		"iscsi-inq": "libiscsi-bin", "iscsi-readcapacity16": "libiscsi-bin", "qemu-img": "qemu-utils qemu-block-extra"})
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
