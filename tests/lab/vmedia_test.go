package lab_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/bmc"
	"github.com/ferricbm/ferric/conductor/bmc/transport"
	"github.com/ferricbm/ferric/deploy/bootiso"
	"github.com/ferricbm/ferric/deploy/floppy"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab"
)

// Lab nodes with a simulated iLO, driven through the conductor's own BMC
// clients as the ilo and redfish hardware types drive them.
var _ = Describe("A lab node with an iLO", Ordered, func() {
	var (
		dir, agent string
		media      *httptest.Server
		api        *callbackAPI
	)

	BeforeAll(func(ctx SpecContext) {
		var err error
		dir, err = os.MkdirTemp("", "ferric-lab-ilo-test-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, dir)
		root, err := harness.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		agent, err = lab.BuildAgent(ctx, root, dir)
		Expect(err).NotTo(HaveOccurred())
		served := filepath.Join(dir, "served")
		Expect(os.MkdirAll(served, 0o755)).To(Succeed())
		Expect(lab.DeployISO(ctx, root, filepath.Join(served, "deploy.iso"))).To(Succeed())
		media = httptest.NewServer(http.FileServer(http.Dir(served)))
		DeferCleanup(media.Close)
		// The Bare Metal API as the callback-only ramdisk sees it.
		api = startCallbackAPI()
	}, NodeTimeout(3*time.Minute))

	start := func(ctx context.Context, kind string) *lab.Node {
		GinkgoHelper()
		portal, err := lab.FreeTCPPort()
		Expect(err).NotTo(HaveOccurred())
		l, err := lab.Start(ctx, lab.Options{Nodes: 1, AgentBinary: agent, TFTPRoot: filepath.Join(dir, "tftpboot"),
			DiskSize: 8 << 20, PortalPort: portal, TempDir: dir, AgentGrace: 5 * time.Second, BMCKind: kind})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(l.Stop()).To(Succeed()) })
		n := l.Nodes[0]
		DeferCleanup(func() {
			if CurrentSpecReport().Failed() {
				if b, err := os.ReadFile(n.AgentLog()); err == nil {
					AddReportEntry(n.Name+" agent log", string(b))
				}
			}
		})
		Expect(n.BMC).To(BeNil())
		Expect(n.ILO.URL).To(HavePrefix("https://" + n.Address + ":"))
		return n
	}
	connect := func(ctx context.Context, n *lab.Node) *bmc.Controller {
		GinkgoHelper()
		c, err := bmc.Connect(ctx, bmc.Config{Address: n.Address, Port: n.ILO.Port, Username: n.ILO.Username,
			Password: n.ILO.Password, TLS: transport.TLS{CAFile: n.ILO.CAFile},
			Poll: bmc.Poll{Interval: 100 * time.Millisecond, Retries: 50}})
		Expect(err).NotTo(HaveOccurred())
		return c
	}
	publishFloppy := func(params map[string]string) string {
		GinkgoHelper()
		img, err := floppy.Parameters(params)
		Expect(err).NotTo(HaveOccurred())
		name := harness.NewUUID() + ".img"
		Expect(os.WriteFile(filepath.Join(dir, "served", name), img, 0o644)).To(Succeed())
		return media.URL + "/" + name
	}

	for _, kind := range []string{lab.BMCILO, lab.BMCRedfish} {
		It("boots the deploy ISO from the virtual CD with the floppy's parameters ("+kind+")", func(ctx SpecContext) {
			n := start(ctx, kind)
			c := connect(ctx, n)
			Expect(c.Protocol()).To(Equal(map[string]string{lab.BMCILO: bmc.ProtocolRIBCL, lab.BMCRedfish: bmc.ProtocolRedfish}[kind]))
			uuid := harness.NewUUID()
			iqn := "iqn.2008-10.org.openstack:" + uuid
			fl := publishFloppy(map[string]string{"deployment_id": uuid, "deployment_key": "KEY",
				"iscsi_target_iqn": iqn, "ironic_api_url": api.URL, "boot_option": "local"})
			Expect(c.InsertMedia(ctx, bmc.Floppy, fl)).To(Succeed())
			Expect(c.InsertMedia(ctx, bmc.CDROM, media.URL+"/deploy.iso")).To(Succeed())
			Expect(c.SetBootDevice(ctx, bmc.BootCDROM, false)).To(Succeed())
			n.SetMode(lab.ModeCallback)
			Expect(c.SetPowerState(ctx, states.PowerOn)).To(Succeed())

			Eventually(api.Calls).WithTimeout(time.Minute).Should(ContainElement(And(HaveKeyWithValue("key", "KEY"),
				HaveKeyWithValue("iqn", iqn), HaveKeyWithValue("address", n.Address))))
			boot, ok := n.LastBoot()
			Expect(ok).To(BeTrue())
			Expect(boot.Device).To(Equal(lab.BootCD))
			Expect(boot.ISO).To(Equal(media.URL + "/deploy.iso"))
			Expect(boot.Cmdline).To(ContainSubstring(bootiso.BootMethodParam))
			Expect(boot.Cmdline).To(ContainSubstring("deployment_key=KEY"))
			Expect(boot.Agent).To(BeTrue())
			Expect(n.AgentRunning()).To(BeTrue(), "the ramdisk waits for done")

			Expect(c.SetPowerState(ctx, states.PowerOff)).To(Succeed())
			Eventually(n.AgentRunning).WithTimeout(30 * time.Second).Should(BeFalse())
		}, SpecTimeout(3*time.Minute))
	}

	It("refuses to insert an image whose URL does not answer", func(ctx SpecContext) {
		n := start(ctx, lab.BMCILO)
		c := connect(ctx, n)
		Expect(c.InsertMedia(ctx, bmc.CDROM, media.URL+"/missing.iso")).NotTo(Succeed())
	}, SpecTimeout(time.Minute))

	It("boots a boot ISO only when its root= names a partition of the disk, and the disk otherwise", func(ctx SpecContext) {
		n := start(ctx, lab.BMCRedfish)
		c := connect(ctx, n)
		// A disk with one ext4 partition, as a partition image deploy
		// leaves it.
		sfdisk := exec.CommandContext(ctx, "sfdisk", "-q", n.Disk)
		sfdisk.Stdin = strings.NewReader("start=2048, type=83\n")
		Expect(sfdisk.CombinedOutput()).Error().NotTo(HaveOccurred())
		Expect(exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-E", "offset=1048576", n.Disk, "4096").CombinedOutput()).
			Error().NotTo(HaveOccurred())
		out, err := exec.CommandContext(ctx, "blkid", "-p", "-O", "1048576", "-s", "UUID", "-o", "value", n.Disk).Output()
		Expect(err).NotTo(HaveOccurred())
		rootUUID := strings.TrimSpace(string(out))
		Expect(rootUUID).NotTo(BeEmpty())

		kernel := filepath.Join(dir, "boot-iso.kernel")
		Expect(os.WriteFile(kernel, []byte("placeholder kernel and ramdisk"), 0o644)).To(Succeed())
		for _, root := range []string{rootUUID, harness.NewUUID()} {
			iso := filepath.Join(dir, "served", "boot-"+root+".iso")
			Expect(bootiso.Build(ctx, iso, bootiso.Options{Kernel: kernel, Ramdisk: kernel,
				KernelParams: bootiso.KernelParams(root, "text")})).To(Succeed())
			Expect(c.InsertMedia(ctx, bmc.CDROM, media.URL+"/"+filepath.Base(iso))).To(Succeed())
			Expect(c.SetBootDevice(ctx, bmc.BootCDROM, true)).To(Succeed())
			Expect(c.SetPowerState(ctx, states.PowerOn)).To(Succeed())
			Eventually(func() string { b, _ := n.LastBoot(); return b.Root }).WithTimeout(30 * time.Second).
				Should(Equal("UUID=" + root))
			boot, _ := n.LastBoot()
			Expect(boot.RootFound).To(Equal(root == rootUUID))
			Expect(boot.Agent).To(BeFalse())
			Expect(c.SetPowerState(ctx, states.PowerOff)).To(Succeed())
		}
		Expect(c.EjectMedia(ctx, bmc.CDROM)).To(Succeed())
		Expect(c.SetBootDevice(ctx, bmc.BootDisk, true)).To(Succeed())
		Expect(c.SetPowerState(ctx, states.PowerOn)).To(Succeed())
		Eventually(func() string { b, _ := n.LastBoot(); return b.Device }).WithTimeout(30 * time.Second).Should(Equal(lab.BootDisk))
		Expect(n.Boots()).To(HaveLen(3))
	}, SpecTimeout(2*time.Minute))
})
