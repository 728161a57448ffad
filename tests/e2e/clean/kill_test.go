package clean_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab"
	"github.com/ferricbm/ferric/tests/lab/bmc"
)

// These specs enrol lab nodes of their own, so that each runs alone
// under its label: the chaos bench repeats them (tests/bench, section
// chaos, scenarios lab-kill-clean and lab-kill-deploy). The invariant
// checker of the chaos suite watches the database while they run.
var _ = Describe("Conductors killed with SIGKILL while they work on lab nodes", func() {
	It("fails, never leaves in cleaning, a node whose conductor is killed in the middle of its erase", Label("lab-kill-clean"), func(ctx SpecContext) {
		node := theLab.Nodes[4]
		node.SetMode(lab.ModeCallback)
		uuid := enrol(ctx, node, "iscsi")
		growDisk(node, 2<<30)
		checker := steps.WatchInvariants(ctx, connection, timings)
		startClean(ctx, uuid, "erase_devices")
		checker.Accepted(uuid, "clean")
		i, owner := killHolder(ctx, uuid, 100*time.Millisecond, func(g Gomega, n *nodes.Node) {
			g.Expect(n.ProvisionState).To(Equal("cleaning"))
			g.Expect(n.CleanStep).To(HaveKeyWithValue("step", "erase_devices"))
		})

		n := waitFailed(ctx, uuid)
		Expect(n.LastError).To(ContainSubstring("Operation was aborted due to conductor take over"))
		Expect(n.Maintenance).To(BeTrue())
		Expect(n.Reservation).NotTo(Equal(owner))
		Eventually(node.BMC.PowerState).WithContext(ctx).Should(Equal(bmc.PowerOff), "the survivor switches the ramdisk off")

		By("restarting " + owner)
		conductors[i] = startConductor(ctx, conductors[i].Process.Name)
		recoverNode(ctx, uuid)
		checker.Accepted(uuid, "manage")
		steps.ExpectInvariantsKept(ctx, checker, "lab-kill-clean", "erase cut, node recovered")
	}, SpecTimeout(2*cleanTimeout))

	It("fails, never leaves in deploying, a node whose conductor is killed while it writes the image, and deploys it again", Label("lab-kill-deploy"), func(ctx SpecContext) {
		node := theLab.Nodes[5]
		uuid := enrol(ctx, node, "")
		provide(ctx, uuid)
		growDisk(node, 1<<30)
		// Large enough that writing it over iSCSI takes a while.
		big := filepath.Join(workDir, "served", "big.raw")
		steps.RandomFile(big, 512<<20)
		DeferCleanup(os.Remove, big)
		head := filepath.Join(workDir, "big-head.raw")
		Expect(os.WriteFile(head, readFile(big)[:1<<20], 0o644)).To(Succeed())

		steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/" + filepath.Base(big)})
		checker := steps.WatchInvariants(ctx, connection, timings)
		steps.Provision(ctx, client, uuid, nodes.TargetActive)
		checker.Accepted(uuid, "active")
		i, owner := killHolder(ctx, uuid, 50*time.Millisecond, func(g Gomega, n *nodes.Node) {
			g.Expect(n.ProvisionState).To(Equal("deploying"))
			g.Expect(steps.DiskStartsWith(node.Disk, head)).To(BeTrue(), "the image is being written")
		})

		n := waitState(ctx, uuid, "deploy failed")
		Expect(n.LastError).To(ContainSubstring("Operation was aborted due to conductor take over"))
		Expect(n.TargetProvisionState).To(Equal("active"), "the target stays, as Ironic keeps it")

		By("deploying it again, with " + owner + " still dead")
		steps.Provision(ctx, client, uuid, nodes.TargetActive)
		checker.Accepted(uuid, "active")
		n = waitState(ctx, uuid, "active")
		Expect(n.LastError).To(BeEmpty())
		Expect(bytes.Equal(readDisk(node)[:512<<20], readFile(big))).To(BeTrue(), "the whole image is on the disk")

		By("restarting " + owner)
		conductors[i] = startConductor(ctx, conductors[i].Process.Name)
		steps.ExpectInvariantsKept(ctx, checker, "lab-kill-deploy", "image write cut, node deployed again")
	}, SpecTimeout(3*cleanTimeout))
})

// killHolder waits until ready passes for the node, then kills the
// conductor holding its lock, and returns that conductor's index and host.
func killHolder(ctx context.Context, uuid string, poll time.Duration, ready func(Gomega, *nodes.Node)) (int, string) {
	GinkgoHelper()
	owner := eventuallyNode(ctx, uuid, poll, ready).Reservation
	i := slices.IndexFunc(conductors, func(c *harness.Service) bool { return c.Host == owner })
	Expect(i).NotTo(Equal(-1), "the node is locked by a conductor of the suite, %q", owner)
	By("killing " + owner + " while it works on the node")
	Expect(conductors[i].Process.Kill()).To(Succeed())
	return i, owner
}
