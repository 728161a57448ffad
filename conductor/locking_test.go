package conductor_test

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

var _ = Describe("Node locks and the worker pool", func() {
	onEveryBackend(func(e *env) {
		// blockDeploy makes the node's deploy hang until the returned
		// function is called (or the spec ends).
		blockDeploy := func(uuid string) func() {
			block := make(chan struct{})
			e.hw.Inject(uuid, fake.OpDeploy, fake.Fault{Block: block})
			closed := false
			unblock := func() {
				if !closed {
					closed = true
					close(block)
				}
			}
			DeferCleanup(unblock)
			return unblock
		}

		It("keeps the lock with the worker, makes others wait, then answers 409", func(ctx SpecContext) {
			c := e.start(ctx, "cond-"+e.group)
			api := e.api(c)
			n := e.createNode(ctx, states.Available)
			unblock := blockDeploy(n.UUID)
			Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: n.UUID})).To(Succeed())
			Expect(e.node(ctx, n.UUID).Reservation).To(Equal(ptr(c.Host())))

			patched := *e.node(ctx, n.UUID)
			patched.Description = ptr("late")
			started := time.Now()
			_, err := rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{Node: patched})
			Expect(err).To(haveKind(errs.KindNodeLocked, http.StatusConflict))
			Expect(err.Error()).To(ContainSubstring("is locked by host " + c.Host()))
			// Three tries, 50 ms apart: it waited for the holder.
			Expect(time.Since(started)).To(BeNumerically(">=", 100*time.Millisecond))

			unblock()
			Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Active))
			Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
			Expect(e.node(ctx, n.UUID).Description).To(BeNil())
		})

		It("releases the lock and records the failure when a worker panics", func(ctx SpecContext) {
			c := e.start(ctx, "cond-"+e.group)
			n := e.createNode(ctx, states.Available)
			e.hw.Inject(n.UUID, fake.OpDeploy, fake.Fault{Panic: "kaboom"})
			Expect(rpc.DoNodeDeploy.Call(ctx, e.api(c), rpc.DeployArgs{NodeID: n.UUID})).To(Succeed())
			Eventually(func() string { return str(e.node(ctx, n.UUID).LastError) }).Should(
				Equal("Async execution of do_node_deploy failed with error: kaboom"))
			got := e.node(ctx, n.UUID)
			Expect(got.Reservation).To(BeNil())
			Expect(got.State()).To(Equal(states.DeployFail))
		})

		It("clears the pending power target when a power action panics", func(ctx SpecContext) {
			c := e.start(ctx, "cond-"+e.group)
			n := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.PowerState = ptr(states.PowerOff) })
			e.hw.Inject(n.UUID, fake.OpSetPowerState, fake.Fault{Panic: "zap"})
			Expect(rpc.ChangeNodePowerState.Call(ctx, e.api(c), rpc.ChangePowerStateArgs{NodeID: n.UUID, NewState: states.PowerOn})).To(Succeed())
			Eventually(func() []any {
				got := e.node(ctx, n.UUID)
				return []any{str(got.LastError), got.TargetPowerState, got.Reservation}
			}).Should(Equal([]any{"Async execution of node_power_action failed with error: zap", (*string)(nil), (*string)(nil)}))
			Expect(e.provisionState(ctx, n.UUID)()).To(Equal(states.Manageable))
		})

		It("refuses work with 503 when the pool is full and restores the node", func(ctx SpecContext) {
			c := e.start(ctx, "cond-"+e.group, func(cfg *config.Config) { cfg.Conductor.WorkersPoolSize = 1 })
			api := e.api(c)
			busy := e.createNode(ctx, states.Available)
			unblock := blockDeploy(busy.UUID)
			Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: busy.UUID})).To(Succeed())

			n := e.createNode(ctx, states.Available, func(n *model.Node) {
				n.PowerState = ptr(states.PowerOff)
				n.LastError = ptr("old news")
			})
			Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: n.UUID})).To(haveKind(errs.KindNoFreeConductorWorker, http.StatusServiceUnavailable))
			got := e.node(ctx, n.UUID)
			Expect(got.State()).To(Equal(states.Available))
			Expect(got.TargetProvisionState).To(BeNil())
			Expect(str(got.LastError)).To(Equal("No free conductor workers available"))
			Expect(got.Reservation).To(BeNil())

			Expect(rpc.ChangeNodePowerState.Call(ctx, api, rpc.ChangePowerStateArgs{NodeID: n.UUID, NewState: states.PowerOn})).To(
				haveKind(errs.KindNoFreeConductorWorker, http.StatusServiceUnavailable))
			got = e.node(ctx, n.UUID)
			Expect(got.TargetPowerState).To(BeNil())
			Expect(str(got.PowerState)).To(Equal(states.PowerOff))
			Expect(got.Reservation).To(BeNil())

			unblock()
			Eventually(e.provisionState(ctx, busy.UUID)).Should(Equal(states.Active))
			Eventually(func() error { return rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: n.UUID}) }).Should(Succeed())
			Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Active))
		})

		It("waits for running workers on Stop, then releases its locks and goes offline", func(ctx SpecContext) {
			c := e.start(ctx, "cond-"+e.group)
			n := e.createNode(ctx, states.Available)
			unblock := blockDeploy(n.UUID)
			Expect(rpc.DoNodeDeploy.Call(ctx, e.api(c), rpc.DeployArgs{NodeID: n.UUID})).To(Succeed())
			stopped := make(chan error, 1)
			go func() { stopped <- c.Stop(context.Background()) }()
			Consistently(stopped, 300*time.Millisecond).ShouldNot(Receive())
			unblock()
			Eventually(stopped).Should(Receive(BeNil()))
			got := e.node(ctx, n.UUID)
			Expect(got.State()).To(Equal(states.Active))
			Expect(got.Reservation).To(BeNil())
			row, err := e.store.GetConductor(ctx, c.Host())
			Expect(err).NotTo(HaveOccurred())
			Expect(row.Online).To(BeFalse())
		})

		It("cancels workers that outlive the Stop deadline and still releases their locks", func(ctx SpecContext) {
			c := e.start(ctx, "cond-"+e.group)
			n := e.createNode(ctx, states.Available)
			blockDeploy(n.UUID)
			Expect(rpc.DoNodeDeploy.Call(ctx, e.api(c), rpc.DeployArgs{NodeID: n.UUID})).To(Succeed())
			stopCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			Expect(c.Stop(stopCtx)).To(Succeed())
			got := e.node(ctx, n.UUID)
			Expect(got.Reservation).To(BeNil())
			Expect(got.State()).To(Equal(states.DeployFail))
		})

		It("on start, aborts its own pending power operations, frees its locks and fails stuck nodes", func(ctx SpecContext) {
			host := "cond-" + e.group
			pending := e.createNode(ctx, states.Active, func(n *model.Node) { n.TargetPowerState = ptr(states.PowerOff) })
			_, err := e.store.ReserveNode(ctx, pending.UUID, host, 1)
			Expect(err).NotTo(HaveOccurred())
			deploying := e.createNode(ctx, states.Deploying, func(n *model.Node) { n.TargetProvisionState = ptr(string(states.Active)) })
			verifying := e.createNode(ctx, states.Verifying, func(n *model.Node) { n.TargetProvisionState = ptr(string(states.Manageable)) })
			deleting := e.createNode(ctx, states.Deleting, func(n *model.Node) { n.TargetProvisionState = ptr(string(states.Available)) })
			waiting := e.createNode(ctx, states.DeployWait, func(n *model.Node) { n.TargetProvisionState = ptr(string(states.Active)) })
			cleaning := e.createNode(ctx, states.Cleaning, func(n *model.Node) { n.TargetProvisionState = ptr(string(states.Available)) })

			e.start(ctx, host)

			got := e.node(ctx, pending.UUID)
			Expect(got.Reservation).To(BeNil())
			Expect(got.TargetPowerState).To(BeNil())
			Expect(str(got.LastError)).To(Equal("Pending power operation was aborted due to conductor restart"))

			got = e.node(ctx, deploying.UUID)
			Expect(got.State()).To(Equal(states.DeployFail))
			Expect(str(got.LastError)).To(Equal("The deploying state can't be resumed by conductor " + host + ". Moving to fail state."))
			Expect(got.Reservation).To(BeNil())
			Expect(e.provisionState(ctx, verifying.UUID)()).To(Equal(states.Enroll))
			Expect(e.provisionState(ctx, deleting.UUID)()).To(Equal(states.Error))
			Expect(e.provisionState(ctx, waiting.UUID)()).To(Equal(states.DeployWait))
			Eventually(e.reservation(ctx, cleaning.UUID)).Should(BeNil())
			got = e.node(ctx, cleaning.UUID)
			Expect(got.State()).To(Equal(states.CleanFail))
			Expect(got.Maintenance).To(BeTrue(), "a failed clean puts the node into maintenance")
			Expect(str(got.Fault)).To(Equal("clean failure"))
		})
	})
})
