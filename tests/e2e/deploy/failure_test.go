package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/agent/tgt"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/lab"
	"github.com/ferricbm/ferric/tests/lab/bmc"
)

var _ = Describe("Failed deploys of lab nodes", Ordered, func() {
	var wholeDiskSum, bigSum string
	const bigSize = 384 << 20

	BeforeAll(func() {
		wholeDiskSum = steps.NewDiskImage(workDir, "fail", 8<<20).MD5
		// Large enough that the write is still running when the spec
		// freezes the target (after its first 64 MiB).
		big := filepath.Join(workDir, "served", "big.raw")
		steps.RandomFile(big, bigSize)
		bigSum = steps.MD5File(big)
	})

	It("fails a deploy whose image checksum does not match, leaving nothing behind", func(ctx SpecContext) {
		node := theLab.Nodes[1]
		node.SetMode(lab.ModeAuto)
		uuid := enrol(ctx, node, "")
		steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/fail.qcow2",
			"image_checksum": strings.Repeat("0", 32)})

		steps.Provision(ctx, client, uuid, nodes.TargetActive)
		n := expectFailedCleanly(ctx, node, uuid, "checksum")
		Expect(n.PowerState).To(Equal("power off"))
		Expect(node.BMC.PowerState()).To(Equal(bmc.PowerOff))
	}, SpecTimeout(3*time.Minute))

	It("fails a deploy whose image does not exist (HTTP 404), leaving nothing behind", func(ctx SpecContext) {
		node := theLab.Nodes[2]
		node.SetMode(lab.ModeAuto)
		uuid := enrol(ctx, node, "")
		steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/no-such-image.qcow2"})
		boots := len(node.Boots())

		steps.Provision(ctx, client, uuid, nodes.TargetActive)
		n := expectFailedCleanly(ctx, node, uuid, "not found")
		Expect(n.LastError).To(ContainSubstring("/no-such-image.qcow2"))
		Expect(node.Boots()).To(HaveLen(boots), "the node was never booted")
	}, SpecTimeout(3*time.Minute))

	It("fails a deploy whose BMC does not answer, leaving nothing behind", func(ctx SpecContext) {
		node := theLab.Nodes[3]
		node.SetMode(lab.ModeAuto)
		uuid := enrol(ctx, node, "")
		steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/fail.qcow2", "image_checksum": wholeDiskSum})
		boots := len(node.Boots())

		Expect(node.BMC.Stop()).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(node.BMC.Start(ctx)).To(Succeed()) }, NodeTimeout(time.Minute))
		steps.Provision(ctx, client, uuid, nodes.TargetActive)
		// The BMC is first asked in prepare, by the PXE boot interface
		// setting the next boot device.
		n := expectFailedCleanly(ctx, node, uuid, "Failed to prepare to deploy")
		Expect(n.LastError).To(ContainSubstring(node.BMC.Address), "the message names the BMC that did not answer")
		Expect(node.Boots()).To(HaveLen(boots), "the node was never booted")
	}, SpecTimeout(3*time.Minute))

	It("refuses pass_deploy_info with a wrong deploy key, then fails the deploy when the ramdisk never calls back", func(ctx SpecContext) {
		node := theLab.Nodes[0]
		node.SetMode(lab.ModeSilent)
		DeferCleanup(node.SetMode, lab.ModeAuto)
		uuid := enrol(ctx, node, "iscsi")
		steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/fail.qcow2", "image_checksum": wholeDiskSum})

		steps.Provision(ctx, client, uuid, nodes.TargetActive)
		before := steps.EventuallyUnlockedIn(ctx, client, uuid, "wait call-back", deployTimeout)
		last := steps.EventuallyBooted(node, lab.BootPXE)
		Expect(last.Label).To(Equal("deploy"), "the deploy ramdisk booted, and stays silent")
		Expect(image.RefPath(dirs.Images, uuid)).To(BeAnExistingFile(), "the waiting deploy holds its image")

		By("a pass_deploy_info with a wrong key is refused and changes nothing")
		status, body := passDeployInfo(ctx, uuid, map[string]any{"address": node.Address, "key": strings.Repeat("x", 32),
			"iqn": "iqn.2008-10.org.openstack:" + uuid, "error": ""})
		Expect(status).To(Equal(http.StatusBadRequest), body)
		Expect(body).To(ContainSubstring("Deploy key does not match"))
		after, err := nodes.Get(ctx, client, uuid).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(after.ProvisionState).To(Equal("wait call-back"))
		Expect(after.Reservation).To(BeEmpty())
		Expect(after.LastError).To(BeEmpty())
		Expect(after.ProvisionUpdatedAt).To(Equal(before.ProvisionUpdatedAt))

		By("the deploy callback timeout fails the deploy")
		expectFailedCleanly(ctx, node, uuid, "Timeout reached while waiting for callback")
	}, SpecTimeout(callbackTimeout+3*time.Minute))

	DescribeTable("fails a deploy whose target goes away in the middle of the write, leaving nothing behind",
		func(ctx SpecContext, vanish func(node *lab.Node, tgtd int), lastError string) {
			node := theLab.Nodes[1]
			node.SetMode(lab.ModeAuto)
			uuid := enrol(ctx, node, "")
			steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/big.raw", "image_checksum": bigSum})

			steps.Provision(ctx, client, uuid, nodes.TargetActive)
			// The write's own progress records come too late to catch it
			// at this speed (the first after a second; the image is on
			// the disk in less), so the node's tgtd is frozen once it has
			// received 64 MiB: far past login, far from the end.
			By("freezing the node's tgtd once 64 MiB of the image have reached it")
			var tgtd int
			Eventually(func(g Gomega) {
				n, err := nodes.Get(ctx, client, uuid).Extract()
				g.Expect(err).NotTo(HaveOccurred())
				if n.ProvisionState != "deploying" && n.ProvisionState != "wait call-back" {
					StopTrying("the deploy left its write phase: " + n.ProvisionState + " " + n.LastError).Now()
				}
				pid, err := node.TargetPID()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(pid).NotTo(BeZero(), "the node's tgtd runs")
				received, err := lab.ReadChars(pid)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(received).To(BeNumerically(">=", 64<<20))
				tgtd = pid
			}).WithContext(ctx).WithTimeout(deployTimeout).WithPolling(5 * time.Millisecond).Should(Succeed())
			Expect(syscall.Kill(tgtd, syscall.SIGSTOP)).To(Succeed())
			By("the API shows the write's progress, short of the end")
			Eventually(func(g Gomega) {
				n, err := nodes.Get(ctx, client, uuid).Extract()
				g.Expect(err).NotTo(HaveOccurred())
				progress, _ := n.DriverInternalInfo["deploy_progress"].(map[string]any)
				g.Expect(progress).To(HaveKeyWithValue("bytes_done", BeNumerically(">", 0)))
				g.Expect(progress).To(HaveKeyWithValue("bytes_done", BeNumerically("<", bigSize)))
				g.Expect(progress).To(HaveKeyWithValue("bytes_total", BeNumerically("==", bigSize)))
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
			Expect(sessionsOn(node.Portal)).To(BeNumerically(">", 0), "the conductor's session is still open: the write did not finish")
			Expect(steps.DiskStartsWith(node.Disk, filepath.Join(workDir, "served", "big.raw"))).To(BeFalse(), "the image is not all on the disk")

			vanish(node, tgtd)
			n := expectFailedCleanly(ctx, node, uuid, lastError)
			Expect(n.LastError).To(ContainSubstring(node.Portal), "the message names the target that went away")
			Expect(n.PowerState).To(Equal("power off"))
			Expect(node.BMC.PowerState()).To(Equal(bmc.PowerOff))
		},
		Entry("its tgtd is killed", func(_ *lab.Node, tgtd int) {
			Expect(syscall.Kill(tgtd, syscall.SIGKILL)).To(Succeed())
		}, "write whole disk image", SpecTimeout(deployTimeout+2*time.Minute)),
		Entry("the node is powered off through its BMC", func(node *lab.Node, _ int) {
			// The lab stops the ramdisk; its frozen tgtd goes with it.
			pw := filepath.Join(GinkgoT().TempDir(), "pw")
			Expect(os.WriteFile(pw, []byte(node.BMC.Password), 0o600)).To(Succeed())
			steps.Run("ipmitool", "-I", "lanplus", "-C", "3", "-H", node.BMC.Address, "-p", strconv.Itoa(node.BMC.Port),
				"-U", node.BMC.Username, "-f", pw, "chassis", "power", "off")
		}, "write whole disk image", SpecTimeout(deployTimeout+2*time.Minute)),
	)
})

