package clean_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/lab"
	"github.com/ferricbm/ferric/tests/lab/bmc"
)

// cleanTimeout bounds a clean or deploy of a small lab disk: ramdisk
// boot, heartbeats every 2 s, erase.
const cleanTimeout = 3 * time.Minute

var _ = Describe("Cleaning lab nodes in-band", Ordered, func() {
	var image string

	BeforeAll(func() {
		image = filepath.Join(workDir, "served", "whole.raw")
		steps.RandomFile(image, 8<<20)
	})

	It("cleans through the agent on provide and after undeploy, leaving zeros, with the deprecated priority option in force", func(ctx SpecContext) {
		node := theLab.Nodes[0]
		uuid := enrol(ctx, node, "")
		provide(ctx, uuid)
		recs := eraseRecord(ctx, uuid)
		Expect(stepNames(recs)).To(Equal([]string{"erase_devices", "erase_devices_metadata"}),
			"[agent] agent_erase_devices_priority=100 puts erase_devices before erase_devices_metadata (99)")
		Expect(recs[0]).To(And(HaveKeyWithValue("by", "agent"), HaveKeyWithValue("device", node.Disk),
			HaveKeyWithValue("method", "shred"), HaveKeyWithValue("passes", BeNumerically("==", 2)),
			HaveKeyWithValue("bytes", BeNumerically("==", diskSize)), HaveKeyWithValue("samples_checked", BeNumerically(">", 0))))
		for _, c := range conductors {
			Expect(c.Process.LogTail(100000)).To(ContainSubstring("[agent] agent_erase_devices_priority is deprecated"))
		}

		deployImage(ctx, uuid, image)
		Expect(bytes.HasPrefix(readDisk(node), readFile(image))).To(BeTrue(), "the image is on the disk")
		undeployAndClean(ctx, node, uuid)
		Expect(steps.Zeroed(node.Disk)).To(BeTrue(), "no byte of the image is left")
		Expect(stepNames(eraseRecord(ctx, uuid))).To(Equal([]string{"erase_devices", "erase_devices_metadata"}))

		By("showing the record with ferricctl")
		out := ferricctl.Run(ctx, "node", "erase-record", uuid, "-f", "value", "-c", "Step", "-c", "By", "-c", "Device")
		Expect(out).To(Equal("erase_devices agent " + node.Disk + "\nerase_devices_metadata agent " + node.Disk + "\n"))
	}, SpecTimeout(4*cleanTimeout))

	It("cleans through the callback-only ramdisk: the conductor erases its disk over iSCSI on provide and after undeploy", func(ctx SpecContext) {
		node := theLab.Nodes[1]
		node.SetMode(lab.ModeCallback)
		uuid := enrol(ctx, node, "iscsi")
		provide(ctx, uuid)
		Expect(eraseRecord(ctx, uuid)).To(HaveEach(HaveKeyWithValue("by", "conductor")))

		deployImage(ctx, uuid, image)
		Expect(bytes.HasPrefix(readDisk(node), readFile(image))).To(BeTrue())
		undeployAndClean(ctx, node, uuid)
		Expect(steps.Zeroed(node.Disk)).To(BeTrue(), "no byte of the image is left")
		recs := eraseRecord(ctx, uuid)
		Expect(stepNames(recs)).To(Equal([]string{"erase_devices", "erase_devices_metadata"}))
		Expect(recs[0]).To(And(HaveKeyWithValue("by", "conductor"), HaveKeyWithValue("device", ContainSubstring(uuid)),
			HaveKeyWithValue("passes", BeNumerically("==", 2)), HaveKeyWithValue("bytes", BeNumerically("==", diskSize))))
		log, err := os.ReadFile(node.AgentLog())
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).To(ContainSubstring("Deploy info passed"), "the ramdisk only called back")
	}, SpecTimeout(4*cleanTimeout))

	It("runs only the chosen steps of a manual clean, with either ramdisk", func(ctx SpecContext) {
		agentNode, callbackNode := theLab.Nodes[0], theLab.Nodes[1]
		agentUUID, callbackUUID := nodeUUID(ctx, agentNode), nodeUUID(ctx, callbackNode)
		for _, uuid := range []string{agentUUID, callbackUUID} {
			steps.Provision(ctx, client, uuid, nodes.TargetManage)
			waitState(ctx, uuid, "manageable")
		}

		By("wiping only the metadata through the agent")
		middle := tenantData(agentNode)
		manualClean(ctx, agentUUID, "erase_devices_metadata")
		Expect(signatures(agentNode.Disk)).To(BeEmpty(), "no filesystem signature is left")
		Expect(readDisk(agentNode)[8<<20:9<<20]).To(Equal(middle), "the step chosen wipes metadata only")
		Expect(stepNames(eraseRecord(ctx, agentUUID))).To(Equal([]string{"erase_devices_metadata"}), "a new clean replaces the record")

		By("overwriting the whole disk through the callback-only ramdisk's target")
		tenantData(callbackNode)
		manualClean(ctx, callbackUUID, "erase_devices")
		Expect(steps.Zeroed(callbackNode.Disk)).To(BeTrue())
		Expect(stepNames(eraseRecord(ctx, callbackUUID))).To(Equal([]string{"erase_devices"}))
	}, SpecTimeout(3*cleanTimeout))

	It("fails the clean with the agent's error when its step fails", func(ctx SpecContext) {
		node := theLab.Nodes[0]
		uuid := nodeUUID(ctx, node)
		away := node.Disk + ".away"
		Expect(os.Rename(node.Disk, away)).To(Succeed())
		DeferCleanup(os.Rename, away, node.Disk)
		startClean(ctx, uuid, "erase_devices_metadata")
		n := waitFailed(ctx, uuid)
		Expect(n.LastError).To(And(ContainSubstring("Agent returned error for clean step"), ContainSubstring(node.Disk)))
		Expect(n.Maintenance).To(BeTrue())
		Expect(n.TargetProvisionState).To(Equal("manageable"))
		Expect(node.BMC.PowerState()).To(Equal(bmc.PowerOff), "the ramdisk is switched off")
		recoverNode(ctx, uuid)
	}, SpecTimeout(cleanTimeout))

	It("fails the clean when the agent's verification finds the disk changed after the erase", func(ctx SpecContext) {
		node := theLab.Nodes[0]
		uuid := nodeUUID(ctx, node)
		// The agent the lab boots next damages the disk before verifying.
		GinkgoT().Setenv("FERRIC_TEST_FAULT_CORRUPT_BEFORE_VERIFY", "1")
		startClean(ctx, uuid, "erase_devices")
		n := waitFailed(ctx, uuid)
		Expect(n.LastError).To(And(ContainSubstring("Agent returned error for clean step"), ContainSubstring("verification of "+node.Disk+" failed")))
		Expect(eraseRecord(ctx, uuid)).To(BeEmpty(), "nothing is recorded for an erase that did not verify")
		recoverNode(ctx, uuid)
	}, SpecTimeout(cleanTimeout))

	It("aborts a clean waiting for its ramdisk: clean failed without maintenance, the node off", func(ctx SpecContext) {
		node := theLab.Nodes[2]
		node.SetMode(lab.ModeSilent)
		uuid := enrol(ctx, node, "")
		steps.Provision(ctx, client, uuid, nodes.TargetProvide)
		waitState(ctx, uuid, "clean wait")
		Expect(node.BMC.PowerState()).To(Equal(bmc.PowerOn))
		steps.Provision(ctx, client, uuid, nodes.TargetAbort)
		n := waitState(ctx, uuid, "clean failed")
		Expect(n.LastError).To(Equal("By request, the clean operation was aborted"))
		Expect(n.Maintenance).To(BeFalse())
		Expect(node.BMC.PowerState()).To(Equal(bmc.PowerOff))
		Expect(node.PXEConfigPath()).NotTo(BeAnExistingFile())
		steps.Provision(ctx, client, uuid, nodes.TargetManage)
		waitState(ctx, uuid, "manageable")

		By("cleaning again with a ramdisk that answers: the aborted clean left nothing in the way")
		node.SetMode(lab.ModeAuto)
		provide(ctx, uuid)
	}, SpecTimeout(cleanTimeout))

	It("fails the clean when the agent stops heartbeating in the middle of a step", func(ctx SpecContext) {
		node := theLab.Nodes[3]
		uuid := enrol(ctx, node, "")
		growDisk(node, 2<<30)
		startClean(ctx, uuid, "erase_devices")
		eventuallyNode(ctx, uuid, 100*time.Millisecond, func(g Gomega, n *nodes.Node) {
			g.Expect(n.CleanStep).To(HaveKeyWithValue("step", "erase_devices"))
		})
		Expect(node.KillAgent()).To(Succeed())
		n := waitFailed(ctx, uuid)
		Expect(n.LastError).To(And(ContainSubstring("Timeout reached while cleaning the node"), ContainSubstring("erase_devices")))
		Expect(n.Maintenance).To(BeTrue())
		Expect(node.BMC.PowerState()).To(Equal(bmc.PowerOff))
		recoverNode(ctx, uuid)
	}, SpecTimeout(cleanTimeout))
})

