package bootloader_test

import (
	"os/exec"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestBootloader(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Bootloader Suite")
}

// Tools the specs need, with their Debian packages.
var tools = map[string]string{
	"losetup":      "mount",
	"partx":        "util-linux",
	"blkid":        "util-linux",
	"sfdisk":       "fdisk",
	"mkfs.ext4":    "e2fsprogs",
	"debugfs":      "e2fsprogs",
	"mkfs.vfat":    "dosfstools",
	"fsck.vfat":    "dosfstools",
	"mcopy":        "mtools",
	"mdir":         "mtools",
	"mtype":        "mtools",
	"mmd":          "mtools",
	"grub-install": "grub-pc-bin, grub-efi-amd64-bin and grub2-common",
	"udevadm":      "udev",
}

var _ = BeforeSuite(func() {
	for tool, pkg := range tools {
		_, err := exec.LookPath(tool)
		Expect(err).NotTo(HaveOccurred(), "%s is missing: install %s (scripts/setup.sh)", tool, pkg)
	}
})
