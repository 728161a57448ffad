package erase_test

import (
	"os"
	"os/exec"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestErase(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "erase Suite")
}

// tools maps the programs the specs run to the Debian packages holding them.
var tools = map[string]string{
	"tgtd": "tgt", "tgtadm": "tgt", "sgdisk": "gdisk", "sfdisk": "fdisk", "mkfs.ext4": "e2fsprogs",
	"mkfs.vfat": "dosfstools", "mkfs.xfs": "xfsprogs", "mkswap": "util-linux", "blkid": "util-linux",
	"wipefs": "util-linux",
}

var _ = BeforeSuite(func() {
	var missing []string
	for bin, pkg := range tools {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return
	}
	cmd := exec.Command("apt-get", append([]string{"-o", "DPkg::Lock::Timeout=600", "install", "-y"}, missing...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
})
