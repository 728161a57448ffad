package resilience_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/invariant"
)

// bounds are the invariant checker's: how long after a conductor's death
// its locks and nodes may stay with it (Takeover), and how long a node may
// stay in a transitional state (Transition).
var bounds = invariant.BoundsFor(harness.FastTimings)

// A node at rest is in a stable state with no target, or in a failure
// state, which keeps the target it failed to reach.
var (
	stableStates  = []string{string(nodes.Enroll), string(nodes.Manageable), string(nodes.Available), string(nodes.Active), string(nodes.Error)}
	failureStates = []string{string(nodes.DeployFail), string(nodes.CleanFail), string(nodes.InspectFail), string(nodes.AdoptFail)}
)

// accepted records which nodes had a request answered 202.
type accepted struct {
	mu  sync.Mutex
	set map[string]bool
}

func (a *accepted) add(u string) { a.mu.Lock(); a.set[u] = true; a.mu.Unlock() }
func (a *accepted) has(u string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.set[u]
}
func (a *accepted) len() int { a.mu.Lock(); defer a.mu.Unlock(); return len(a.set) }

var _ = Describe("A conductor killed with SIGKILL during deployments", Label("kill-deploy"), func() {
	It("has its locks released and its nodes taken over by the survivor", func(ctx SpecContext) {
		c := startCluster(ctx, "kill")
		const n = 50
		uuids := steps.CreateAvailable(ctx, c.client, "kill", n)

		By("deploying all nodes and killing conductor A half-way through the requests")
		acc := &accepted{set: map[string]bool{}}
		var killed sync.Once
		var killedAt time.Time
		steps.Parallel(8, uuids, func(u string) {
			err := nodes.ChangeProvisionState(ctx, c.client, u, nodes.ProvisionStateOpts{Target: nodes.TargetActive}).ExtractErr()
			if err == nil {
				acc.add(u)
				c.checker.Accepted(u, "active")
			}
			if acc.len() >= n/2 {
				killed.Do(func() {
					Expect(c.a.Kill()).To(Succeed())
					killedAt = time.Now()
				})
			}
		})
		killed.Do(func() {
			Expect(c.a.Kill()).To(Succeed())
			killedAt = time.Now()
		})
		GinkgoWriter.Printf("%d of %d deploy requests accepted around the kill\n", acc.len(), n)

		By("seeing conductor A reported dead")
		Eventually(func() (bool, error) { return c.d.ConductorAlive(ctx, c.a.Host) }).
			WithTimeout(bounds.Takeover).WithPolling(500 * time.Millisecond).Should(BeFalse())

		By("seeing no lock held by conductor A once the heartbeat timeout has passed")
		Eventually(func(g Gomega) {
			for _, u := range uuids {
				node, err := nodes.Get(ctx, c.client, u).Extract()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(node.Reservation).NotTo(Equal(c.a.Host), "node %s", u)
			}
		}).WithTimeout(until(killedAt.Add(bounds.Takeover))).WithPolling(time.Second).Should(Succeed())

		By("seeing every node leave its transitional state")
		Eventually(func(g Gomega) {
			for _, u := range uuids {
				node, err := nodes.Get(ctx, c.client, u).Extract()
				g.Expect(err).NotTo(HaveOccurred())
				if !slices.Contains(failureStates, node.ProvisionState) {
					g.Expect(stableStates).To(ContainElement(node.ProvisionState), "node %s", u)
					g.Expect(node.TargetProvisionState).To(BeEmpty(), "node %s", u)
				}
				if steps.AtLeast(c.client, 49) {
					g.Expect(node.Conductor).To(Equal(c.b.Host), "node %s maps to the survivor", u)
				}
			}
		}).WithTimeout(until(killedAt.Add(bounds.Transition))).WithPolling(time.Second).Should(Succeed())

		By("finishing every deployment on the survivor")
		steps.Parallel(8, uuids, func(u string) {
			node, err := nodes.Get(ctx, c.client, u).Extract()
			Expect(err).NotTo(HaveOccurred())
			switch node.ProvisionState {
			case string(nodes.Active):
				return
			case string(nodes.Available), string(nodes.DeployFail):
				steps.Provision(ctx, c.client, u, nodes.TargetActive)
				c.checker.Accepted(u, "active")
			default:
				Fail("node " + u + " ended in " + node.ProvisionState)
			}
			waitState(ctx, u, c, nodes.Active)
		})

		By("seeing the survivor own every deployed node, including those A deployed")
		survivor, err := c.registry.ConductorID(ctx, c.b.Host)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			for _, u := range uuids {
				id, ok, err := c.registry.DeployedBy(ctx, u)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(ok).To(BeTrue(), "node %s", u)
				g.Expect(id).To(Equal(survivor), "node %s", u)
			}
		}).WithTimeout(bounds.Takeover).WithPolling(time.Second).Should(Succeed())

		By("tearing every node down on the survivor")
		steps.Parallel(8, uuids, func(u string) {
			steps.Provision(ctx, c.client, u, nodes.TargetDeleted)
			c.checker.Accepted(u, "deleted")
			steps.EventuallyStable(ctx, c.client, u, nodes.Available)
		})
		steps.ExpectInvariantsKept(ctx, c.checker, "kill-deploy", fmt.Sprintf("%d of %d deploys accepted around the kill", acc.len(), n))
	})
})

