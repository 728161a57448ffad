package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/agent"
	"github.com/ferricbm/ferric/deploy/floppy"
)

var _ = Describe("virtual-media parameters", func() {
	var (
		dir   string
		roots agent.VirtualMediaRoots
		image string
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		roots = agent.VirtualMediaRoots{ByLabel: filepath.Join(dir, "by-label"), SysBlock: filepath.Join(dir, "sys"), Dev: filepath.Join(dir, "dev")}
		for _, d := range []string{roots.ByLabel, roots.SysBlock, roots.Dev} {
			Expect(os.MkdirAll(d, 0o755)).To(Succeed())
		}
		img, err := floppy.Parameters(map[string]string{
			"ipa-api-url":     "http://192.0.2.10:6385",
			"deployment_key":  "from-floppy",
			"BOOTIF":          "52:54:00:12:34:56",
			"ipa-node-uuid":   "1be26c0b-03f2-4d2e-ae87-c02d7f33c123",
			"ipa-agent-token": "pre-issued-on-floppy",
		})
		Expect(err).NotTo(HaveOccurred())
		image = filepath.Join(dir, "floppy.img")
		Expect(os.WriteFile(image, img, 0o644)).To(Succeed())
	})

	find := func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		return agent.FindVirtualMediaDevice(ctx, roots)
	}

	const cmdline = "initrd=/initrd text boot_method=vmedia ipa-api-url=http://old:6385 deployment_key=from-cmdline ipa-debug=1 --\n"

	It("finds the floppy by its label, reads parameters.txt and lets it win over the command line", func() {
		Expect(os.Symlink(image, filepath.Join(roots.ByLabel, "ir-vfd-dev"))).To(Succeed())
		dev, err := find()
		Expect(err).NotTo(HaveOccurred())
		Expect(dev).To(Equal(filepath.Join(roots.ByLabel, "ir-vfd-dev")))

		merged, err := agent.VirtualMediaCmdline(cmdline, dev)
		Expect(err).NotTo(HaveOccurred())
		p := agent.ParseCmdline(merged)
		Expect(p.APIURL).To(Equal("http://192.0.2.10:6385"))
		Expect(p.DeploymentKey).To(Equal("from-floppy"))
		Expect(p.NodeUUID).To(Equal("1be26c0b-03f2-4d2e-ae87-c02d7f33c123"))
		Expect(p.BootIf).To(Equal("52:54:00:12:34:56"))
		Expect(p.AgentToken).To(Equal("pre-issued-on-floppy"), "the token the conductor pre-issued, which lookup never hands out")
		Expect(p.All).To(HaveKeyWithValue("ipa-debug", "1"))
		Expect(p.Mode()).To(Equal(agent.ModeAgent))
	})

	It("accepts the upper-case label", func() {
		Expect(os.Symlink(image, filepath.Join(roots.ByLabel, "IR-VFD-DEV"))).To(Succeed())
		Expect(find()).To(Equal(filepath.Join(roots.ByLabel, "IR-VFD-DEV")))
	})

	It("falls back to the block device whose model says virtual media", func() {
		for name, model := range map[string]string{"sda": "QEMU HARDDISK   \n", "sdb": "Virtual Media   \n"} {
			Expect(os.MkdirAll(filepath.Join(roots.SysBlock, name, "device"), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(roots.SysBlock, name, "device", "model"), []byte(model), 0o644)).To(Succeed())
		}
		Expect(os.Rename(image, filepath.Join(roots.Dev, "sdb"))).To(Succeed())
		dev, err := find()
		Expect(err).NotTo(HaveOccurred())
		Expect(dev).To(Equal(filepath.Join(roots.Dev, "sdb")))
		merged, err := agent.VirtualMediaCmdline(cmdline, dev)
		Expect(err).NotTo(HaveOccurred())
		Expect(agent.ParseCmdline(merged).DeploymentKey).To(Equal("from-floppy"))
	})

	It("waits for the floppy to appear and gives up when it does not", func() {
		// The goroutine works on copies and is waited for: the next spec's
		// BeforeEach rewrites the variables it would otherwise read.
		target, link := image, filepath.Join(roots.ByLabel, "ir-vfd-dev")
		linked := make(chan error, 1)
		go func() {
			time.Sleep(300 * time.Millisecond)
			linked <- os.Symlink(target, link)
		}()
		Expect(find()).To(Equal(link))
		Expect(<-linked).To(Succeed())

		Expect(os.Remove(filepath.Join(roots.ByLabel, "ir-vfd-dev"))).To(Succeed())
		_, err := find()
		Expect(err).To(MatchError(context.DeadlineExceeded))
	})

	It("leaves a command line without boot_method=vmedia alone, without reading any device", func() {
		line := "ipa-api-url=http://old:6385 boot_method=pxe"
		Expect(agent.VirtualMediaCmdline(line, filepath.Join(dir, "missing"))).To(Equal(line))
		Expect(agent.IsVirtualMediaBoot(line)).To(BeFalse())
		Expect(agent.IsVirtualMediaBoot(cmdline)).To(BeTrue())
	})

	It("fails on a floppy without parameters.txt and on a device that is not FAT", func() {
		img, err := floppy.Image{Label: floppy.Label, Files: []floppy.File{{Name: "token", Data: []byte("t")}}}.Build()
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(image, img, 0o644)).To(Succeed())
		_, err = agent.VirtualMediaCmdline(cmdline, image)
		Expect(err).To(MatchError(ContainSubstring("holds no parameters.txt")))

		Expect(os.WriteFile(image, make([]byte, 1<<20), 0o644)).To(Succeed())
		_, err = agent.VirtualMediaCmdline(cmdline, image)
		Expect(err).To(MatchError(ContainSubstring("not a FAT filesystem")))
	})
})
