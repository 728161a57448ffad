package erase_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/tooltest"
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
	Expect(tooltest.Install(context.Background(), tools)).To(Succeed())
})
