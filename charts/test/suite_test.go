package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestChart(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Helm chart")
}

// binDir holds ferric, ferric-api and ferric-conductor built from this
// checkout: the chart is checked against what they accept.
var binDir string

var _ = SynchronizedBeforeSuite(func() []byte {
	dir, err := os.MkdirTemp("", "ferric-chart-bin-")
	Expect(err).NotTo(HaveOccurred())
	build := exec.Command("go", "build", "-o", dir+"/", "./ferric", "./ferric-api", "./ferric-conductor")
	build.Dir = filepath.Join("..", "..", "cmd")
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	return []byte(dir)
}, func(dir []byte) {
	binDir = string(dir)
})

var _ = SynchronizedAfterSuite(func() {}, func() {
	Expect(os.RemoveAll(binDir)).To(Succeed())
})
