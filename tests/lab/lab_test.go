package lab_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/agent/tgt"
	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab"
	"github.com/ferricbm/ferric/tests/lab/bmc"
)

var _ = Describe("ReadPXEConfig", func() {
	It("returns the default label's append line, through the per-MAC symlink", func() {
		dir := GinkgoT().TempDir()
		Expect(os.MkdirAll(filepath.Join(dir, "node"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "node", "config"), []byte(
			"default deploy\n\nlabel other\nkernel k\nappend wrong=1\n\nlabel deploy\nkernel n/deploy_kernel\n"+
				"append initrd=n/deploy_ramdisk ipa-api-url=http://api deployment_id=abc\nipappend 3\n"), 0o644)).To(Succeed())
		Expect(os.MkdirAll(filepath.Join(dir, "pxelinux.cfg"), 0o755)).To(Succeed())
		link := filepath.Join(dir, "pxelinux.cfg", "01-aa-bb-cc-dd-ee-ff")
		Expect(os.Symlink("../node/config", link)).To(Succeed())

		label, cmdline, err := lab.ReadPXEConfig(link)
		Expect(err).NotTo(HaveOccurred())
		Expect(label).To(Equal("deploy"))
		Expect(cmdline).To(Equal("initrd=n/deploy_ramdisk ipa-api-url=http://api deployment_id=abc"))
		Expect(lab.IsDeployCmdline(cmdline)).To(BeTrue())
		Expect(lab.IsDeployCmdline("initrd=x root=UUID=1234 ro text")).To(BeFalse())
	})

	It("fails for a configuration without a default label", func() {
		path := filepath.Join(GinkgoT().TempDir(), "config")
		Expect(os.WriteFile(path, []byte("label deploy\nappend a=b\n"), 0o644)).To(Succeed())
		_, _, err := lab.ReadPXEConfig(path)
		Expect(err).To(MatchError(ContainSubstring("no default label")))
	})
})

