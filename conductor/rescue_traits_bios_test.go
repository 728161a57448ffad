package conductor_test

import (
	"context"
	"errors"
	"net/http"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

var _ = Describe("traits, rescue, BIOS, abort of waits and protection", func() {
	onEveryBackend(func(e *env) {
		var (
			api rpc.Endpoint
		)
		BeforeEach(func(ctx SpecContext) {
			api = e.api(e.start(ctx, "cond-"+e.group))
		})
		lockedByOther := func(ctx context.Context, n *model.Node) {
			_, err := e.store.ReserveNode(ctx, n.UUID, "other-conductor", 1)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx SpecContext) { _ = e.store.ReleaseNode(ctx, n.UUID, "other-conductor", 1) })
		}
		traits := func(ctx context.Context, uuid string) []string { return []string(e.node(ctx, uuid).Traits) }

		It("adds, replaces and removes traits under the node lock", func(ctx SpecContext) {
			n := e.createNode(ctx, states.Manageable)
			Expect(rpc.AddNodeTraits.Call(ctx, api, rpc.NodeTraitsArgs{NodeID: n.UUID, Traits: []string{"CUSTOM_A", "HW_CPU_X86_VMX"}})).To(Succeed())
			Expect(rpc.AddNodeTraits.Call(ctx, api, rpc.NodeTraitsArgs{NodeID: n.UUID, Traits: []string{"CUSTOM_A", "CUSTOM_B"}})).To(Succeed())
			Expect(traits(ctx, n.UUID)).To(Equal([]string{"CUSTOM_A", "HW_CPU_X86_VMX", "CUSTOM_B"}))
			Expect(e.node(ctx, n.UUID).Reservation).To(BeNil())

			Expect(rpc.RemoveNodeTraits.Call(ctx, api, rpc.NodeTraitsArgs{NodeID: n.UUID, Traits: []string{"CUSTOM_A"}})).To(Succeed())
			Expect(traits(ctx, n.UUID)).To(Equal([]string{"HW_CPU_X86_VMX", "CUSTOM_B"}))
			err := rpc.RemoveNodeTraits.Call(ctx, api, rpc.NodeTraitsArgs{NodeID: n.UUID, Traits: []string{"CUSTOM_A"}})
			Expect(err).To(haveKind(errs.KindNotFound, http.StatusNotFound))

			Expect(rpc.AddNodeTraits.Call(ctx, api, rpc.NodeTraitsArgs{NodeID: n.UUID, Traits: []string{"CUSTOM_Z"}, Replace: true})).To(Succeed())
			Expect(traits(ctx, n.UUID)).To(Equal([]string{"CUSTOM_Z"}))
			Expect(rpc.RemoveNodeTraits.Call(ctx, api, rpc.NodeTraitsArgs{NodeID: n.UUID})).To(Succeed())
			Expect(traits(ctx, n.UUID)).To(BeEmpty())

			many := make([]string, conductor.MaxTraitsPerNode+1)
			for i := range many {
				many[i] = "CUSTOM_T" + string(rune('A'+i/26)) + string(rune('A'+i%26))
			}
			err = rpc.AddNodeTraits.Call(ctx, api, rpc.NodeTraitsArgs{NodeID: n.UUID, Traits: many, Replace: true})
			Expect(err).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
			Expect(traits(ctx, n.UUID)).To(BeEmpty(), "nothing saved")
			Expect(rpc.AddNodeTraits.Call(ctx, api, rpc.NodeTraitsArgs{NodeID: n.UUID, Traits: many[:conductor.MaxTraitsPerNode], Replace: true})).To(Succeed())
			Expect(traits(ctx, n.UUID)).To(HaveLen(conductor.MaxTraitsPerNode))

			lockedByOther(ctx, n)
			Expect(rpc.AddNodeTraits.Call(ctx, api, rpc.NodeTraitsArgs{NodeID: n.UUID, Traits: []string{"CUSTOM_X"}})).To(
				haveKind(errs.KindNodeLocked, http.StatusConflict))
			Expect(rpc.RemoveNodeTraits.Call(ctx, api, rpc.NodeTraitsArgs{NodeID: n.UUID})).To(
				haveKind(errs.KindNodeLocked, http.StatusConflict))
		})

		It("keeps traits out of node updates, which cannot undo a concurrent change", func(ctx SpecContext) {
			n := e.createNode(ctx, states.Manageable)
			stale := *e.node(ctx, n.UUID)
			Expect(rpc.AddNodeTraits.Call(ctx, api, rpc.NodeTraitsArgs{NodeID: n.UUID, Traits: []string{"CUSTOM_A"}})).To(Succeed())
			stale.Extra = model.JSONObject{"k": "v"}
			_, err := rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{Node: stale})
			Expect(err).NotTo(HaveOccurred())
			Expect(traits(ctx, n.UUID)).To(Equal([]string{"CUSTOM_A"}))
		})

		It("rescues with the fake rescue interface, storing only a hash of the password, and unrescues", func(ctx SpecContext) {
			n := e.createNode(ctx, states.Active, func(n *model.Node) { n.RescueInterface = ptr("fake") })
			Expect(rpc.DoNodeRescue.Call(ctx, api, rpc.RescueArgs{NodeID: n.UUID, RescuePassword: "s3cret-pw"})).To(Succeed())
			Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Rescue))
			got := e.node(ctx, n.UUID)
			Expect(got.TargetProvisionState).To(BeNil())
			Expect(got.InstanceInfo).To(HaveKey("hashed_rescue_password"))
			Expect(got.InstanceInfo["hashed_rescue_password"]).NotTo(ContainSubstring("s3cret-pw"))
			Expect(got.InstanceInfo).NotTo(HaveKey("rescue_password"))

			Expect(rpc.DoNodeUnrescue.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})).To(Succeed())
			Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Active))
			Expect(e.node(ctx, n.UUID).InstanceInfo).NotTo(HaveKey("hashed_rescue_password"))
		})

		withStaleAgent := func(n *model.Node) {
			n.RescueInterface = ptr("fake")
			n.DriverInternalInfo = model.JSONObject{"agent_url": "http://10.0.0.2:9999", "agent_secret_token": "stale-token",
				"agent_secret_token_pregenerated": true, "agent_verify_ca": "/var/lib/ferric/certificates/old.crt", "kept": "yes"}
		}
		noAgent := func(ctx context.Context, uuid string) {
			GinkgoHelper()
			info := e.node(ctx, uuid).DriverInternalInfo
			for _, k := range []string{"agent_url", "agent_secret_token", "agent_secret_token_pregenerated", "agent_verify_ca"} {
				Expect(info).NotTo(HaveKey(k))
			}
			Expect(info).To(HaveKeyWithValue("kept", "yes"))
		}

		for _, op := range []struct {
			name         string
			from, during states.State
			hold         fake.Op
			start        func(ctx context.Context, uuid string) error
		}{
			{"deploy", states.Available, states.Deploying, fake.OpDeploy, func(ctx context.Context, uuid string) error {
				return rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: uuid})
			}},
			{"rebuild", states.Active, states.Deploying, fake.OpDeploy, func(ctx context.Context, uuid string) error {
				return rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: uuid, Rebuild: true})
			}},
			{"clean", states.Manageable, states.Cleaning, fake.OpPrepareCleaning, func(ctx context.Context, uuid string) error {
				return rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: uuid, Action: "provide"})
			}},
		} {
			It("forgets the agent token and URL when a "+op.name+" starts and when it ends", func(ctx SpecContext) {
				n := e.createNode(ctx, op.from, withStaleAgent)
				hold := make(chan struct{})
				release := sync.OnceFunc(func() { close(hold) })
				DeferCleanup(release)
				e.hw.Inject(n.UUID, op.hold, fake.Fault{Block: hold})
				Expect(op.start(ctx, n.UUID)).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(op.during))
				noAgent(ctx, n.UUID)
				release()
				Eventually(e.provisionState(ctx, n.UUID)).ShouldNot(Equal(op.during))
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
				noAgent(ctx, n.UUID)
			})
		}

		It("forgets the agent token and URL when a rescue starts and when it ends, succeeded or failed", func(ctx SpecContext) {
			By("wiping the deploy's agent as the rescue starts")
			n := e.createNode(ctx, states.Active, withStaleAgent)
			hold := make(chan struct{})
			e.hw.Inject(n.UUID, fake.OpRescue, fake.Fault{Block: hold})
			release := sync.OnceFunc(func() { close(hold) })
			DeferCleanup(release)
			Expect(rpc.DoNodeRescue.Call(ctx, api, rpc.RescueArgs{NodeID: n.UUID, RescuePassword: "pw"})).To(Succeed())
			Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Rescuing))
			noAgent(ctx, n.UUID)
			release()
			Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Rescue))
			noAgent(ctx, n.UUID)

			By("leaving none behind when the rescue fails")
			failing := e.createNode(ctx, states.Active, withStaleAgent)
			e.hw.Inject(failing.UUID, fake.OpRescue, fake.Fault{Err: errors.New("ramdisk did not boot")})
			Expect(rpc.DoNodeRescue.Call(ctx, api, rpc.RescueArgs{NodeID: failing.UUID, RescuePassword: "pw"})).To(Succeed())
			Eventually(e.provisionState(ctx, failing.UUID)).Should(Equal(states.RescueFail))
			noAgent(ctx, failing.UUID)
		})

		It("fails a rescue the driver refuses into rescue failed, and refuses no-rescue and wrong states", func(ctx SpecContext) {
			n := e.createNode(ctx, states.Active, func(n *model.Node) { n.RescueInterface = ptr("fake") })
			e.hw.Inject(n.UUID, fake.OpRescue, fake.Fault{Err: errors.New("ramdisk did not boot")})
			Expect(rpc.DoNodeRescue.Call(ctx, api, rpc.RescueArgs{NodeID: n.UUID, RescuePassword: "pw"})).To(Succeed())
			Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.RescueFail))
			Expect(str(e.node(ctx, n.UUID).LastError)).To(ContainSubstring("ramdisk did not boot"))

			plain := e.createNode(ctx, states.Active, func(n *model.Node) { n.RescueInterface = ptr("no-rescue") })
			Expect(str(plain.RescueInterface)).To(Equal("no-rescue"))
			Expect(rpc.DoNodeRescue.Call(ctx, api, rpc.RescueArgs{NodeID: plain.UUID, RescuePassword: "pw"})).To(
				haveKind(errs.KindUnsupportedDriverExtension, http.StatusBadRequest))
			Expect(rpc.DoNodeRescue.Call(ctx, api, rpc.RescueArgs{NodeID: plain.UUID})).To(
				haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))

			avail := e.createNode(ctx, states.Available, func(n *model.Node) { n.RescueInterface = ptr("fake") })
			Expect(rpc.DoNodeRescue.Call(ctx, api, rpc.RescueArgs{NodeID: avail.UUID, RescuePassword: "pw"})).To(
				haveKind(errs.KindInvalidStateRequested, http.StatusBadRequest))
			Expect(rpc.DoNodeUnrescue.Call(ctx, api, rpc.NodeArgs{NodeID: avail.UUID})).To(
				haveKind(errs.KindInvalidStateRequested, http.StatusBadRequest))
		})

		It("aborts an inspection or a rescue waiting for its ramdisk", func(ctx SpecContext) {
			insp := e.createNode(ctx, states.InspectWait, func(n *model.Node) { n.TargetProvisionState = ptr(string(states.Manageable)) })
			Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: insp.UUID, Action: string(states.EventAbort)})).To(Succeed())
			Expect(e.node(ctx, insp.UUID).State()).To(Equal(states.InspectFail))
			Expect(str(e.node(ctx, insp.UUID).LastError)).To(ContainSubstring("aborted"))

			resc := e.createNode(ctx, states.RescueWait, func(n *model.Node) {
				n.TargetProvisionState = ptr(string(states.Rescue))
				n.InstanceInfo = model.JSONObject{"hashed_rescue_password": "x"}
			})
			Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: resc.UUID, Action: string(states.EventAbort)})).To(Succeed())
			got := e.node(ctx, resc.UUID)
			Expect(got.State()).To(Equal(states.RescueFail))
			Expect(got.InstanceInfo).NotTo(HaveKey("hashed_rescue_password"))
		})

		It("reads BIOS settings from the fake bios interface and none from no-bios", func(ctx SpecContext) {
			n := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.BIOSInterface = ptr("fake") })
			e.hw.SetBIOSSetting(n.UUID, "BootMode", "Bios")
			settings, err := rpc.GetBIOSSettings.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})
			Expect(err).NotTo(HaveOccurred())
			Expect(settings).To(Equal([]rpc.BIOSSetting{{Name: "BootMode", Value: "Bios"}, {Name: "ProcVirtualization", Value: "Enabled"}}))

			plain := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.BIOSInterface = ptr("no-bios") })
			settings, err = rpc.GetBIOSSettings.Call(ctx, api, rpc.NodeArgs{NodeID: plain.UUID})
			Expect(err).NotTo(HaveOccurred())
			Expect(settings).To(BeEmpty())
		})

		It("protects only active nodes and then refuses rebuild, undeploy and deletion", func(ctx SpecContext) {
			avail := e.createNode(ctx, states.Available)
			upd := *avail
			upd.Protected = true
			_, err := rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{Node: upd})
			Expect(err).To(haveKind(errs.KindInvalidState, http.StatusConflict))
			Expect(e.node(ctx, avail.UUID).Protected).To(BeFalse())

			n := e.createNode(ctx, states.Active)
			upd = *n
			upd.Protected, upd.ProtectedReason = true, ptr("prod database")
			out, err := rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{Node: upd})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Protected).To(BeTrue())
			Expect(str(out.ProtectedReason)).To(Equal("prod database"))

			protected := haveKind(errs.KindNodeProtected, http.StatusForbidden)
			Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: n.UUID, Rebuild: true})).To(protected)
			Expect(rpc.DoNodeTearDown.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})).To(protected)
			upd = *e.node(ctx, n.UUID)
			upd.Maintenance = true
			_, err = rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{Node: upd})
			Expect(err).NotTo(HaveOccurred())
			Expect(rpc.DestroyNode.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})).To(protected)

			upd = *e.node(ctx, n.UUID)
			upd.Protected = false
			out, err = rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{Node: upd})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.ProtectedReason).To(BeNil(), "the reason goes with the protection")
		})
	})
})