// expectFailedCleanly waits for the deploy to end in deploy failed, with a
// last_error holding lastError and no lock, then checks that the deploy
// left nothing: no ramdisk or tgtd of the node, no PXE configuration for
// its MAC, no boot files, no image cache reference.
func expectFailedCleanly(ctx context.Context, node *lab.Node, uuid, lastError string) *nodes.Node {
	GinkgoHelper()
	n := steps.EventuallyUnlockedIn(ctx, client, uuid, "deploy failed", deployTimeout)
	GinkgoWriter.Printf("last_error: %s\n", n.LastError)
	Expect(n.LastError).To(ContainSubstring(lastError))
	Expect(n.DriverInternalInfo).NotTo(HaveKey("deploy_key_secret"))

	Eventually(node.AgentRunning).WithContext(ctx).WithTimeout(time.Minute).Should(BeFalse(), "no ramdisk runs")
	Eventually(node.TargetPID).WithContext(ctx).WithTimeout(time.Minute).Should(BeZero(), "no tgtd of the node runs")
	Expect(tgt.Answers(ctx, node.TgtdControlPort)).To(BeFalse(), "no target answers on the node's tgtd control port")
	Expect(sessionsOn(node.Portal)).To(BeZero(), "no iSCSI connection to the node is left")
	expectNoFile(node.PXEConfigPath())
	expectNoFile(filepath.Join(dirs.TFTPRoot, uuid))
	expectNoFile(image.RefPath(dirs.Images, uuid))
	return n
}

