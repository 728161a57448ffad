package conductor_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/pkg/hashring"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

var _ = Describe("Two conductors sharing a database", func() {
	onEveryBackend(func(e *env) {
		It("lets the survivor take over a dead conductor's nodes, never its own", func(ctx SpecContext) {
			a := e.start(ctx, "a-"+e.group, withPeriodicTasks)
			DeferCleanup(a.WaitWorkers)
			b := e.start(ctx, "b-"+e.group, withPeriodicTasks)
			rowA, err := e.store.GetConductor(ctx, a.Host())
			Expect(err).NotTo(HaveOccurred())
			rowB, err := e.store.GetConductor(ctx, b.Host())
			Expect(err).NotTo(HaveOccurred())

			block := make(chan struct{})
			DeferCleanup(func() { close(block) })

			// A is deploying x when it dies, holding the lock.
			x := e.createNode(ctx, states.Available)
			e.hw.Inject(x.UUID, fake.OpDeploy, fake.Fault{Block: block})
			Expect(rpc.DoNodeDeploy.Call(ctx, e.api(a), rpc.DeployArgs{NodeID: x.UUID})).To(Succeed())
			// A had a power action pending on y.
			y := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.TargetPowerState = ptr(states.PowerOn) })
			_, err = e.store.ReserveNode(ctx, y.UUID, a.Host(), 1)
			Expect(err).NotTo(HaveOccurred())
			// w waits for its ramdisk, which will call back to whoever
			// owns it next.
			w := e.createNode(ctx, states.CleanWait, func(n *model.Node) { n.TargetProvisionState = ptr(string(states.Available)) })
			_, err = e.store.ReserveNode(ctx, w.UUID, a.Host(), 1)
			Expect(err).NotTo(HaveOccurred())
			// A deployed z, which the ring gives to A while A lives.
			ring := hashring.New([]string{a.Host(), b.Host()}, 5)
			zUUID := newUUID()
			for owner, _ := ring.Get(zUUID); owner != a.Host(); owner, _ = ring.Get(zUUID) {
				zUUID = newUUID()
			}
			z := e.createNode(ctx, states.Active, func(n *model.Node) { n.UUID, n.ConductorAffinity = zUUID, &rowA.ID })
			Consistently(func() *int64 { return e.node(ctx, z.UUID).ConductorAffinity }, 500*time.Millisecond).Should(Equal(&rowA.ID))
			// B itself is busy deploying v.
			v := e.createNode(ctx, states.Available)
			e.hw.Inject(v.UUID, fake.OpDeploy, fake.Fault{Block: block})
			Expect(rpc.DoNodeDeploy.Call(ctx, e.api(b), rpc.DeployArgs{NodeID: v.UUID})).To(Succeed())

			a.Kill()

			Eventually(func() []any {
				got := e.node(ctx, x.UUID)
				return []any{got.State(), str(got.LastError), got.Reservation}
			}).Should(Equal([]any{states.DeployFail, "Operation was aborted due to conductor take over", (*string)(nil)}))
			Eventually(func() []any {
				got := e.node(ctx, y.UUID)
				return []any{got.TargetPowerState, str(got.LastError), got.Reservation}
			}).Should(Equal([]any{(*string)(nil), "Pending power operation was aborted due to conductor take over", (*string)(nil)}))
			Eventually(e.reservation(ctx, w.UUID)).Should(BeNil())
			Expect(e.provisionState(ctx, w.UUID)()).To(Equal(states.CleanWait))
			Eventually(func() *int64 { return e.node(ctx, z.UUID).ConductorAffinity }).Should(Equal(&rowB.ID))
			// The take-over worker records the affinity, then lets go.
			Eventually(e.reservation(ctx, z.UUID)).Should(BeNil())

			Consistently(func() []any {
				got := e.node(ctx, v.UUID)
				return []any{got.State(), str(got.Reservation)}
			}, 500*time.Millisecond).Should(Equal([]any{states.Deploying, b.Host()}))
		})
	})
})
