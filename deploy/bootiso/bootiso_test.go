package bootiso_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/bootiso"
	"github.com/ferricbm/ferric/deploy/floppy"
)

const rootUUID = "3e8f3b4a-0c51-4c2e-9a55-0d1b5e3f7a10"

// elTorito lists the platforms of an ISO's El Torito boot entries as xorriso
// reports them ("BIOS", "UEFI").
func elTorito(iso string) []string {
	GinkgoHelper()
	out := run("xorriso", "-indev", iso, "-report_el_torito", "plain")
	var platforms []string
	for _, m := range regexp.MustCompile(`(?m)^El Torito boot img :\s+\d+\s+(\S+)\s+y`).FindAllStringSubmatch(out, -1) {
		platforms = append(platforms, m[1])
	}
	return platforms
}

func readBootConfig(iso string) bootiso.BootConfig {
	GinkgoHelper()
	f, err := os.Open(iso)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	cfg, err := bootiso.ReadBootConfig(f)
	Expect(err).NotTo(HaveOccurred())
	return cfg
}

func openISO(iso string) *bootiso.ISO {
	GinkgoHelper()
	f, err := os.Open(iso)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(f.Close)
	i, err := bootiso.OpenISO(f)
	Expect(err).NotTo(HaveOccurred())
	return i
}