// enrol creates an ipmi node for the lab node, with a port for its MAC,
// and brings it to manageable. vendor "iscsi" answers the callback-only
// ramdisk's pass_deploy_info.
func enrol(ctx context.Context, node *lab.Node, vendor string) string {
	GinkgoHelper()
	n, err := nodes.Create(ctx, client, nodes.CreateOpts{
		Name: node.Name, Driver: "ipmi", VendorInterface: vendor,
		DriverInfo: node.DriverInfo("file://"+deployKernel, "file://"+deployRamdisk),
		Properties: map[string]any{"cpus": 1, "memory_mb": 1024, "local_gb": 1},
	}).Extract()
	Expect(err).NotTo(HaveOccurred())
	_, err = ports.Create(ctx, client, ports.CreateOpts{NodeUUID: n.UUID, Address: node.MAC}).Extract()
	Expect(err).NotTo(HaveOccurred())
	steps.Provision(ctx, client, n.UUID, nodes.TargetManage)
	waitState(ctx, n.UUID, "manageable")
	return n.UUID
}

func nodeUUID(ctx context.Context, node *lab.Node) string {
	GinkgoHelper()
	n, err := nodes.Get(ctx, client, node.Name).Extract()
	Expect(err).NotTo(HaveOccurred())
	return n.UUID
}

