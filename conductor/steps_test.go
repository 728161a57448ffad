package conductor_test

import (
	"context"
	"maps"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// steppingHardware is fake-hardware whose deploy interface has clean
// steps, to exercise the clean step engine: erase_devices_metadata runs at
// once, erase_devices (not abortable) continues in the ramdisk, and
// final_check runs at once; all three are enabled for automated cleaning.
const steppingHardware = "stepping-hardware"

type steppingDeploy struct {
	driver.DeployInterface
	mu  sync.Mutex
	ran []string
}

func (s *steppingDeploy) hardwareType(hw *fake.Hardware) driver.HardwareType {
	ht := hw.HardwareType()
	ht.Name = steppingHardware
	ht.Interfaces = maps.Clone(ht.Interfaces)
	s.DeployInterface = ht.Interfaces[hwcatalog.Deploy][0].Impl.(driver.DeployInterface)
	ht.Interfaces[hwcatalog.Deploy] = []driver.Implementation{{Name: "fake", Impl: s}}
	return ht
}

func (s *steppingDeploy) CleanSteps(context.Context, driver.TaskContext) ([]driver.CleanStep, error) {
	return []driver.CleanStep{
		{Interface: "deploy", Step: "final_check", Priority: 5},
		{Interface: "deploy", Step: "erase_devices", Priority: 10},
		{Interface: "deploy", Step: "erase_devices_metadata", Priority: 99, Abortable: true},
		{Interface: "deploy", Step: "manual_only", Priority: 0},
	}, nil
}

var _ driver.CleanStepper = (*steppingDeploy)(nil)

func (s *steppingDeploy) ExecuteCleanStep(_ context.Context, t driver.TaskContext, step driver.CleanStep) (driver.Result, error) {
	s.mu.Lock()
	s.ran = append(s.ran, t.Node().UUID+":"+step.Step)
	s.mu.Unlock()
	if step.Step == "erase_devices" {
		return driver.Wait, nil
	}
	return driver.Done, nil
}

func (s *steppingDeploy) stepsRun(uuid string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.ran {
		if len(r) > len(uuid) && r[:len(uuid)] == uuid {
			out = append(out, r[len(uuid)+1:])
		}
	}
	return out
}

var _ = Describe("Clean steps", func() {
	onEveryBackend(func(e *env) {
		var (
			api rpc.Endpoint
		)
		BeforeEach(func(ctx SpecContext) {
			api = e.api(e.start(ctx, "cond-"+e.group))
		})
		stepping := func(n *model.Node) { n.Driver = steppingHardware }

		It("runs automated steps by priority, waits for the ramdisk, and resumes after it", func(ctx SpecContext) {
			n := e.createNode(ctx, states.Manageable, stepping)
			Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: "provide"})).To(Succeed())
			Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.CleanWait))
			Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
			got := e.node(ctx, n.UUID)
			Expect(got.CleanStep).To(HaveKeyWithValue("step", "erase_devices"))
			Expect(got.TargetState()).To(Equal(states.Available))
			Expect(e.stepper.stepsRun(n.UUID)).To(Equal([]string{"erase_devices_metadata", "erase_devices"}))

			Expect(rpc.ContinueNodeClean.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})).To(Succeed())
			Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Available))
			Expect(e.stepper.stepsRun(n.UUID)).To(Equal([]string{"erase_devices_metadata", "erase_devices", "final_check"}))
			got = e.node(ctx, n.UUID)
			Expect(got.CleanStep).To(BeEmpty())
			Expect(got.DriverInternalInfo).NotTo(HaveKey("clean_steps"))
			Expect(got.DriverInternalInfo).NotTo(HaveKey("clean_step_index"))
		})

		It("runs a manual clean in the user's order, including steps disabled for automated cleaning", func(ctx SpecContext) {
			n := e.createNode(ctx, states.Manageable, stepping)
			Expect(rpc.DoNodeClean.Call(ctx, api, rpc.CleanArgs{NodeID: n.UUID, CleanSteps: []map[string]any{
				{"interface": "deploy", "step": "final_check"},
				{"interface": "deploy", "step": "manual_only", "args": map[string]any{"x": 1}},
			}})).To(Succeed())
			Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Manageable))
			Expect(e.stepper.stepsRun(n.UUID)).To(Equal([]string{"final_check", "manual_only"}))
			Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
		})

		It("aborts after a non-abortable step completes when an abort was requested during it", func(ctx SpecContext) {
			n := e.createNode(ctx, states.Manageable, stepping)
			Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: "provide"})).To(Succeed())
			Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.CleanWait))
			Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
			Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: "abort"})).To(Succeed())
			Expect(e.provisionState(ctx, n.UUID)()).To(Equal(states.CleanWait))

			Expect(rpc.ContinueNodeClean.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})).To(Succeed())
			// The abort worker writes last_error after the transition.
			Eventually(func() string { return str(e.node(ctx, n.UUID).LastError) }).Should(
				Equal(`By request, the clean operation was aborted after the completion of step "erase_devices"`))
			Expect(e.provisionState(ctx, n.UUID)()).To(Equal(states.CleanFail))
			Expect(e.stepper.stepsRun(n.UUID)).NotTo(ContainElement("final_check"))
			Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
		})
	})
})