var _ = Describe("boot ISOs", func() {
	var (
		dir, kernel, ramdisk string
		kernelData           []byte
		ctx                  = context.Background()
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		kernel, kernelData = randomFile(dir, "kernel", 3<<20+5)
		ramdisk, _ = randomFile(dir, "ramdisk", 1<<20)
	})

	It("puts root=UUID before the append parameters", func() {
		Expect(bootiso.KernelParams(rootUUID, " nofb nomodeset ")).To(Equal("root=UUID=" + rootUUID + " nofb nomodeset"))
		Expect(bootiso.KernelParams("", "nofb")).To(Equal("nofb"))
		Expect(bootiso.KernelParams(rootUUID, "")).To(Equal("root=UUID=" + rootUUID))
	})

	It("builds a BIOS ISO with isolinux, Rock Ridge and Joliet names that xorriso and isoinfo accept", func() {
		iso := filepath.Join(dir, "boot.iso")
		Expect(bootiso.Build(ctx, iso, bootiso.Options{Kernel: kernel, Ramdisk: ramdisk,
			KernelParams: bootiso.KernelParams(rootUUID, "nofb nomodeset vga=normal")})).To(Succeed())
		Expect(elTorito(iso)).To(Equal([]string{"BIOS"}))
		info := run("isoinfo", "-d", "-i", iso)
		Expect(info).To(ContainSubstring("Volume id: VMEDIA_BOOT_ISO"))
		Expect(info).To(ContainSubstring("Joliet with UCS level"))
		Expect(info).To(ContainSubstring("Rock Ridge signatures"))
		Expect(run("isoinfo", "-R", "-x", "/isolinux/isolinux.cfg", "-i", iso)).To(Equal(
			"default boot\nlabel boot\nkernel /vmlinuz\nappend initrd=/initrd text root=UUID=" + rootUUID + " nofb nomodeset vga=normal --\n"))

		Expect(readBootConfig(iso)).To(Equal(bootiso.BootConfig{
			BIOS: "initrd=/initrd text root=UUID=" + rootUUID + " nofb nomodeset vga=normal --"}))
		Expect(openISO(iso).ReadFile("/vmlinuz")).To(Equal(kernelData))
		isolinux, err := os.ReadFile(bootiso.DefaultIsolinuxBin)
		Expect(err).NotTo(HaveOccurred())
		// xorriso patched the boot info table into our copy, not into Debian's file.
		Expect(openISO(iso).ReadFile("isolinux/isolinux.bin")).NotTo(Equal(isolinux))
		Expect(os.ReadFile(bootiso.DefaultIsolinuxBin)).To(Equal(isolinux))
	})

	It("builds a hybrid BIOS and UEFI ISO whose EFI image holds the GRUB binary", func() {
		grub, err := os.ReadFile(bootiso.DefaultGrubEFI)
		Expect(err).NotTo(HaveOccurred())
		efi, err := bootiso.BuildEFIBoot(grub)
		Expect(err).NotTo(HaveOccurred())
		iso := filepath.Join(dir, "boot.iso")
		Expect(bootiso.Build(ctx, iso, bootiso.Options{Kernel: kernel, Ramdisk: ramdisk,
			KernelParams: bootiso.KernelParams(rootUUID, "console=ttyS0"), EFI: efi})).To(Succeed())
		Expect(elTorito(iso)).To(Equal([]string{"BIOS", "UEFI"}))
		Expect(run("xorriso", "-indev", iso, "-report_el_torito", "plain")).To(ContainSubstring("/boot/grub/efiboot.img"))

		Expect(readBootConfig(iso)).To(Equal(bootiso.BootConfig{
			BIOS: "initrd=/initrd text root=UUID=" + rootUUID + " console=ttyS0 --",
			UEFI: "root=UUID=" + rootUUID + " console=ttyS0 --"}))
		img, err := openISO(iso).ReadFile("boot/grub/efiboot.img")
		Expect(err).NotTo(HaveOccurred())
		esp := filepath.Join(dir, "efiboot.img")
		Expect(os.WriteFile(esp, img, 0o644)).To(Succeed())
		run("fsck.fat", "-n", esp)
		fs, err := floppy.Open(bytes.NewReader(img))
		Expect(err).NotTo(HaveOccurred())
		Expect(fs.ReadFile("EFI/BOOT/BOOTX64.EFI")).To(Equal(grub))
		// The GRUB image finds the ISO by this file.
		Expect(openISO(iso).ReadFile(".disk/info")).NotTo(BeEmpty())
	})

	It("refuses a command line with a line break and missing kernels, leaving an existing ISO alone", func() {
		iso := filepath.Join(dir, "boot.iso")
		Expect(os.WriteFile(iso, []byte("old"), 0o644)).To(Succeed())
		Expect(bootiso.Build(ctx, iso, bootiso.Options{Kernel: kernel, Ramdisk: ramdisk, KernelParams: "a=1\nsay hello"})).
			To(MatchError(ContainSubstring("line break")))
		Expect(bootiso.Build(ctx, iso, bootiso.Options{Kernel: filepath.Join(dir, "none"), Ramdisk: ramdisk})).
			To(HaveOccurred())
		Expect(bootiso.Build(ctx, iso, bootiso.Options{Kernel: kernel, Ramdisk: ramdisk, Ldlinux: filepath.Join(dir, "none")})).
			To(MatchError(ContainSubstring("xorriso")))
		Expect(os.ReadFile(iso)).To(Equal([]byte("old")))
		Expect(filepath.Glob(filepath.Join(dir, ".bootiso-*"))).To(BeEmpty())
	})

	It("takes kernels from paths with = and backslashes, and refuses EFI paths outside the ISO", func() {
		odd := filepath.Join(dir, `a=b\c`)
		Expect(os.Mkdir(odd, 0o755)).To(Succeed())
		k, data := randomFile(odd, "vmlinuz=1", 1000)
		iso := filepath.Join(dir, "boot.iso")
		Expect(bootiso.Build(ctx, iso, bootiso.Options{Kernel: k, Ramdisk: ramdisk})).To(Succeed())
		Expect(openISO(iso).ReadFile("vmlinuz")).To(Equal(data))

		for _, p := range []string{"../efiboot.img", "/abs/efiboot.img", `a\b`} {
			err := bootiso.Build(ctx, iso, bootiso.Options{Kernel: kernel, Ramdisk: ramdisk,
				EFI: &bootiso.EFIBoot{Image: []byte("x"), ImagePath: p, GrubCfgPath: "boot/grub/grub.cfg"}})
			Expect(err).To(MatchError(ContainSubstring("not a relative path")), p)
		}
	})

	It("replaces an ISO built before", func() {
		iso := filepath.Join(dir, "boot.iso")
		Expect(bootiso.Build(ctx, iso, bootiso.Options{Kernel: kernel, Ramdisk: ramdisk, KernelParams: "first=1"})).To(Succeed())
		Expect(bootiso.Build(ctx, iso, bootiso.Options{Kernel: kernel, Ramdisk: ramdisk, KernelParams: "second=2"})).To(Succeed())
		Expect(readBootConfig(iso).BIOS).To(Equal("initrd=/initrd text second=2 --"))
	})

	Describe("the deploy ISO", func() {
		It("boots BIOS and UEFI with boot_method=vmedia and the given parameters", func() {
			iso := filepath.Join(dir, "deploy.iso")
			Expect(bootiso.BuildDeployISO(ctx, iso, bootiso.DeployISO{Kernel: kernel, Ramdisk: ramdisk,
				Params: "ipa-debug=1 console=ttyS0"})).To(Succeed())
			Expect(elTorito(iso)).To(Equal([]string{"BIOS", "UEFI"}))
			Expect(readBootConfig(iso)).To(Equal(bootiso.BootConfig{
				BIOS: "initrd=/initrd text boot_method=vmedia ipa-debug=1 console=ttyS0 --",
				UEFI: "boot_method=vmedia ipa-debug=1 console=ttyS0 --"}))
		})

		It("gives its UEFI files to a partition image's boot ISO, as Ironic takes them", func() {
			deployISO := filepath.Join(dir, "deploy.iso")
			Expect(bootiso.BuildDeployISO(ctx, deployISO, bootiso.DeployISO{Kernel: kernel, Ramdisk: ramdisk})).To(Succeed())
			f, err := os.Open(deployISO)
			Expect(err).NotTo(HaveOccurred())
			defer f.Close()
			efi, err := bootiso.EFIBootFromISO(f)
			Expect(err).NotTo(HaveOccurred())
			Expect(efi.ImagePath).To(Equal("boot/grub/efiboot.img"))
			Expect(efi.GrubCfgPath).To(Equal("boot/grub/grub.cfg"))

			iso := filepath.Join(dir, "boot.iso")
			Expect(bootiso.Build(ctx, iso, bootiso.Options{Kernel: kernel, Ramdisk: ramdisk,
				KernelParams: bootiso.KernelParams(rootUUID, ""), EFI: efi})).To(Succeed())
			Expect(elTorito(iso)).To(Equal([]string{"BIOS", "UEFI"}))
			Expect(readBootConfig(iso).UEFI).To(Equal("root=UUID=" + rootUUID + " --"))
		})

		It("is refused as a UEFI source when it has no efiboot.img", func() {
			iso := filepath.Join(dir, "bios.iso")
			Expect(bootiso.Build(ctx, iso, bootiso.Options{Kernel: kernel, Ramdisk: ramdisk})).To(Succeed())
			f, err := os.Open(iso)
			Expect(err).NotTo(HaveOccurred())
			defer f.Close()
			_, err = bootiso.EFIBootFromISO(f)
			Expect(err).To(MatchError(ContainSubstring("no efiboot.img")))
		})
	})
})