// waitState waits for the node to be in state, unlocked; a node that
// ends in another state fails at once.
func waitState(ctx context.Context, uuid, state string) *nodes.Node {
	GinkgoHelper()
	return steps.EventuallyUnlockedIn(ctx, client, uuid, state, cleanTimeout)
}

// waitFailed waits for clean failed, with the tear down finished.
func waitFailed(ctx context.Context, uuid string) *nodes.Node {
	GinkgoHelper()
	return eventuallyNode(ctx, uuid, 250*time.Millisecond, func(g Gomega, n *nodes.Node) {
		g.Expect(n.ProvisionState).To(Equal("clean failed"))
		g.Expect(n.Reservation).To(BeEmpty())
		g.Expect(n.PowerState).To(Equal("power off"))
	})
}

// eventuallyNode reads the node every poll until ready passes for it,
// within cleanTimeout, and returns what it read last.
func eventuallyNode(ctx context.Context, uuid string, poll time.Duration, ready func(Gomega, *nodes.Node)) *nodes.Node {
	GinkgoHelper()
	return steps.EventuallyNode(ctx, client, uuid, cleanTimeout, poll, ready)
}

// provide cleans a manageable node into available and checks what a
// finished clean leaves.
func provide(ctx context.Context, uuid string) {
	GinkgoHelper()
	steps.Provision(ctx, client, uuid, nodes.TargetProvide)
	expectCleaned(waitState(ctx, uuid, "available"))
}

func expectCleaned(n *nodes.Node) {
	GinkgoHelper()
	Expect(n.LastError).To(BeEmpty())
	Expect(n.Maintenance).To(BeFalse())
	Expect(n.PowerState).To(Equal("power off"))
	Expect(n.CleanStep).To(BeEmpty())
	for _, k := range []string{"clean_steps", "clean_step_index", "cleaning_iscsi_target", "agent_url", "deploy_key_secret",
		"agent_erase_devices_iterations", "agent_cached_clean_steps", "clean_step_progress"} {
		Expect(n.DriverInternalInfo).NotTo(HaveKey(k))
	}
}

