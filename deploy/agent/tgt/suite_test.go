package tgt_test

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestTgt(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "tgt Suite")
}

var _ = BeforeSuite(func() {
	for _, bin := range []string{"tgtd", "tgtadm"} {
		if _, err := exec.LookPath(bin); err != nil {
			out, err := exec.Command("apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "tgt").CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(out))
		}
	}
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
	for range 100 {
		n := 10000 + rand.IntN(22000)
		if _, err := os.Stat(filepath.Join("/var/run/tgtd", "socket."+strconv.Itoa(n)+".lock")); errors.Is(err, os.ErrNotExist) {
			return n
		}
	}
	Fail("no free tgtd control port")
	return 0
}