var _ = Describe("the ISO reader", func() {
	It("finds files by their plain ISO 9660 names when there are no Rock Ridge names", func() {
		dir := GinkgoT().TempDir()
		src := filepath.Join(dir, "src")
		Expect(os.MkdirAll(filepath.Join(src, "boot", "grub"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(src, "boot", "grub", "grub.cfg"),
			[]byte("set default=0\nmenuentry \"x\" {\n  linuxefi /vmlinuz boot_method=vmedia a=b\n  initrdefi /initrd\n}\n"), 0o644)).To(Succeed())
		iso := filepath.Join(dir, "plain.iso")
		out, err := exec.Command("xorriso", "-rockridge", "off", "-outdev", iso, "-map", src, "/").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(run("isoinfo", "-d", "-i", iso)).To(ContainSubstring("NO Rock Ridge"))
		Expect(readBootConfig(iso)).To(Equal(bootiso.BootConfig{UEFI: "boot_method=vmedia a=b"}))
	})

	It("rejects data that is not an ISO", func() {
		_, err := bootiso.OpenISO(bytes.NewReader(make([]byte, 1<<20)))
		Expect(err).To(HaveOccurred())
		_, err = bootiso.ReadBootConfig(bytes.NewReader(nil))
		Expect(err).To(HaveOccurred())
	})
})

var _ = Describe("the boot ISO cache name", func() {
	key := bootiso.CacheKey{ImageID: "img", KernelID: "kern", RamdiskID: "ram", RootUUID: rootUUID, AppendParams: "nofb"}

	It("is stable for the same inputs and changes with each of them", func() {
		Expect(key.Name()).To(MatchRegexp(`^boot-iso-[0-9a-f]{40}$`))
		Expect(key.Name()).To(Equal(key.Name()))
		for _, k := range []bootiso.CacheKey{
			{ImageID: "img2", KernelID: "kern", RamdiskID: "ram", RootUUID: rootUUID, AppendParams: "nofb"},
			{ImageID: "img", KernelID: "kern2", RamdiskID: "ram", RootUUID: rootUUID, AppendParams: "nofb"},
			{ImageID: "img", KernelID: "kern", RamdiskID: "ram2", RootUUID: rootUUID, AppendParams: "nofb"},
			{ImageID: "img", KernelID: "kern", RamdiskID: "ram", RootUUID: "other", AppendParams: "nofb"},
			{ImageID: "img", KernelID: "kern", RamdiskID: "ram", RootUUID: rootUUID},
			// Field boundaries count: moving a character across fields is a different key.
			{ImageID: "im", KernelID: "gkern", RamdiskID: "ram", RootUUID: rootUUID, AppendParams: "nofb"},
		} {
			Expect(k.Name()).NotTo(Equal(key.Name()), "%+v", k)
		}
	})
})
