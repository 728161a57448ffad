package bootloader_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/bootloader"
)

var _ = Describe("finding the image's GRUB", func() {
	var root string
	BeforeEach(func() { root = GinkgoT().TempDir() })
	touch := func(rel string) {
		GinkgoHelper()
		Expect(os.MkdirAll(filepath.Join(root, filepath.Dir(rel)), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(root, rel), nil, 0o755)).To(Succeed())
	}

	It("prefers grub-install and pairs it with its grub-mkconfig and /boot/grub/grub.cfg", func() {
		touch("usr/sbin/grub-install")
		touch("usr/sbin/grub2-install")
		touch("usr/bin/grub-mkconfig")
		install, mkconfig, cfg := bootloader.FindGRUB(root)
		Expect([]string{install, mkconfig, cfg}).To(Equal([]string{"/usr/sbin/grub-install", "/usr/bin/grub-mkconfig", "/boot/grub/grub.cfg"}))
	})

	It("uses grub2-install with grub2-mkconfig and /boot/grub2/grub.cfg on images that name them so", func() {
		touch("sbin/grub2-install")
		touch("usr/sbin/grub2-mkconfig")
		install, mkconfig, cfg := bootloader.FindGRUB(root)
		Expect([]string{install, mkconfig, cfg}).To(Equal([]string{"/sbin/grub2-install", "/usr/sbin/grub2-mkconfig", "/boot/grub2/grub.cfg"}))
	})

	It("installs without a config when the image has no mkconfig, and counts links that resolve only inside the image", func() {
		Expect(os.MkdirAll(filepath.Join(root, "usr", "sbin"), 0o755)).To(Succeed())
		Expect(os.Symlink("/usr/lib/grub/grub-install.real", filepath.Join(root, "usr", "sbin", "grub-install"))).To(Succeed())
		install, mkconfig, cfg := bootloader.FindGRUB(root)
		Expect([]string{install, mkconfig, cfg}).To(Equal([]string{"/usr/sbin/grub-install", "", ""}))
	})

	It("finds nothing in an image without GRUB", func() {
		touch("usr/bin/grub-mkconfig")
		install, _, _ := bootloader.FindGRUB(root)
		Expect(install).To(BeEmpty())
	})
})
