package deployiso_test

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/bootiso"
	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab/deployiso"
)

var _ = Describe("the cached deploy ISO", func() {
	var root, sources string

	// root is a repository of its own holding a copy of deploy/bootiso's
	// sources, so a spec can change them.
	BeforeEach(func() {
		repo, err := harness.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		root = GinkgoT().TempDir()
		sources = filepath.Join(root, "deploy", "bootiso")
		Expect(os.MkdirAll(sources, 0o755)).To(Succeed())
		files, err := filepath.Glob(filepath.Join(repo, "deploy", "bootiso", "*.go"))
		Expect(err).NotTo(HaveOccurred())
		for _, f := range files {
			data, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			Expect(os.WriteFile(filepath.Join(sources, filepath.Base(f)), data, 0o644)).To(Succeed())
		}
	})

	cmdline := func(path string) string {
		GinkgoHelper()
		f, err := os.Open(path)
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		cfg, err := bootiso.ReadBootConfig(f)
		Expect(err).NotTo(HaveOccurred())
		return cfg.BIOS + " | " + cfg.UEFI
	}

	It("is built once, reused, and rebuilt when deploy/bootiso changes", func(ctx SpecContext) {
		first, hit, err := deployiso.Cached(ctx, root)
		Expect(err).NotTo(HaveOccurred())
		Expect(hit).To(BeFalse())
		Expect(filepath.Dir(first)).To(Equal(filepath.Join(root, deployiso.CacheDir)))
		Expect(strings.Count(cmdline(first), bootiso.BootMethodParam)).To(Equal(2), "BIOS and UEFI entries boot the ramdisk from virtual media")
		built, err := os.Stat(first)
		Expect(err).NotTo(HaveOccurred())

		again, hit, err := deployiso.Cached(ctx, root)
		Expect(err).NotTo(HaveOccurred())
		Expect(hit).To(BeTrue())
		Expect(again).To(Equal(first))
		kept, err := os.Stat(again)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.SameFile(built, kept)).To(BeTrue(), "the cached file is not rewritten")

		By("a change of the ISO builder's code")
		f, err := os.OpenFile(filepath.Join(sources, "build.go"), os.O_APPEND|os.O_WRONLY, 0)
		Expect(err).NotTo(HaveOccurred())
		_, err = f.WriteString("\n// changed\n")
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Close()).To(Succeed())
		rebuilt, hit, err := deployiso.Cached(ctx, root)
		Expect(err).NotTo(HaveOccurred())
		Expect(hit).To(BeFalse())
		Expect(rebuilt).NotTo(Equal(first))
		Expect(first).NotTo(BeAnExistingFile(), "the out-of-date ISO is removed")
		left, err := os.ReadDir(filepath.Join(root, deployiso.CacheDir))
		Expect(err).NotTo(HaveOccurred())
		Expect(left).To(HaveLen(1), "no temporary files stay")
	})

	It("is copied for a server to publish, built first when missing", func(ctx SpecContext) {
		out := filepath.Join(GinkgoT().TempDir(), "deploy.iso")
		Expect(deployiso.CopyTo(ctx, root, out)).To(Succeed())
		cached, hit, err := deployiso.Cached(ctx, root)
		Expect(err).NotTo(HaveOccurred())
		Expect(hit).To(BeTrue())
		want, err := os.ReadFile(cached)
		Expect(err).NotTo(HaveOccurred())
		got, err := os.ReadFile(out)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(want))
	})

	It("refuses a root without deploy/bootiso", func(ctx SpecContext) {
		_, _, err := deployiso.Cached(ctx, GinkgoT().TempDir())
		Expect(err).To(MatchError(ContainSubstring("no Go sources in")))
	})
})
