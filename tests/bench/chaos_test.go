package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/harness"
)

var _ = Describe("chaos scenarios", func() {
	It("each name a label that a spec of its suite carries", func() {
		root, err := harness.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		for _, sc := range chaosScenarios {
			files, err := filepath.Glob(filepath.Join(root, "tests", "e2e", sc.suite, "*_test.go"))
			Expect(err).NotTo(HaveOccurred())
			var src strings.Builder
			for _, f := range files {
				b, err := os.ReadFile(f)
				Expect(err).NotTo(HaveOccurred())
				src.Write(b)
			}
			Expect(src.String()).To(ContainSubstring("Label("+strconv.Quote(sc.name)+")"), "scenario %s in tests/e2e/%s", sc.name, sc.suite)
		}
	})

	It("are chosen by name, in the order given, and an unknown name is refused", func() {
		all, err := chooseScenarios("")
		Expect(err).NotTo(HaveOccurred())
		Expect(all).To(HaveLen(len(chaosScenarios)))

		chosen, err := chooseScenarios("lab-kill-deploy,amqp")
		Expect(err).NotTo(HaveOccurred())
		Expect(chosen).To(Equal([]chaosScenario{{"lab-kill-deploy", "clean"}, {"amqp", "chaos"}}))

		_, err = chooseScenarios("amqp,kill-everything")
		Expect(err).To(MatchError(ContainSubstring(`unknown chaos scenario "kill-everything"`)))
	})
})
