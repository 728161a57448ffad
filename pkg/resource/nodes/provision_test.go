package nodes_test

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/nodes"
	"github.com/ferricbm/ferric/pkg/states"
)

func inState(s states.State) *model.Node {
	n := storedNode()
	n.SetState(s, n.TargetState())
	return n
}

func provision(raw string, n *model.Node, v microversion.Version) (states.Event, error) {
	req, err := nodes.DecodeProvision(body(raw))
	if err != nil {
		return "", err
	}
	return req.Validate(n, v)
}

var _ = Describe("provision requests", func() {
	DescribeTable("map valid targets to events",
		func(raw string, state states.State, v microversion.Version, event states.Event) {
			got, err := provision(raw, inState(state), v)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(event))
		},
		Entry("active", `{"target": "active", "configdrive": "http://x/cd"}`, states.Available, v1_1, states.EventDeploy),
		Entry("rebuild", `{"target": "rebuild"}`, states.Active, v1_1, states.EventRebuild),
		Entry("deleted", `{"target": "deleted"}`, states.Active, v1_1, states.EventDelete),
		Entry("manage", `{"target": "manage"}`, states.Enroll, v1_4, states.EventManage),
		Entry("provide", `{"target": "provide"}`, states.Manageable, v1_4, states.EventProvide),
		Entry("inspect", `{"target": "inspect"}`, states.Manageable, microversion.V1(6), states.EventInspect),
		Entry("abort", `{"target": "abort"}`, states.CleanWait, microversion.V1(13), states.EventAbort),
		Entry("clean", `{"target": "clean", "clean_steps": [{"interface": "deploy", "step": "erase_devices", "args": {}, "order": "1"}]}`, states.Manageable, microversion.V1(15), states.EventClean),
		Entry("adopt", `{"target": "adopt"}`, states.Manageable, microversion.V1(17), states.EventAdopt),
	)

	DescribeTable("reject in the documented order",
		func(raw string, n *model.Node, v microversion.Version, code int, msg string) {
			_, err := provision(raw, n, v)
			Expect(err).To(HaveOccurred())
			Expect(errs.Status(err)).To(Equal(code))
			Expect(errs.Message(err)).To(ContainSubstring(msg))
		},
		Entry("unknown body key", `{"target": "active", "bogus": 1}`, inState(states.Available), v1_11, 400, "Unexpected arguments: bogus"),
		Entry("no target", `{}`, inState(states.Available), v1_11, 400, "Missing mandatory parameter: target"),
		Entry("manage too early", `{"target": "manage"}`, inState(states.Enroll), microversion.V1(3), 406, ""),
		Entry("clean too early (even from a wrong state)", `{"target": "clean"}`, inState(states.Active), v1_11, 406, ""),
		Entry("active in maintenance", `{"target": "active"}`, func() *model.Node { n := inState(states.Available); n.Maintenance = true; return n }(), v1_11, 400, "because it's in maintenance mode"),
		Entry("wrong state", `{"target": "provide"}`, inState(states.Active), v1_11, 400, `The requested action "provide" can not be performed on node "1be26c0b-03f2-4d2e-ae87-c02d7f33c123" while it is in state "active".`),
		Entry("unknown target", `{"target": "explode"}`, inState(states.Active), v1_11, 400, `The requested action "explode"`),
		Entry("internal event", `{"target": "done"}`, inState(states.Deploying), v1_11, 400, `The requested action "done"`),
		Entry("wrong state while locked", `{"target": "provide"}`, func() *model.Node { n := inState(states.Active); n.Reservation = ptr("c1"); return n }(), v1_11, 409, "is locked by host c1"),
		Entry("configdrive with rebuild before 1.35", `{"target": "rebuild", "configdrive": "x"}`, inState(states.Active), v1_11, 400, "config drive"),
		Entry("configdrive object before 1.56", `{"target": "active", "configdrive": {"user_data": "x"}}`, inState(states.Available), v1_11, 400, "configdrive"),
		Entry("configdrive of a wrong type", `{"target": "active", "configdrive": 5}`, inState(states.Available), v1_11, 400, "configdrive"),
		Entry("clean_steps with another target", `{"target": "active", "clean_steps": []}`, inState(states.Available), v1_11, 400, "clean_steps"),
		Entry("deploy_steps before 1.69", `{"target": "active", "deploy_steps": []}`, inState(states.Available), v1_11, 406, ""),
		Entry("rescue_password with another target", `{"target": "active", "rescue_password": "x"}`, inState(states.Available), v1_11, 400, "rescue_password"),
		Entry("disable_ramdisk before 1.70", `{"target": "active", "disable_ramdisk": true}`, inState(states.Available), v1_11, 406, ""),
		Entry("abort from inspect wait before 1.41", `{"target": "abort"}`, inState(states.InspectWait), microversion.V1(40), 406, ""),
		Entry("abort from wait call-back before 1.110", `{"target": "abort"}`, inState(states.DeployWait), microversion.V1(109), 406, ""),
		Entry("clean without steps", `{"target": "clean"}`, inState(states.Manageable), microversion.V1(15), 400, `"clean_steps" is required`),
		Entry("clean step with a bad interface", `{"target": "clean", "clean_steps": [{"interface": "network", "step": "x"}]}`, inState(states.Manageable), microversion.V1(15), 400, "Invalid clean_steps"),
		Entry("clean step without a step", `{"target": "clean", "clean_steps": [{"interface": "deploy"}]}`, inState(states.Manageable), microversion.V1(15), 400, "'step' is a required property"),
		Entry("clean step with an extra key", `{"target": "clean", "clean_steps": [{"interface": "deploy", "step": "x", "priority": 1}]}`, inState(states.Manageable), microversion.V1(15), 400, "'priority' was unexpected"),
		Entry("clean step with a negative order", `{"target": "clean", "clean_steps": [{"interface": "deploy", "step": "x", "order": -1}]}`, inState(states.Manageable), microversion.V1(15), 400, "'order'"),
		Entry("rescue without a password", `{"target": "rescue", "rescue_password": "  "}`, inState(states.Active), microversion.V1(38), 400, "rescue_password"),
	)
})

