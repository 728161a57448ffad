package conductor_test

import (
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

var _ = Describe("A conductor resumed after its heartbeat lapsed", func() {
	onEveryBackend(func(e *env) {
		It("registers in a new epoch, so its workers of the lapsed one cannot write to nodes it locks again", func(ctx SpecContext) {
			host := "p-" + e.group
			c := e.start(ctx, host)
			block := make(chan struct{})
			var unblock sync.Once
			open := func() { unblock.Do(func() { close(block) }) }
			DeferCleanup(open)

			// x is being deployed when the conductor is paused.
			x := e.createNode(ctx, states.Available)
			e.hw.Inject(x.UUID, fake.OpDeploy, fake.Fault{Block: block})
			Expect(rpc.DoNodeDeploy.Call(ctx, e.api(c), rpc.DeployArgs{NodeID: x.UUID})).To(Succeed())
			Eventually(e.reservation(ctx, x.UUID)).Should(HaveValue(Equal(host)))
			first, err := e.store.GetConductor(ctx, host)
			Expect(err).NotTo(HaveOccurred())

			// A survivor breaks the lock of the silent conductor; then
			// the conductor wakes up and its heartbeat finds the lapse.
			Expect(e.store.ReleaseNode(ctx, x.UUID, host, 0)).To(Succeed())
			c.LapseHeartbeat()
			var second int64
			Eventually(func() (int64, error) {
				row, err := e.store.GetConductor(ctx, host)
				if err != nil {
					return 0, err
				}
				second = row.Epoch
				return second, nil
			}).Should(BeNumerically(">", first.Epoch))

			// The conductor locks x again, in its current epoch; the
			// worker of the lapsed epoch finishes its deploy, and none
			// of it reaches the node.
			Eventually(func() error {
				_, err := e.store.ReserveNode(ctx, x.UUID, host, second)
				return err
			}).Should(Succeed())
			before := e.provisionState(ctx, x.UUID)()
			open()
			Consistently(func() []any {
				got := e.node(ctx, x.UUID)
				return []any{got.State(), str(got.Reservation)}
			}, time.Second).Should(Equal([]any{before, host}))
			Expect(e.store.ReleaseNode(ctx, x.UUID, host, second)).To(Succeed())
		})
	})
})

var _ = Describe("A lock asked for while the conductor's heartbeat has lapsed", func() {
	onEveryBackend(func(e *env) {
		It("is taken once the conductor has registered again, in the new epoch, not refused with 503", func(ctx SpecContext) {
			host := "q-" + e.group
			c := e.start(ctx, host)
			n := e.createNode(ctx, states.Manageable)
			first, err := e.store.GetConductor(ctx, host)
			Expect(err).NotTo(HaveOccurred())

			c.LapseHeartbeat()
			Expect(rpc.SetBootDevice.Call(ctx, e.api(c), rpc.SetBootDeviceArgs{NodeID: n.UUID, Device: "pxe"})).To(Succeed())
			second, err := e.store.GetConductor(ctx, host)
			Expect(err).NotTo(HaveOccurred())
			Expect(second.Epoch).To(BeNumerically(">", first.Epoch), "the lock waited for the new registration")
			Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
		})
	})
})

var _ = Describe("A node left in a worker's state without a worker", func() {
	onEveryBackend(func(e *env) {
		It("is failed by the periodic orphan check, as a restart would", func(ctx SpecContext) {
			e.start(ctx, "s-"+e.group, withPeriodicTasks)
			// The write that moved the node to deploying landed, the
			// answer that would have started its worker was lost.
			x := e.createNode(ctx, states.Deploying, func(n *model.Node) { n.TargetProvisionState = ptr(string(states.Active)) })
			Eventually(e.provisionState(ctx, x.UUID)).WithTimeout(20 * time.Second).Should(Equal(states.DeployFail))
			Eventually(e.reservation(ctx, x.UUID)).WithTimeout(10 * time.Second).Should(BeNil())
		})
	})
})
