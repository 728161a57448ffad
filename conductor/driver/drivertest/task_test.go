package drivertest_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver/drivertest"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

var _ = Describe("Task", func() {
	var t *drivertest.Task
	BeforeEach(func() {
		n := &model.Node{UUID: "n1"}
		n.SetState(states.DeployWait, states.Active)
		t = drivertest.New(n).WithPorts([]model.Port{{UUID: "p1"}})
	})

	It("moves the node as the state machine does and records the events", func(ctx SpecContext) {
		Expect(t.ProcessEvent(ctx, states.EventResume, "")).To(Succeed())
		Expect(t.Node().State()).To(Equal(states.Deploying))
		Expect(t.Node().TargetState()).To(Equal(states.Active))
		Expect(t.Events).To(Equal([]drivertest.Event{{Event: states.EventResume}}))
	})

	It("refuses an event the state does not allow and changes nothing", func(ctx SpecContext) {
		err := t.ProcessEvent(ctx, states.EventDeploy, "")
		Expect(errs.Is(err, errs.KindInvalidState)).To(BeTrue())
		Expect(t.Node().State()).To(Equal(states.DeployWait))
		Expect(t.Events).To(BeEmpty())
		Expect(t.Saves).To(BeZero())
	})

	It("records a failure as last_error and fires fail", func(ctx SpecContext) {
		Expect(t.Fail(ctx, "boom")).To(Succeed())
		Expect(t.Failures).To(Equal([]string{"boom"}))
		Expect(t.Node().LastError).To(HaveValue(Equal("boom")))
		Expect(t.Node().State()).To(Equal(states.DeployFail))
	})

	It("saves known ports and refuses unknown ones", func(ctx SpecContext) {
		Expect(t.SavePort(ctx, &model.Port{UUID: "p1", Address: "52:54:00:00:00:01"})).To(Succeed())
		Expect(t.PortList[0].Address).To(Equal("52:54:00:00:00:01"))
		Expect(t.SavePort(ctx, &model.Port{UUID: "p9"})).NotTo(Succeed())
		Expect(t.SavedPorts).To(Equal([]string{"p1"}))
	})
})