var _ = Describe("power requests", func() {
	decode := func(raw string, n *model.Node, v microversion.Version) (nodes.PowerRequest, error) {
		return nodes.DecodePower(body(raw), n, "n1", v)
	}

	It("accepts the basic targets", func() {
		r, err := decode(`{"target": "rebooting"}`, inState(states.Active), v1_11)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Target).To(Equal(states.Rebooting))
	})

	DescribeTable("rejects",
		func(raw string, state states.State, v microversion.Version, code int, msg string) {
			_, err := decode(raw, inState(state), v)
			Expect(errs.Status(err)).To(Equal(code))
			Expect(errs.Message(err)).To(ContainSubstring(msg))
		},
		Entry("soft power off before 1.27", `{"target": "soft power off"}`, states.Active, v1_11, 406, ""),
		Entry("a timeout before 1.27", `{"target": "power on", "timeout": 5}`, states.Active, v1_11, 406, ""),
		Entry("a zero timeout", `{"target": "power on", "timeout": 0}`, states.Active, microversion.V1(27), 400, "timeout has to be positive integer"),
		Entry("an unknown target", `{"target": "sideways"}`, states.Active, v1_11, 400, `The requested action "sideways" can not be performed on node "n1" while it is in state "None".`),
		Entry("a cleaning node", `{"target": "power on"}`, states.CleanWait, v1_11, 400, `while it is in state "clean wait"`),
		Entry("an unknown key", `{"target": "power on", "x": 1}`, states.Active, v1_11, 400, "Unexpected arguments: x"),
		Entry("no target", `{}`, states.Active, v1_11, 400, "Missing mandatory parameter: target"),
	)
})

var _ = Describe("rescue requests", func() {
	It("carry the rescue password to the dispatcher and need one", func() {
		active := &model.Node{UUID: "n", ProvisionState: ptr(string(states.Active))}
		r, err := nodes.DecodeProvision(map[string]any{"target": "rescue", "rescue_password": "pw"})
		Expect(err).NotTo(HaveOccurred())
		event, err := r.Validate(active, microversion.RescueVerbs)
		Expect(err).NotTo(HaveOccurred())
		Expect(event).To(Equal(states.EventRescue))
		Expect(r.RescuePassword()).To(Equal("pw"))
		_, err = r.Validate(active, microversion.V1(37))
		Expect(errs.Status(err)).To(Equal(http.StatusNotAcceptable))

		r, err = nodes.DecodeProvision(map[string]any{"target": "rescue"})
		Expect(err).NotTo(HaveOccurred())
		_, err = r.Validate(active, microversion.RescueVerbs)
		Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
	})
})