// expectNoFile checks that path does not exist, not even as a dangling
// link.
func expectNoFile(path string) {
	GinkgoHelper()
	_, err := os.Lstat(path)
	Expect(err).To(MatchError(os.ErrNotExist), "%s is left", path)
}

// passDeployInfo POSTs the callback-only ramdisk's vendor call, as the
// ramdisk does (no microversion header), and returns the status and body.
func passDeployInfo(ctx context.Context, uuid string, body map[string]any) (int, string) {
	GinkgoHelper()
	data, err := json.Marshal(body)
	Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		deployment.APIURL+"/v1/nodes/"+uuid+"/vendor_passthru?method=pass_deploy_info", bytes.NewReader(data))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var out bytes.Buffer
	_, err = out.ReadFrom(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, out.String()
}

// sessionsOn counts the established TCP connections accepted on portal
// ("ADDR:PORT"), from /proc/net/tcp: the iSCSI sessions of the target.
func sessionsOn(portal string) int {
	GinkgoHelper()
	host, port, err := net.SplitHostPort(portal)
	Expect(err).NotTo(HaveOccurred())
	ip := net.ParseIP(host).To4()
	Expect(ip).NotTo(BeNil())
	p, err := strconv.Atoi(port)
	Expect(err).NotTo(HaveOccurred())
	// /proc/net/tcp writes the address as the 32-bit value in host
	// (little-endian) order.
	local := strings.ToUpper(fmt.Sprintf("%s:%04X", hex.EncodeToString([]byte{ip[3], ip[2], ip[1], ip[0]}), p))
	f, err := os.Open("/proc/net/tcp")
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	count := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		const established = "01"
		if len(fields) > 3 && fields[1] == local && fields[3] == established {
			count++
		}
	}
	Expect(sc.Err()).NotTo(HaveOccurred())
	return count
}
