package ilo_test

import (
	"context"
	"github.com/ferricbm/ferric/conductor/driver/drivertest"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/bmc"
	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/ilo"
	"github.com/ferricbm/ferric/conductor/driver/pxe"
	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/deploy/bootiso"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

var _ = Describe("boot ISOs of partition images", func() {
	const root = "5b3f0c1e-8a64-4c2b-9a3e-1f2d3c4b5a69"
	var (
		hw    *ilo.Hardware
		base  string
		store *db.Store
		b     *ilo.Boot
		power *ilo.Power
		// vmedia is the folder the web server publishes in.
		vmedia string
	)

	BeforeEach(func(ctx SpecContext) {
		hw = ilo.New(ilo.OptionsFrom(fastConfig(), nil))
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		base = "http://" + l.Addr().String()
		l.Close()
		httpRoot := GinkgoT().TempDir()
		for _, f := range []string{"kernel", "ramdisk"} {
			Expect(os.WriteFile(filepath.Join(httpRoot, f), []byte("instance "+f), 0o644)).To(Succeed())
		}
		vmedia = filepath.Join(httpRoot, "vmedia")
		web, err := publish.NewWebServer(vmedia, base)
		Expect(err).NotTo(HaveOccurred())
		files := pxe.New(pxe.Options{TFTPRoot: GinkgoT().TempDir(), HTTPRoot: httpRoot, HTTPURL: base, Media: web, Downloads: loopbackDownloads})
		Expect(files.StartService(ctx)).To(Succeed())
		DeferCleanup(files.StopService)
		store, err = db.Open(ctx, "sqlite://"+filepath.Join(GinkgoT().TempDir(), "ferric.db"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(store.Close)
		Expect(store.Upgrade(ctx)).To(Succeed())
		b = hw.Boot(hw.ILO(), ilo.BootOptions{MediaLifetime: time.Minute, Downloads: loopbackDownloads, BootISOs: store, Fetch: files.Fetch,
			AppendParams: "nofb nomodeset", WorkDir: GinkgoT().TempDir(),
			Publisher: func(context.Context) (publish.Publisher, error) { return web, nil }})
		ht := hw.HardwareType(ilo.Name, hw.ILO(), map[hwcatalog.InterfaceType][]driver.Implementation{
			hwcatalog.Boot: {{Name: ilo.ILOBootName, Impl: b}}})
		power = ht.Interfaces[hwcatalog.Power][0].Impl.(*ilo.Power)
	})

	node := func(uuid string, info map[string]any) *model.Node {
		st := string(states.DeployWait)
		name := ilo.ILOBootName
		return &model.Node{UUID: uuid, ProvisionState: &st, BootInterface: &name, DriverInfo: info,
			InstanceInfo: model.JSONObject{"image_source": "http://images/part.img", "kernel": base + "/kernel",
				"ramdisk": base + "/ramdisk", "capabilities": map[string]any{"boot_option": "netboot"}},
			DriverInternalInfo: model.JSONObject{"root_uuid_or_disk_id": root}}
	}
	get := func(u string) (int, []byte) {
		resp, err := http.Get(u)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, body
	}

	It("builds one ISO booting root=UUID= for every node deploying the same image, re-inserts it at power-on and deletes it with its last user", func(ctx SpecContext) {
		srv1, info1 := startILO("ProLiant DL360 Gen9", ilo.Name)
		srv2, info2 := startILO("ProLiant DL360 Gen9", ilo.Name)
		n1, n2 := node("3d1c7a52-6f0e-4b8a-9c21-7e5d4f3a2b10", info1), node("8e2f4b61-0a7c-4d3e-b5f9-2c1d0e9f8a76", info2)
		t1, t2 := drivertest.New(n1), drivertest.New(n2)

		By("building, publishing and inserting the ISO for the first node, booting from the CD for good")
		Expect(b.PrepareInstance(ctx, t1)).To(Succeed())
		ref, _ := n1.InstanceInfo["ilo_boot_iso"].(string)
		name, ok := strings.CutPrefix(ref, "published:boot-iso-")
		Expect(ok).To(BeTrue(), "instance_info ilo_boot_iso %q names a published ISO", ref)
		Expect(store.BootISOUsage(ctx, "boot-iso-"+name)).To(Equal(1))
		cd := mediaOf(srv1).cd
		Expect(cd).To(HavePrefix(base + "/vmedia/boot-iso-" + name + "?"))
		status, iso := get(cd)
		Expect(status).To(Equal(http.StatusOK))
		cfg, err := bootiso.ReadBootConfig(strings.NewReader(string(iso)))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.BIOS).To(ContainSubstring("root=UUID=" + root + " nofb nomodeset"))
		Expect(cfg.UEFI).To(ContainSubstring("root=UUID=" + root + " nofb nomodeset"))
		bd, err := hw.Management(hw.ILO()).GetBootDevice(ctx, t1)
		Expect(err).NotTo(HaveOccurred())
		Expect(*bd.Device).To(Equal("cdrom"))
		Expect(*bd.Persistent).To(BeTrue())

		By("sharing it with the second node")
		Expect(b.PrepareInstance(ctx, t2)).To(Succeed())
		Expect(n2.InstanceInfo["ilo_boot_iso"]).To(Equal(ref))
		Expect(store.BootISOUsage(ctx, "boot-iso-"+name)).To(Equal(2))
		Expect(mediaOf(srv2).cd).To(HavePrefix(base + "/vmedia/boot-iso-" + name + "?"))

		By("re-inserting it behind a fresh URL before an active instance powers on, booting once from the CD")
		active := string(states.Active)
		n1.ProvisionState = &active
		c, err := hw.Controller(ctx, hw.ILO(), n1)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.EjectMedia(ctx, bmc.CDROM)).To(Succeed())
		Expect(c.SetBootDevice(ctx, bmc.BootDisk, true)).To(Succeed())
		Expect(power.SetPowerState(ctx, t1, states.PowerOn, 0)).To(Succeed())
		Expect(mediaOf(srv1).cd).To(HavePrefix(base + "/vmedia/boot-iso-" + name + "?"))
		Expect(srv1.RIBCL.LastBoot()).To(Equal("CDROM"))
		Expect(c.EjectMedia(ctx, bmc.CDROM)).To(Succeed())
		Expect(power.Reboot(ctx, t1, false, 0)).To(Succeed())
		Expect(mediaOf(srv1).cd).To(HavePrefix(base + "/vmedia/boot-iso-" + name + "?"))
		Expect(srv1.RIBCL.LastBoot()).To(Equal("CDROM"))

		By("keeping it while a node still boots it, deleting it with the last")
		Expect(b.CleanUpInstance(ctx, t1)).To(Succeed())
		Expect(n1.InstanceInfo).NotTo(HaveKey("ilo_boot_iso"))
		Expect(mediaOf(srv1)).To(Equal(media{}))
		Expect(store.BootISOUsage(ctx, "boot-iso-"+name)).To(Equal(1))
		status, _ = get(cd)
		Expect(status).To(Equal(http.StatusOK))
		Expect(b.CleanUpInstance(ctx, t2)).To(Succeed())
		Expect(store.BootISOUsage(ctx, "boot-iso-"+name)).To(Equal(0))
		status, _ = get(cd)
		Expect(status).To(Equal(http.StatusNotFound))
	})

	It("boots the image's own boot ISO as it is and never deletes it", func(ctx SpecContext) {
		srv, info := startILO("ProLiant DL360 Gen9", ilo.Name)
		n := node("3d1c7a52-6f0e-4b8a-9c21-7e5d4f3a2b10", info)
		n.InstanceInfo["boot_iso"] = base + "/kernel"
		Expect(b.PrepareInstance(ctx, drivertest.New(n))).To(Succeed())
		Expect(mediaOf(srv).cd).To(Equal(base + "/kernel"))
		Expect(n.InstanceInfo["ilo_boot_iso"]).To(Equal(base + "/kernel"))
		Expect(b.CleanUpInstance(ctx, drivertest.New(n))).To(Succeed())
		status, _ := get(base + "/kernel")
		Expect(status).To(Equal(http.StatusOK))
	})

	It("counts and leaves nothing when the BMC refuses the ISO", func(ctx SpecContext) {
		srv, info := startILO("ProLiant DL360 Gen9", ilo.Name)
		srv.RIBCL.RefuseVirtualMedia(true)
		n := node("3d1c7a52-6f0e-4b8a-9c21-7e5d4f3a2b10", info)
		err := b.PrepareInstance(ctx, drivertest.New(n))
		Expect(err).To(MatchError(ContainSubstring("insert the boot ISO")))
		Expect(err.Error()).NotTo(ContainSubstring("sig="))
		Expect(n.InstanceInfo).NotTo(HaveKey("ilo_boot_iso"))
		published, err := filepath.Glob(filepath.Join(vmedia, "boot-iso-*"))
		Expect(err).NotTo(HaveOccurred())
		Expect(published).To(BeEmpty(), "the ISO built for nobody is deleted")
		name := bootiso.CacheKey{ImageID: "http://images/part.img", KernelID: base + "/kernel", RamdiskID: base + "/ramdisk",
			RootUUID: root, AppendParams: "nofb nomodeset"}.Name()
		Expect(store.BootISOUsage(ctx, name)).To(Equal(0))
	})
})
