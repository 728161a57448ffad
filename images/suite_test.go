package images_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestImages(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "images")
}

// binDir holds the static binaries, built as `make images` builds them.
var binDir string

var _ = SynchronizedBeforeSuite(func() []byte {
	dir, err := os.MkdirTemp("", "ferric-images-bin-")
	Expect(err).NotTo(HaveOccurred())
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-buildid=", "-o", dir+"/", "./ferric", "./ferric-api", "./ferric-conductor")
	build.Dir = filepath.Join("..", "cmd")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	return []byte(dir)
}, func(dir []byte) {
	binDir = string(dir)
})

var _ = SynchronizedAfterSuite(func() {}, func() {
	Expect(os.RemoveAll(binDir)).To(Succeed())
})
