package chaos_test

import (
	"context"
	"os"
	"syscall"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/db/dbtest"
)

// Each scenario has a label the chaos bench section selects it by.

// nodeCount and latency keep a spec within a minute or so: enough nodes
// that each conductor has work in flight when the fault hits, BMC calls
// slow enough that the work lasts.
const (
	nodeCount = 12
	latency   = 300 * time.Millisecond
)

var _ = Describe("A conductor killed with SIGKILL mid-clean", Label("kill-clean"), func() {
	It("has its cleaning nodes taken over and every accepted request ended", func(ctx SpecContext) {
		c := startCluster(ctx, "killclean", options{})
		uuids := c.createNodes(ctx, "killclean", nodeCount, latency, nil)
		c.run(ctx, "kill-clean", uuids, 2*time.Second, 20*time.Second, func() {
			Eventually(func() bool { return c.holds(ctx, c.a.Host, nodes.Cleaning) }).
				WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(BeTrue())
			Expect(c.a.Kill()).To(Succeed())
		})
	})
})

var _ = Describe("AMQP connections that stall, drop and reset", Label("amqp"), func() {
	It("lose no accepted request", func(ctx SpecContext) {
		c := startCluster(ctx, "amqp", options{})
		uuids := c.createNodes(ctx, "amqp", nodeCount, latency, nil)
		c.run(ctx, "amqp", uuids, 8*time.Second, 20*time.Second, func() {
			c.broker.SetDelay(200 * time.Millisecond)
			sleep(ctx, 4*time.Second)
			c.broker.SetDelay(0)
			c.broker.Stall()
			sleep(ctx, 8*time.Second)
			c.broker.Resume()
			sleep(ctx, 3*time.Second)
			GinkgoWriter.Printf("cut %d connections\n", c.broker.Cut())
			sleep(ctx, 5*time.Second)
			GinkgoWriter.Printf("reset %d connections\n", c.broker.Reset())
		})
		Expect(c.a.Exited()).To(BeFalse(), "conductor A survived")
		Expect(c.b.Exited()).To(BeFalse(), "conductor B survived")
	})
})

var _ = Describe("BMCs that stop answering under load", Label("bmc-hang"), func() {
	It("fail the operations they hold up, within their timeouts", func(ctx SpecContext) {
		c := startCluster(ctx, "bmchang", options{})
		uuids := c.createNodes(ctx, "bmchang", nodeCount, latency, nil)
		c.run(ctx, "bmc-hang", uuids, 8*time.Second, 25*time.Second, func() {
			hung := 0
			for _, u := range uuids[:nodeCount/2] {
				if c.patchBMC(ctx, u, 0.5) {
					hung++
				}
			}
			GinkgoWriter.Printf("%d BMCs made to hang on half their calls\n", hung)
			Expect(hung).To(BeNumerically(">", 0))
		})
	})
})

var _ = Describe("A conductor paused with SIGSTOP past its heartbeat timeout", Label("sigstop"), func() {
	It("has its nodes taken over and, resumed, writes nothing to them", func(ctx SpecContext) {
		c := startCluster(ctx, "sigstop", options{})
		uuids := c.createNodes(ctx, "sigstop", nodeCount, latency, nil)
		c.run(ctx, "sigstop", uuids, 2*time.Second, 20*time.Second, func() {
			Eventually(func() bool { return c.holds(ctx, c.a.Host, "") }).
				WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(BeTrue())
			Expect(c.a.Signal(syscall.SIGSTOP)).To(Succeed())
			Eventually(func() (bool, error) { return c.d.ConductorAlive(ctx, c.a.Host) }).
				WithTimeout(bounds.Takeover).WithPolling(500 * time.Millisecond).Should(BeFalse())
			Eventually(func() bool { return c.holds(ctx, c.a.Host, "") }).
				WithTimeout(bounds.Takeover).WithPolling(500*time.Millisecond).Should(BeFalse(), "A's locks are broken")
			sleep(ctx, 3*time.Second)
			Expect(c.a.Signal(syscall.SIGCONT)).To(Succeed())
		})
		Expect(c.a.Exited()).To(BeFalse(), "conductor A survived its pause")
	})
})

var _ = Describe("The database server restarted under load", Label("mariadb"), func() {
	It("loses no accepted request and leaves no half-applied change", func(ctx SpecContext) {
		dir, err := os.MkdirTemp("", "ferric-chaos-mariadb-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, dir)
		m, err := dbtest.StartMariaDB(ctx, dir)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(m.Kill)
		connection, err := m.CreateDatabase(ctx, "chaos")
		Expect(err).NotTo(HaveOccurred())
		c := startCluster(ctx, "mariadb", options{connection: connection})
		uuids := c.createNodes(ctx, "mariadb", nodeCount, latency, nil)
		c.run(ctx, "mariadb", uuids, 8*time.Second, 20*time.Second, func() {
			Expect(m.Stop()).To(Succeed())
			sleep(ctx, 2*time.Second)
			Expect(m.Start(ctx)).To(Succeed())
		})
		Expect(c.a.Exited()).To(BeFalse(), "conductor A survived")
		Expect(c.b.Exited()).To(BeFalse(), "conductor B survived")
	})
})

// holds tells whether host holds the lock of a node in state ("" for any).
func (c *cluster) holds(ctx context.Context, host string, state nodes.ProvisionState) bool {
	pages, err := nodes.ListDetail(c.client, nodes.ListOpts{}).AllPages(ctx)
	if err != nil {
		return false
	}
	all, err := nodes.ExtractNodes(pages)
	if err != nil {
		return false
	}
	for _, n := range all {
		if n.Reservation == host && (state == "" || n.ProvisionState == string(state)) {
			return true
		}
	}
	return false
}

// patchBMC makes a node's fake BMC never answer a share of its calls,
// retrying while the node is busy; false if it never got through.
func (c *cluster) patchBMC(ctx context.Context, uuid string, rate float64) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_, err := nodes.Update(ctx, c.client, uuid, nodes.UpdateOpts{
			nodes.UpdateOperation{Op: nodes.AddOp, Path: "/driver_info/fake_timeout_rate", Value: rate},
		}).Extract()
		if err == nil {
			return true
		}
		if !gophercloud.ResponseCodeIs(err, 409) {
			GinkgoWriter.Printf("patch %s: %v\n", uuid, err)
		}
		sleep(ctx, 200*time.Millisecond)
	}
	return false
}
