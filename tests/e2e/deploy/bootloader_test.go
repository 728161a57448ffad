package deploy_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/bootloader/grubroot"
	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/lab"
)

// A partition image deployed with the default boot_option, local, boots
// from its disk only once its own GRUB is installed there: the node either
// ends active with GRUB's boot code in the MBR, or in deploy failed with
// a last_error naming the way out, never active with a disk that cannot
// boot.
var _ = Describe("Deploying a partition image that boots from its disk", Ordered, func() {
	var withGRUB, withoutGRUB string

	BeforeAll(func() {
		withGRUB = filepath.Join(workDir, "served", "grub-root.raw")
		_, err := grubroot.Image(withGRUB, 48<<20, true)
		Expect(err).NotTo(HaveOccurred())
		withoutGRUB = filepath.Join(workDir, "served", "bare-root.raw")
		_, err = grubroot.Image(withoutGRUB, 48<<20, false)
		Expect(err).NotTo(HaveOccurred())
	})

	// deployLocalIn deploys the image onto the node, with a fresh disk, in
	// the ramdisk mode and instance boot_mode ("" for the default, bios)
	// given, and returns the node's UUID.
	deployLocalIn := func(ctx SpecContext, node *lab.Node, mode, vendor, img, bootMode string) string {
		GinkgoHelper()
		node.SetMode(mode)
		DeferCleanup(node.SetMode, lab.ModeAuto)
		Expect(os.Truncate(node.Disk, 0)).To(Succeed())
		Expect(os.Truncate(node.Disk, 3<<30)).To(Succeed())
		uuid := enrol(ctx, node, vendor)
		info := map[string]any{"image_source": imageURL + "/" + filepath.Base(img), "image_checksum": steps.MD5File(img),
			"kernel": "file://" + deployKernel, "ramdisk": "file://" + deployRamdisk, "root_gb": 1}
		if bootMode != "" {
			info["capabilities"] = map[string]any{"boot_mode": bootMode}
		}
		steps.SetInstanceInfo(ctx, client, uuid, info)
		steps.Provision(ctx, client, uuid, nodes.TargetActive)
		return uuid
	}

	// deployLocal is deployLocalIn with the default boot mode.
	deployLocal := func(ctx SpecContext, node *lab.Node, mode, vendor, img string) string {
		GinkgoHelper()
		return deployLocalIn(ctx, node, mode, vendor, img, "")
	}

	expectGRUBInMBR := func(node *lab.Node) {
		GinkgoHelper()
		mbr := make([]byte, 512)
		f, err := os.Open(node.Disk)
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		_, err = f.ReadAt(mbr, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes.Contains(mbr[:440], []byte("GRUB"))).To(BeTrue(), "GRUB's boot code is in the MBR")
		Expect(mbr[510:]).To(Equal([]byte{0x55, 0xaa}))
		parts := partitions(node.Disk)
		Expect(parts).To(HaveLen(1))
		Expect(probe(node.Disk, parts[0])).To(HaveKeyWithValue("TYPE", "ext4"))
	}

	It("installs the image's GRUB through the agent (image.install_bootloader)", func(ctx SpecContext) {
		node := theLab.Nodes[2]
		uuid := deployLocal(ctx, node, lab.ModeAuto, "", withGRUB)
		steps.EventuallyActive(ctx, client, uuid, deployTimeout)
		expectGRUBInMBR(node)
		log, err := os.ReadFile(node.AgentLog())
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).To(ContainSubstring("Boot loader installed"))
		undeploy(ctx, node, uuid)
	}, SpecTimeout(deployTimeout+2*time.Minute))

	It("installs the image's GRUB through the callback-only ramdisk (pass_bootloader_install_info)", func(ctx SpecContext) {
		node := theLab.Nodes[3]
		uuid := deployLocal(ctx, node, lab.ModeCallback, "iscsi", withGRUB)
		n := steps.EventuallyActive(ctx, client, uuid, deployTimeout)
		Expect(n.DriverInternalInfo).NotTo(HaveKey("agent_url"), "no heartbeat: the ramdisk only called back")
		expectGRUBInMBR(node)
		steps.EventuallyBooted(node, lab.BootDisk)
		undeploy(ctx, node, uuid)
	}, SpecTimeout(deployTimeout+2*time.Minute))

	// expectGRUBOnESP checks the disk is GPT with the ESP first and root
	// last, and GRUB's EFI binary at the ESP's removable-media path, read
	// with mtools as firmware reads the FAT.
	expectGRUBOnESP := func(node *lab.Node) {
		GinkgoHelper()
		parts := partitions(node.Disk)
		Expect(len(parts)).To(BeNumerically(">=", 2))
		esp := probe(node.Disk, parts[0])
		Expect(esp).To(HaveKeyWithValue("TYPE", "vfat"))
		Expect(esp).To(HaveKeyWithValue("LABEL", "efi-part"))
		Expect(probe(node.Disk, parts[len(parts)-1])).To(HaveKeyWithValue("TYPE", "ext4"))
		image := fmt.Sprintf("%s@@%d", node.Disk, parts[0].Start*512)
		Expect(steps.Output("mdir", "-b", "-i", image, "::/EFI/BOOT")).To(ContainSubstring("BOOTX64.EFI"))
		Expect(steps.Output("mtype", "-i", image, "::/EFI/BOOT/BOOTX64.EFI")).To(HavePrefix("MZ"), "a PE image, as UEFI firmware loads")
	}

	for _, r := range []struct{ via, mode, vendor string }{
		{"the agent (image.install_bootloader)", lab.ModeAuto, ""},
		{"the callback-only ramdisk (pass_bootloader_install_info)", lab.ModeCallback, "iscsi"},
	} {
		It("installs the image's GRUB on the ESP for boot_mode=uefi through "+r.via, func(ctx SpecContext) {
			node := theLab.Nodes[2]
			if r.mode == lab.ModeCallback {
				node = theLab.Nodes[3]
			}
			uuid := deployLocalIn(ctx, node, r.mode, r.vendor, withGRUB, "uefi")
			steps.EventuallyActive(ctx, client, uuid, deployTimeout)
			expectGRUBOnESP(node)
			undeploy(ctx, node, uuid)
		}, SpecTimeout(deployTimeout+2*time.Minute))
	}

	It("fails the deploy, naming boot_option=netboot or a whole-disk image, when the image holds no GRUB", func(ctx SpecContext) {
		for _, r := range []struct {
			node         *lab.Node
			mode, vendor string
			lastError    string
		}{
			{theLab.Nodes[2], lab.ModeAuto, "", "Failed to install a bootloader when deploying node "},
			{theLab.Nodes[3], lab.ModeCallback, "iscsi", "Failed to install bootloader on node "},
		} {
			By("deploying through a ramdisk in " + r.mode + " mode")
			uuid := deployLocal(ctx, r.node, r.mode, r.vendor, withoutGRUB)
			n := expectFailedCleanly(ctx, r.node, uuid, r.lastError+uuid)
			Expect(n.LastError).To(And(ContainSubstring("holds no GRUB"), ContainSubstring("boot_option=netboot"),
				ContainSubstring("whole-disk image")))
			Expect(n.PowerState).To(Equal("power off"))
		}
	}, SpecTimeout(2*deployTimeout+2*time.Minute))
})