func deployImage(ctx context.Context, uuid, image string) {
	GinkgoHelper()
	steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/" + filepath.Base(image)})
	steps.Provision(ctx, client, uuid, nodes.TargetActive)
	n := waitState(ctx, uuid, "active")
	Expect(n.LastError).To(BeEmpty())
}

func undeployAndClean(ctx context.Context, node *lab.Node, uuid string) {
	GinkgoHelper()
	steps.Provision(ctx, client, uuid, nodes.TargetDeleted)
	expectCleaned(waitState(ctx, uuid, "available"))
	Expect(node.BMC.PowerState()).To(Equal(bmc.PowerOff))
	Expect(node.AgentRunning()).To(BeFalse())
	Expect(node.PXEConfigPath()).NotTo(BeAnExistingFile())
}

func startClean(ctx context.Context, uuid string, chosen ...string) {
	GinkgoHelper()
	var cs []nodes.CleanStep
	for _, s := range chosen {
		cs = append(cs, nodes.CleanStep{Interface: nodes.InterfaceDeploy, Step: s})
	}
	Expect(nodes.ChangeProvisionState(ctx, client, uuid, nodes.ProvisionStateOpts{Target: nodes.TargetClean, CleanSteps: cs}).ExtractErr()).To(Succeed())
}

func manualClean(ctx context.Context, uuid string, chosen ...string) {
	GinkgoHelper()
	startClean(ctx, uuid, chosen...)
	expectCleaned(waitState(ctx, uuid, "manageable"))
}

// recoverNode brings a failed node back: manageable, out of maintenance.
func recoverNode(ctx context.Context, uuid string) {
	GinkgoHelper()
	steps.Provision(ctx, client, uuid, nodes.TargetManage)
	waitState(ctx, uuid, "manageable")
	_, err := nodes.Update(ctx, client, uuid, nodes.UpdateOpts{nodes.UpdateOperation{Op: nodes.ReplaceOp,
		Path: "/maintenance", Value: false}}).Extract()
	Expect(err).NotTo(HaveOccurred())
}

func eraseRecord(ctx context.Context, uuid string) []map[string]any {
	GinkgoHelper()
	n, err := nodes.Get(ctx, client, uuid).Extract()
	Expect(err).NotTo(HaveOccurred())
	list, _ := n.DriverInternalInfo["erase_record"].([]any)
	out := []map[string]any{}
	for _, e := range list {
		out = append(out, e.(map[string]any))
	}
	return out
}

func stepNames(recs []map[string]any) []string {
	out := []string{}
	for _, r := range recs {
		out = append(out, r["step"].(string))
	}
	return out
}

// tenantData makes the node's disk look used: a filesystem, and random
// data at 8 MiB, returned.
func tenantData(node *lab.Node) []byte {
	GinkgoHelper()
	out, err := exec.Command("mkfs.ext4", "-q", "-F", "-L", "tenant", node.Disk).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s", out)
	data := make([]byte, 1<<20)
	_, _ = rand.Read(data)
	f, err := os.OpenFile(node.Disk, os.O_WRONLY, 0)
	Expect(err).NotTo(HaveOccurred())
	_, err = f.WriteAt(data, 8<<20)
	Expect(errors.Join(err, f.Close())).To(Succeed())
	Expect(signatures(node.Disk)).To(ContainSubstring("TYPE=ext4"))
	return data
}

// signatures is what blkid finds on the disk file, "" for nothing.
func signatures(path string) string {
	GinkgoHelper()
	out, err := exec.Command("blkid", "-p", "-o", "export", path).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 {
		return ""
	}
	Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// growDisk makes the node's disk bigger (sparse), so that its erase
// lasts long enough to be interrupted; the spec's end shrinks it back.
func growDisk(node *lab.Node, size int64) {
	GinkgoHelper()
	Expect(os.Truncate(node.Disk, size)).To(Succeed())
	DeferCleanup(func() {
		Expect(os.Truncate(node.Disk, 0)).To(Succeed())
		Expect(os.Truncate(node.Disk, diskSize)).To(Succeed())
	})
}

func readFile(path string) []byte {
	GinkgoHelper()
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	return b
}

func readDisk(node *lab.Node) []byte { return readFile(node.Disk) }
