package iscsi_test

import (
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
