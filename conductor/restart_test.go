package conductor_test

import (
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

var _ = Describe("A conductor restarted under the same hostname", func() {
	onEveryBackend(func(e *env) {
		It("fences the workers of its previous run: they hold the hostname, not the epoch", func(ctx SpecContext) {
			host := "r-" + e.group
			old := e.start(ctx, host)
			DeferCleanup(old.WaitWorkers)
			block := make(chan struct{})
			var unblock sync.Once
			open := func() { unblock.Do(func() { close(block) }) }
			DeferCleanup(open)

			// The first run is deploying x when it hangs.
			x := e.createNode(ctx, states.Available)
			e.hw.Inject(x.UUID, fake.OpDeploy, fake.Fault{Block: block})
			Expect(rpc.DoNodeDeploy.Call(ctx, e.api(old), rpc.DeployArgs{NodeID: x.UUID})).To(Succeed())
			Eventually(e.reservation(ctx, x.UUID)).Should(HaveValue(Equal(host)))
			first, err := e.store.GetConductor(ctx, host)
			Expect(err).NotTo(HaveOccurred())
			old.Kill()

			// The second run registers anew, and works on x under the
			// same hostname.
			e.start(ctx, host)
			second, err := e.store.GetConductor(ctx, host)
			Expect(err).NotTo(HaveOccurred())
			Expect(second.Epoch).To(BeNumerically(">", first.Epoch))
			Eventually(func() error {
				_, err := e.store.ReserveNode(ctx, x.UUID, host, second.Epoch)
				return err
			}).Should(Succeed())
			before := e.provisionState(ctx, x.UUID)()

			// The first run's worker wakes up and finishes its deploy:
			// none of it reaches the node the second run holds.
			open()
			Consistently(func() []any {
				got := e.node(ctx, x.UUID)
				return []any{got.State(), str(got.Reservation)}
			}, time.Second).Should(Equal([]any{before, host}))
			Expect(e.store.ReleaseNode(ctx, x.UUID, host, second.Epoch)).To(Succeed())
		})
	})
})
