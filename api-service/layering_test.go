package apiservice_test

import (
	"os/exec"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the API service's dependencies", func() {
	It("load no conductor or deploy code: the API learns what conductors offer from the database", func() {
		out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		for _, dep := range strings.Fields(string(out)) {
			Expect(dep).NotTo(HavePrefix("github.com/ferricbm/ferric/conductor"))
			Expect(dep).NotTo(HavePrefix("github.com/ferricbm/ferric/deploy"))
		}
		Expect(string(out)).To(ContainSubstring("github.com/ferricbm/ferric/pkg/hwcatalog"))
	})
})
