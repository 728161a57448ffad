package bootloader_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/bootloader"
)

var _ = Describe("Partitions", func() {
	parts := bootloader.Partitions{
		{Device: "/dev/loop0p1", Number: 1, UUID: "ABCD-1234", PartUUID: "0c1e8a2f-01", Label: "efi-part", Type: "vfat"},
		{Device: "/dev/loop0p2", Number: 2, Type: "swap", UUID: "5d3c6f8e-0000-4000-8000-000000000002"},
		{Device: "/dev/loop0p3", Number: 3, UUID: "0f6c4b1e-8d3a-4a57-b1c8-5e2f9a7d3c10", PartUUID: "0c1e8a2f-03", Type: "ext4"},
	}

	It("finds root by filesystem UUID or PARTUUID, in any case", func() {
		Expect(parts.Root("0F6C4B1E-8D3A-4A57-B1C8-5E2F9A7D3C10")).To(HaveField("Device", "/dev/loop0p3"))
		Expect(parts.Root("0c1e8a2f-03")).To(HaveField("Device", "/dev/loop0p3"))
	})

	It("takes the last partition as root when no UUID is given, as the conductor puts root last", func() {
		Expect(parts.Root("")).To(HaveField("Device", "/dev/loop0p3"))
	})

	It("fails for a root UUID the disk does not hold, or a disk without partitions", func() {
		_, err := parts.Root("11111111-2222-3333-4444-555555555555")
		Expect(err).To(MatchError(ContainSubstring("no partition with UUID 11111111-2222-3333-4444-555555555555")))
		_, err = bootloader.Partitions{}.Root("")
		Expect(err).To(MatchError(ContainSubstring("no partitions")))
	})

	It("finds the ESP by volume ID, or by its efi-part label without one", func() {
		Expect(parts.ESP("abcd-1234")).To(HaveField("Device", "/dev/loop0p1"))
		Expect(parts.ESP("")).To(HaveField("Device", "/dev/loop0p1"))
		_, err := parts[1:].ESP("")
		Expect(err).To(MatchError(ContainSubstring("no EFI system partition labelled efi-part")))
		_, err = parts.ESP("FFFF-0000")
		Expect(err).To(MatchError(ContainSubstring("no EFI system partition with UUID FFFF-0000")))
	})
})