var _ = Describe("A lab node", Ordered, func() {
	var (
		l        *lab.Lab
		node     *lab.Node
		other    *lab.Node
		tftpRoot string
		api      *callbackAPI
	)

	BeforeAll(func(ctx SpecContext) {
		dir, err := os.MkdirTemp("", "ferric-lab-test-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, dir)
		root, err := harness.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		agent, err := lab.BuildAgent(ctx, root, dir)
		Expect(err).NotTo(HaveOccurred())
		tftpRoot = filepath.Join(dir, "tftpboot")
		Expect(os.MkdirAll(filepath.Join(tftpRoot, "pxelinux.cfg"), 0o755)).To(Succeed())
		// The Bare Metal API as the callback-only ramdisk sees it.
		api = startCallbackAPI()
		portal, err := lab.FreeTCPPort()
		Expect(err).NotTo(HaveOccurred())
		l, err = lab.Start(ctx, lab.Options{Nodes: 2, AgentBinary: agent, TFTPRoot: tftpRoot, DiskSize: 8 << 20,
			PortalPort: portal, TempDir: dir, AgentGrace: 5 * time.Second})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(l.Stop()).To(Succeed()) })
		node, other = l.Nodes[0], l.Nodes[1]
		Expect(l.Node(strings.ToUpper(node.MAC))).To(BeIdenticalTo(node))
		Expect(node.Address).NotTo(Equal(other.Address))
		Expect(node.Address).To(HavePrefix("127.77."))
	}, NodeTimeout(3*time.Minute))

	AfterEach(func() {
		if CurrentSpecReport().Failed() && l != nil {
			for _, n := range l.Nodes {
				if b, err := os.ReadFile(n.AgentLog()); err == nil {
					AddReportEntry(n.Name+" agent log", string(b))
				}
			}
		}
	})

	ipmitool := func(n *lab.Node, args ...string) {
		GinkgoHelper()
		pw := filepath.Join(GinkgoT().TempDir(), "pw")
		Expect(os.WriteFile(pw, []byte(n.BMC.Password), 0o600)).To(Succeed())
		out, err := exec.Command("ipmitool", append([]string{"-I", "lanplus", "-C", "3", "-H", n.BMC.Address,
			"-p", strconv.Itoa(n.BMC.Port), "-U", n.BMC.Username, "-f", pw}, args...)...).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "ipmitool %v: %s", args, out)
	}
	listening := func(addr string) func() bool {
		return func() bool {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return false
			}
			c.Close()
			return true
		}
	}

	It("boots the deploy ramdisks of two nodes at once from their PXE configurations, each on its own address", func() {
		iqns := map[*lab.Node]string{}
		for _, n := range []*lab.Node{node, other} {
			uuid := harness.NewUUID()
			Expect(os.MkdirAll(filepath.Join(tftpRoot, uuid), 0o755)).To(Succeed())
			iqns[n] = "iqn.2008-10.org.openstack:" + uuid
			config := fmt.Sprintf("default deploy\n\nlabel deploy\nkernel %[1]s/deploy_kernel\n"+
				"append initrd=%[1]s/deploy_ramdisk deployment_id=%[1]s deployment_key=KEY iscsi_target_iqn=%[2]s "+
				"ironic_api_url=%[3]s boot_option=netboot\nipappend 3\n", uuid, iqns[n], api.URL)
			Expect(os.WriteFile(filepath.Join(tftpRoot, uuid, "config"), []byte(config), 0o644)).To(Succeed())
			Expect(os.Symlink(filepath.Join("..", uuid, "config"), n.PXEConfigPath())).To(Succeed())
			n.SetMode(lab.ModeCallback)
			ipmitool(n, "chassis", "bootdev", "pxe")
			ipmitool(n, "chassis", "power", "on")
		}
		for _, n := range []*lab.Node{node, other} {
			Eventually(api.Calls).WithTimeout(time.Minute).Should(ContainElement(And(HaveKeyWithValue("key", "KEY"),
				HaveKeyWithValue("iqn", iqns[n]), HaveKeyWithValue("address", n.Address))))
			Expect(n.AgentRunning()).To(BeTrue(), "the ramdisk waits for done")
			Expect(listening(n.Portal)()).To(BeTrue(), "the disk is exported on the node's portal")
			Expect(listening(n.DoneListen)()).To(BeTrue(), "the ramdisk waits for done on the node's address")
			boot, ok := n.LastBoot()
			Expect(ok).To(BeTrue())
			Expect(boot.Device).To(Equal(lab.BootPXE))
			Expect(boot.Label).To(Equal("deploy"))
			Expect(boot.Cmdline).To(ContainSubstring("deployment_key=KEY"))
			Expect(boot.Agent).To(BeTrue())
		}
	})

	It("stops the ramdisk and its tgtd when powered off", func() {
		for _, n := range []*lab.Node{node, other} {
			ipmitool(n, "chassis", "power", "off")
			Eventually(n.AgentRunning).WithTimeout(30 * time.Second).Should(BeFalse())
			Eventually(listening(n.Portal)).WithTimeout(10 * time.Second).Should(BeFalse())
			Expect(tgt.Answers(context.Background(), n.TgtdControlPort)).To(BeFalse(), "no tgtd answers on the node's control port")
			Expect(n.BMC.PowerState()).To(Equal(bmc.PowerOff))
		}
	})

	It("records a boot from disk without starting anything", func() {
		ipmitool(node, "chassis", "bootdev", "disk")
		ipmitool(node, "chassis", "power", "on")
		Eventually(func() string {
			b, _ := node.LastBoot()
			return b.Device
		}).WithTimeout(30 * time.Second).Should(Equal(lab.BootDisk))
		Expect(node.AgentRunning()).To(BeFalse())
		Expect(node.Boots()).To(HaveLen(2))
		ipmitool(node, "chassis", "power", "off")
	})
})
