package conductor_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

var _ = Describe("Periodic tasks", func() {
	onEveryBackend(func(e *env) {
		It("fails nodes that waited too long for their ramdisk, and only those", func(ctx SpecContext) {
			short := 300 * time.Millisecond
			e.startWith(ctx, "cond-"+e.group, nil, withPeriodicTasks, func(cfg *config.Config) {
				cfg.Conductor.DeployCallbackTimeout, cfg.Conductor.CleanCallbackTimeout = short, short
				cfg.Conductor.InspectWaitTimeout, cfg.Conductor.RescueCallbackTimeout = short, short
			})
			dw := e.createNode(ctx, states.DeployWait, func(n *model.Node) { n.TargetProvisionState = ptr(string(states.Active)) })
			cw := e.createNode(ctx, states.CleanWait, func(n *model.Node) {
				n.TargetProvisionState = ptr(string(states.Manageable))
				n.CleanStep = model.JSONObject{"interface": "deploy", "step": "erase_devices"}
			})
			iw := e.createNode(ctx, states.InspectWait, func(n *model.Node) { n.TargetProvisionState = ptr(string(states.Manageable)) })
			rw := e.createNode(ctx, states.RescueWait, func(n *model.Node) { n.TargetProvisionState = ptr(string(states.Rescue)) })
			maint := e.createNode(ctx, states.DeployWait, func(n *model.Node) { n.Maintenance = true })
			locked := e.createNode(ctx, states.DeployWait)
			_, err := e.store.ReserveNode(ctx, locked.UUID, "busy-host", 1)
			Expect(err).NotTo(HaveOccurred())
			elsewhere := e.createNode(ctx, states.DeployWait, func(n *model.Node) { n.ConductorGroup = e.group + "-other" })
			DeferCleanup(func() { _ = e.store.DestroyNode(ctx, elsewhere.UUID) })

			Eventually(e.provisionState(ctx, dw.UUID)).Should(Equal(states.DeployFail))
			got := e.node(ctx, dw.UUID)
			Expect(str(got.LastError)).To(Equal("Timeout reached while waiting for callback for node " + dw.UUID))
			Expect(got.TargetState()).To(Equal(states.Active))

			Eventually(e.provisionState(ctx, cw.UUID)).Should(Equal(states.CleanFail))
			got = e.node(ctx, cw.UUID)
			Expect(got.TargetState()).To(Equal(states.Manageable))
			Expect(got.Maintenance).To(BeTrue())
			Expect(str(got.Fault)).To(Equal("clean failure"))
			Expect(str(got.LastError)).To(HavePrefix("Timeout reached while cleaning the node. Please check if the ramdisk responsible for the cleaning is running on the node. Failed on step {"))
			Expect(str(got.LastError)).To(ContainSubstring("erase_devices"))
			Expect(got.CleanStep).To(BeEmpty())

			Eventually(e.provisionState(ctx, iw.UUID)).Should(Equal(states.InspectFail))
			Expect(str(e.node(ctx, iw.UUID).LastError)).To(Equal("timeout reached while inspecting the node"))
			Eventually(e.provisionState(ctx, rw.UUID)).Should(Equal(states.RescueFail))
			Expect(str(e.node(ctx, rw.UUID).LastError)).To(Equal("Timeout reached while waiting for rescue ramdisk callback for node " + rw.UUID))

			for _, n := range []*model.Node{dw, cw, iw, rw} {
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
			}
			Consistently(func() []states.State {
				return []states.State{e.provisionState(ctx, maint.UUID)(), e.provisionState(ctx, locked.UUID)(), e.provisionState(ctx, elsewhere.UUID)()}
			}, time.Second).Should(Equal([]states.State{states.DeployWait, states.DeployWait, states.DeployWait}))
		})

		It("forces the hardware back to the recorded power state", func(ctx SpecContext) {
			e.start(ctx, "cond-"+e.group, withPeriodicTasks)
			drifted := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.PowerState = ptr(states.PowerOn) })
			e.hw.SetPowerState(drifted.UUID, states.PowerOff)
			unknown := e.createNode(ctx, states.Available)
			e.hw.SetPowerState(unknown.UUID, states.PowerOn)
			waiting := e.createNode(ctx, states.DeployWait, func(n *model.Node) { n.PowerState = ptr(states.PowerOn) })
			e.hw.SetPowerState(waiting.UUID, states.PowerOff)
			maint := e.createNode(ctx, states.Active, func(n *model.Node) { n.PowerState, n.Maintenance = ptr(states.PowerOn), true })
			e.hw.SetPowerState(maint.UUID, states.PowerOff)

			Eventually(func() string { return e.hwPower(drifted.UUID) }).Should(Equal(states.PowerOn))
			Expect(str(e.node(ctx, drifted.UUID).PowerState)).To(Equal(states.PowerOn))
			Eventually(func() string { return str(e.node(ctx, unknown.UUID).PowerState) }).Should(Equal(states.PowerOn))
			Consistently(func() []string {
				return []string{e.hwPower(waiting.UUID), e.hwPower(maint.UUID), str(e.node(ctx, waiting.UUID).PowerState)}
			}, time.Second).Should(Equal([]string{states.PowerOff, states.PowerOff, states.PowerOn}))
			for _, n := range []*model.Node{drifted, unknown, waiting, maint} {
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
			}
		})

		It("records the hardware's power state when forcing is off", func(ctx SpecContext) {
			e.start(ctx, "cond-"+e.group, withPeriodicTasks, func(cfg *config.Config) { cfg.Conductor.ForcePowerStateDuringSync = false })
			n := e.createNode(ctx, states.Active, func(n *model.Node) { n.PowerState = ptr(states.PowerOn) })
			e.hw.SetPowerState(n.UUID, states.PowerOff)
			Eventually(func() string { return str(e.node(ctx, n.UUID).PowerState) }).Should(Equal(states.PowerOff))
			Expect(e.hwPower(n.UUID)).To(Equal(states.PowerOff))
		})

		It("syncs through a slow fake BMC, and gives up on one that always fails or never answers", func(ctx SpecContext) {
			e.start(ctx, "cond-"+e.group, withPeriodicTasks, func(cfg *config.Config) { cfg.Conductor.PowerStateSyncTimeout = 2 * time.Second })
			slow := e.createNode(ctx, states.Manageable, func(n *model.Node) {
				n.PowerState = ptr(states.PowerOn)
				n.DriverInfo = model.JSONObject{"fake_latency": "20ms"}
			})
			e.hw.SetPowerState(slow.UUID, states.PowerOff)
			failing := e.createNode(ctx, states.Active, func(n *model.Node) {
				n.PowerState = ptr(states.PowerOn)
				n.DriverInfo = model.JSONObject{"fake_failure_rate": 1.0}
			})
			hanging := e.createNode(ctx, states.Active, func(n *model.Node) {
				n.PowerState = ptr(states.PowerOn)
				n.DriverInfo = model.JSONObject{"fake_timeout_rate": "1"}
			})
			Eventually(func() string { return e.hwPower(slow.UUID) }).Should(Equal(states.PowerOn))
			Eventually(func() bool { return e.node(ctx, failing.UUID).Maintenance }).Should(BeTrue())
			Expect(str(e.node(ctx, failing.UUID).LastError)).To(ContainSubstring("BMC error (injected by fake_failure_rate)"))
			Eventually(func() bool { return e.node(ctx, hanging.UUID).Maintenance }).Should(BeTrue())
			Expect(str(e.node(ctx, hanging.UUID).LastError)).To(ContainSubstring("BMC did not answer"))
			Expect(e.node(ctx, slow.UUID).Maintenance).To(BeFalse())
		})

		It("refuses a fake BMC behaviour it cannot read", func(ctx SpecContext) {
			c := e.start(ctx, "cond-"+e.group)
			n := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.DriverInfo = model.JSONObject{"fake_failure_rate": "often"} })
			res, err := rpc.ValidateDriverInterfaces.Call(ctx, e.api(c), rpc.NodeArgs{NodeID: n.UUID})
			Expect(err).NotTo(HaveOccurred())
			Expect(res["power"].Result).To(Equal(ptr(false)))
			Expect(res["power"].Reason).To(Equal("driver_info fake_failure_rate must be a number from 0 to 1, not often."))
		})

		It("puts a node whose power cannot be read into maintenance after the retries", func(ctx SpecContext) {
			e.start(ctx, "cond-"+e.group, withPeriodicTasks)
			n := e.createNode(ctx, states.Active, func(n *model.Node) { n.PowerState = ptr(states.PowerOn) })
			e.hw.Inject(n.UUID, fake.OpGetPowerState, fake.Fault{Err: errors.New("BMC gone")})
			Eventually(func() bool { return e.node(ctx, n.UUID).Maintenance }).Should(BeTrue())
			got := e.node(ctx, n.UUID)
			Expect(str(got.Fault)).To(Equal("power failure"))
			Expect(got.PowerState).To(BeNil())
			Expect(str(got.LastError)).To(Equal("During sync_power_state, max retries exceeded for node " + n.UUID +
				", node state None does not match expected state 'power on'. Updating DB state to 'None' Switching node to maintenance mode. Error: BMC gone"))
			Expect(got.MaintenanceReason).To(Equal(got.LastError))
			Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
		})

		It("keeps the maintenance a power sync set after the API read the node it patches", func(ctx SpecContext) {
			c := e.start(ctx, "cond-"+e.group, withPeriodicTasks)
			n := e.createNode(ctx, states.Active, func(n *model.Node) { n.PowerState = ptr(states.PowerOn) })
			Expect(e.node(ctx, n.UUID).Maintenance).To(BeFalse(), "the API's copy")
			e.hw.Inject(n.UUID, fake.OpGetPowerState, fake.Fault{Err: errors.New("BMC gone")})
			Eventually(func() bool { return e.node(ctx, n.UUID).Maintenance }).Should(BeTrue())

			_, err := rpc.UpdateNode.Call(ctx, e.api(c), rpc.UpdateNodeArgs{NodeID: n.UUID, APIVersion: "1.65",
				Patch: []byte(`[{"op": "add", "path": "/extra/rack", "value": "r4"}]`)})
			Expect(err).NotTo(HaveOccurred())
			got := e.node(ctx, n.UUID)
			Expect(got.Extra).To(HaveKeyWithValue("rack", "r4"))
			Expect(got.Maintenance).To(BeTrue())
			Expect(str(got.Fault)).To(Equal("power failure"))
			Expect(got.MaintenanceReason).NotTo(BeNil())
		})

		It("gives up forcing power that does not stick", func(ctx SpecContext) {
			e.start(ctx, "cond-"+e.group, withPeriodicTasks)
			n := e.createNode(ctx, states.Active, func(n *model.Node) { n.PowerState = ptr(states.PowerOn) })
			e.hw.SetPowerState(n.UUID, states.PowerOff)
			e.hw.Inject(n.UUID, fake.OpSetPowerState, fake.Fault{Err: errors.New("stuck relay")})
			Eventually(func() bool { return e.node(ctx, n.UUID).Maintenance }).Should(BeTrue())
			got := e.node(ctx, n.UUID)
			Expect(str(got.PowerState)).To(Equal(states.PowerOff))
			Expect(strings.HasPrefix(str(got.LastError), "During sync_power_state, max retries exceeded")).To(BeTrue())
		})
	})
})