var _ = Describe("The message broker restarted while requests flow", Serial, Label("broker-restart"), func() {
	It("loses no accepted request and serves new ones once it is back", func(ctx SpecContext) {
		c := startCluster(ctx, "broker")
		const n = 30
		uuids := make([]string, n)
		for i := range uuids {
			uuids[i] = steps.CreateNode(ctx, c.client, steps.Name("broker", i)).UUID
		}
		steps.Parallel(8, uuids, func(u string) {
			steps.Provision(ctx, c.client, u, nodes.TargetManage)
			steps.EventuallyStable(ctx, c.client, u, nodes.Manageable)
		})
		DeferCleanup(func(ctx SpecContext) {
			Expect(harness.StartBroker(ctx)).To(Succeed(), "the shared broker is restored")
		}, NodeTimeout(2*time.Minute))

		By("asking for provide on each node in turn while the broker is stopped and started")
		acc := &accepted{set: map[string]bool{}}
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			for _, u := range uuids {
				rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				err := nodes.ChangeProvisionState(rctx, c.client, u, nodes.ProvisionStateOpts{Target: nodes.TargetProvide}).ExtractErr()
				cancel()
				if err == nil {
					acc.add(u)
					c.checker.Accepted(u, "provide")
				} else {
					c.checker.Unanswered(u, "provide")
					GinkgoWriter.Printf("provide %s not accepted: %v\n", u, err)
				}
				time.Sleep(150 * time.Millisecond)
			}
		}()
		Eventually(acc.len).WithTimeout(time.Minute).Should(BeNumerically(">=", n/4))
		Expect(harness.StopBroker(ctx)).To(Succeed())
		time.Sleep(2 * time.Second)
		Expect(harness.StartBroker(ctx)).To(Succeed())
		Eventually(done).WithTimeout(6 * time.Minute).Should(BeClosed())
		GinkgoWriter.Printf("%d of %d provide requests accepted across the restart\n", acc.len(), n)

		By("seeing every accepted request land in available")
		for _, u := range uuids {
			if acc.has(u) {
				steps.EventuallyStable(ctx, c.client, u, nodes.Available)
			}
		}

		By("seeing both conductors survive and serve the requests that were refused")
		Expect(c.a.Exited()).To(BeFalse(), "conductor A survived the broker restart")
		Expect(c.b.Exited()).To(BeFalse(), "conductor B survived the broker restart")
		for _, u := range uuids {
			if acc.has(u) {
				continue
			}
			Eventually(func() error {
				node, err := nodes.Get(ctx, c.client, u).Extract()
				if err != nil {
					return err
				}
				if node.ProvisionState != string(nodes.Manageable) {
					return nil
				}
				if err := nodes.ChangeProvisionState(ctx, c.client, u, nodes.ProvisionStateOpts{Target: nodes.TargetProvide}).ExtractErr(); err != nil {
					return err
				}
				c.checker.Accepted(u, "provide")
				return nil
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "provide %s after the restart", u)
			steps.EventuallyStable(ctx, c.client, u, nodes.Available)
		}
		Expect(c.d.ConductorAlive(ctx, c.a.Host)).To(BeTrue())
		Expect(c.d.ConductorAlive(ctx, c.b.Host)).To(BeTrue())
		steps.ExpectInvariantsKept(ctx, c.checker, "broker-restart", fmt.Sprintf("%d of %d provides accepted across the restart", acc.len(), n))
	})
})

// waitState waits for a stable state, tolerating a last_error left by the
// failure this suite provoked.
func waitState(ctx context.Context, u string, c *cluster, state nodes.ProvisionState) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		node, err := nodes.Get(ctx, c.client, u).Extract()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(node.ProvisionState).To(Equal(string(state)), "node %s (last_error %q)", u, node.LastError)
		g.Expect(node.TargetProvisionState).To(BeEmpty())
		g.Expect(node.Reservation).To(BeEmpty())
	}).WithTimeout(steps.StateTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// until is the time left before t, at least a second so that a bound that
// has already passed still gets one check.
func until(t time.Time) time.Duration {
	return max(time.Until(t), time.Second)
}
