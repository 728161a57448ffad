package tgt_test

import (
	"context"
	"net"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/agent/tgt/tgttest"
	"github.com/ferricbm/ferric/deploy/tooltest"
)

func TestTgt(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "tgt Suite")
}

var _ = BeforeSuite(func() {
	Expect(tooltest.Install(context.Background(), map[string]string{"tgtd": "tgt", "tgtadm": "tgt"})).To(Succeed())
})

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// controlPort picks a tgtd control port no tgtd on this machine uses (tgtd accepts
// up to 32767).
func controlPort() int {
	n, err := tgttest.ControlPort()
	Expect(err).NotTo(HaveOccurred())
	return n
}