// countingStore counts the node lists the conductor asks for and the rows
// they return.
type countingStore struct {
	conductor.Store
	lists, rows atomic.Int64
}

func (s *countingStore) ListNodes(ctx context.Context, f db.NodeFilter, p db.Page, columns []string) ([]model.Node, error) {
	nodes, err := s.Store.ListNodes(ctx, f, p, columns)
	s.lists.Add(1)
	s.rows.Add(int64(len(nodes)))
	return nodes, err
}

var _ = Describe("Periodic tasks at scale", func() {
	for _, backend := range backends {
		It("read only the nodes of their own conductor group, in batches, on "+backend, func(ctx SpecContext) {
			e := newEnv(backend)
			// Many more nodes in another group than in the conductor's own:
			// a sync that read the table would count them.
			other := e.group + "-other"
			otherEnv := *e
			otherEnv.group = other
			DeferCleanup(func(ctx SpecContext) {
				nodes, err := e.store.ListNodes(ctx, db.NodeFilter{Match: []filter.Condition{{Column: "conductor_group", Value: other}}}, db.Page{}, []string{"uuid"})
				Expect(err).NotTo(HaveOccurred())
				for _, n := range nodes {
					Expect(e.store.DestroyNode(ctx, n.UUID)).To(Succeed())
				}
			})
			for range 40 {
				otherEnv.createNode(ctx, states.Manageable, func(n *model.Node) { n.ConductorGroup = other })
			}
			var own []*model.Node
			for range 3 {
				n := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.PowerState = ptr(states.PowerOn) })
				e.hw.SetPowerState(n.UUID, states.PowerOff)
				own = append(own, n)
			}
			counting := &countingStore{Store: e.store}
			e.startWith(ctx, "cond-"+e.group, func(o *conductor.Options) { o.Store = counting }, func(cfg *config.Config) {
				cfg.Conductor.SyncPowerStateInterval = 200 * time.Millisecond
			})
			for _, n := range own {
				Eventually(func() string { return e.hwPower(n.UUID) }).Should(Equal(states.PowerOn))
			}
			// No list returned more than the three own nodes, whatever the
			// other group holds.
			Eventually(counting.lists.Load).Should(BeNumerically(">=", 2))
			Expect(counting.rows.Load()).To(BeNumerically("<=", 3*counting.lists.Load()))
		})
	}
})
