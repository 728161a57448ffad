package single_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The embedded database", func() {
	It("lives in a directory ferric serve created for its owner only, in a file only its owner reads", func() {
		info, err := os.Stat(sqliteDir)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o700)))
		info, err = os.Stat(filepath.Join(sqliteDir, "ferric.sqlite"))
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
	})
})
