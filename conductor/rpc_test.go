package conductor_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// haveKind matches a typed error of the kind, as the API would map it.
func haveKind(kind errs.Kind, status int) OmegaMatcher {
	return WithTransform(func(err error) []any {
		e, ok := errs.As(err)
		if !ok {
			return []any{"untyped", err}
		}
		return []any{e.Kind, e.HTTPStatus()}
	}, Equal([]any{kind, status}))
}

var _ = Describe("Conductor RPC API", func() {
	onEveryBackend(func(e *env) {
		var (
			c   *conductor.Conductor
			api rpc.Endpoint
		)
		start := func(ctx context.Context, mods ...func(*config.Config)) {
			c = e.start(ctx, "cond-"+e.group, mods...)
			api = e.api(c)
		}

		Context("with a default conductor", func() {
			BeforeEach(func(ctx SpecContext) { start(ctx) })

			It("manages an enrolled node: verifying, then manageable with its power state", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Enroll)
				e.hw.SetPowerState(n.UUID, states.PowerOn)
				Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: "manage"})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Manageable))
				got := e.node(ctx, n.UUID)
				Expect(got.TargetProvisionState).To(BeNil())
				Expect(str(got.PowerState)).To(Equal(states.PowerOn))
				Expect(got.LastError).To(BeNil())
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
			})

			It("sends a node whose power cannot be read back to enroll with last_error", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Enroll)
				e.hw.Inject(n.UUID, fake.OpGetPowerState, fake.Fault{Err: errors.New("BMC unreachable")})
				Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: "manage"})).To(Succeed())
				Eventually(func() string { return str(e.node(ctx, n.UUID).LastError) }).Should(
					Equal("Failed to get power state for node " + n.UUID + ". Error: BMC unreachable"))
				got := e.node(ctx, n.UUID)
				Expect(got.State()).To(Equal(states.Enroll))
				Expect(got.TargetProvisionState).To(BeNil())
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
			})

			It("provides a manageable node through automated cleaning to available", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable)
				Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: "provide"})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Available))
				Expect(e.node(ctx, n.UUID).TargetProvisionState).To(BeNil())
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
			})

			It("fails a clean that cannot be prepared: clean failed, maintenance, clean failure", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable)
				e.hw.Inject(n.UUID, fake.OpPrepareCleaning, fake.Fault{Err: errors.New("no ramdisk")})
				Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: "provide"})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.CleanFail))
				got := e.node(ctx, n.UUID)
				Expect(got.TargetState()).To(Equal(states.Available))
				Expect(got.Maintenance).To(BeTrue())
				Expect(str(got.Fault)).To(Equal("clean failure"))
				Expect(str(got.LastError)).To(Equal("Failed to prepare node " + n.UUID + " for cleaning: no ramdisk"))
				Expect(got.MaintenanceReason).To(Equal(got.LastError))
			})

			It("refuses provide for a retired node and actions the state machine does not allow", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.Retired = true })
				Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: "provide"})).To(
					haveKind(errs.KindInvalid, http.StatusBadRequest))
				m := e.createNode(ctx, states.Available)
				Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: m.UUID, Action: "provide"})).To(
					haveKind(errs.KindInvalidStateRequested, http.StatusBadRequest))
				Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: m.UUID, Action: "abort"})).To(
					haveKind(errs.KindInvalidStateRequested, http.StatusBadRequest))
				Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: m.UUID, Action: "deploy"})).To(
					haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				Expect(e.provisionState(ctx, m.UUID)()).To(Equal(states.Available))
				Expect(e.node(ctx, n.UUID).Reservation).To(BeNil())
				Expect(e.node(ctx, m.UUID).Reservation).To(BeNil())
			})

			It("moves available back to manageable synchronously", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Available)
				Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: "manage"})).To(Succeed())
				got := e.node(ctx, n.UUID)
				Expect(got.State()).To(Equal(states.Manageable))
				Expect(got.TargetProvisionState).To(BeNil())
				Expect(got.Reservation).To(BeNil())
			})

			It("inspects a manageable node", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable)
				Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: "inspect"})).To(Succeed())
				Eventually(func() bool { return e.node(ctx, n.UUID).InspectionFinishedAt != nil }).Should(BeTrue())
				Expect(e.provisionState(ctx, n.UUID)()).To(Equal(states.Manageable))
			})

			It("adopts a manageable node into active and records itself as its conductor", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable)
				Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: "adopt"})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Active))
				me, err := e.store.GetConductor(ctx, c.Host())
				Expect(err).NotTo(HaveOccurred())
				Expect(e.node(ctx, n.UUID).ConductorAffinity).To(Equal(&me.ID))
			})

			It("deploys an available node to active, keeping the configdrive", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Available)
				Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: n.UUID, ConfigDrive: "H4sIAAAA"})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Active))
				got := e.node(ctx, n.UUID)
				Expect(got.TargetProvisionState).To(BeNil())
				Expect(got.InstanceInfo).To(HaveKeyWithValue("configdrive", "H4sIAAAA"))
				Expect(got.ConductorAffinity).NotTo(BeNil())
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
			})

			It("deploys with a stored config drive: the node refers to it, a new one replaces it, tear down deletes it", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Available)
				first, err := e.store.SaveConfigDrive(ctx, n.ID, strings.NewReader("H4sIfirst"))
				Expect(err).NotTo(HaveOccurred())
				Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: n.UUID, ConfigDriveID: first})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Active))
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
				Expect(e.node(ctx, n.UUID).InstanceInfo).To(HaveKeyWithValue("configdrive", model.StoredConfigDriveRef(first)))
				Expect(e.store.ConfigDrive(ctx, n.ID, first)).To(Equal("H4sIfirst"))

				By("rebuilding with a new drive, which replaces the first")
				second, err := e.store.SaveConfigDrive(ctx, n.ID, strings.NewReader("H4sIsecond"))
				Expect(err).NotTo(HaveOccurred())
				Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: n.UUID, Rebuild: true, ConfigDriveID: second})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Active))
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
				Expect(e.node(ctx, n.UUID).InstanceInfo).To(HaveKeyWithValue("configdrive", model.StoredConfigDriveRef(second)))
				_, err = e.store.ConfigDrive(ctx, n.ID, first)
				Expect(err).To(MatchError(ContainSubstring("not found")))

				By("tearing down")
				Expect(rpc.DoNodeTearDown.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Available))
				_, err = e.store.ConfigDrive(ctx, n.ID, second)
				Expect(err).To(MatchError(ContainSubstring("not found")))
			})

			It("deletes the stored config drive of a refused deploy, keeping the node's own", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Active)
				kept, err := e.store.SaveConfigDrive(ctx, n.ID, strings.NewReader("H4sIkept"))
				Expect(err).NotTo(HaveOccurred())
				refused, err := e.store.SaveConfigDrive(ctx, n.ID, strings.NewReader("H4sIrefused"))
				Expect(err).NotTo(HaveOccurred())
				Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: n.UUID, ConfigDriveID: refused})).To(
					haveKind(errs.KindInvalidStateRequested, http.StatusBadRequest))
				_, err = e.store.ConfigDrive(ctx, n.ID, refused)
				Expect(err).To(MatchError(ContainSubstring("not found")))
				Expect(e.store.ConfigDrive(ctx, n.ID, kept)).To(Equal("H4sIkept"))
			})

			It("refuses a deploy synchronously, leaving the node as it was", func(ctx SpecContext) {
				maint := e.createNode(ctx, states.Available, func(n *model.Node) { n.Maintenance = true })
				Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: maint.UUID})).To(haveKind(errs.KindNodeInMaintenance, http.StatusBadRequest))
				wrong := e.createNode(ctx, states.Manageable)
				Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: wrong.UUID})).To(haveKind(errs.KindInvalidStateRequested, http.StatusBadRequest))
				invalid := e.createNode(ctx, states.Available)
				e.hw.Inject(invalid.UUID, fake.OpDeployValidate, fake.Fault{Err: errs.InvalidParameterValue("image_source is missing")})
				err := rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: invalid.UUID})
				Expect(err).To(haveKind(errs.KindInstanceDeployFailure, http.StatusInternalServerError))
				Expect(err.Error()).To(ContainSubstring("image_source is missing"))
				protected := e.createNode(ctx, states.Active, func(n *model.Node) { n.Protected = true })
				Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: protected.UUID, Rebuild: true})).To(haveKind(errs.KindNodeProtected, http.StatusForbidden))
				for _, n := range []*model.Node{maint, wrong, invalid, protected} {
					got := e.node(ctx, n.UUID)
					Expect(got.ProvisionState).To(Equal(n.ProvisionState))
					Expect(got.TargetProvisionState).To(BeNil())
					Expect(got.Reservation).To(BeNil())
				}
			})

			It("records a failing deploy as deploy failed with last_error", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Available)
				e.hw.Inject(n.UUID, fake.OpDeploy, fake.Fault{Err: errors.New("disk on fire")})
				Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: n.UUID})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.DeployFail))
				got := e.node(ctx, n.UUID)
				Expect(got.TargetState()).To(Equal(states.Active))
				Expect(str(got.LastError)).To(Equal("Failed to deploy. Error: disk on fire"))
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
			})

			It("rebuilds an active node", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Active)
				Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: n.UUID, Rebuild: true})).To(Succeed())
				Eventually(func() *int64 { return e.node(ctx, n.UUID).ConductorAffinity }).ShouldNot(BeNil())
				Expect(e.provisionState(ctx, n.UUID)()).To(Equal(states.Active))
			})

			It("tears an active node down, clears the instance and cleans it to available", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Active, func(n *model.Node) {
					n.InstanceUUID = ptr(newUUID())
					n.InstanceInfo = model.JSONObject{"image_source": "http://example/img"}
					n.DriverInternalInfo = model.JSONObject{"is_whole_disk_image": true, "keep": "me"}
				})
				Expect(rpc.DoNodeTearDown.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Available))
				got := e.node(ctx, n.UUID)
				Expect(got.InstanceUUID).To(BeNil())
				Expect(got.InstanceInfo).To(BeEmpty())
				Expect(got.DriverInternalInfo).To(Equal(model.JSONObject{"keep": "me"}))
				Expect(got.TargetProvisionState).To(BeNil())
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
			})

			It("tears a retired node down to manageable", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Active, func(n *model.Node) { n.Retired = true })
				Expect(rpc.DoNodeTearDown.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Manageable))
			})

			It("puts a node whose tear down fails into error, instance cleared", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Active, func(n *model.Node) { n.InstanceUUID = ptr(newUUID()) })
				e.hw.Inject(n.UUID, fake.OpTearDown, fake.Fault{Err: errors.New("stuck")})
				Expect(rpc.DoNodeTearDown.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Error))
				got := e.node(ctx, n.UUID)
				Expect(str(got.LastError)).To(Equal("Failed to tear down. Error: stuck"))
				Expect(got.InstanceUUID).To(BeNil())
			})

			It("refuses to tear down protected nodes and nodes in the wrong state", func(ctx SpecContext) {
				p := e.createNode(ctx, states.Active, func(n *model.Node) { n.Protected = true })
				Expect(rpc.DoNodeTearDown.Call(ctx, api, rpc.NodeArgs{NodeID: p.UUID})).To(haveKind(errs.KindNodeProtected, http.StatusForbidden))
				m := e.createNode(ctx, states.Manageable)
				Expect(rpc.DoNodeTearDown.Call(ctx, api, rpc.NodeArgs{NodeID: m.UUID})).To(haveKind(errs.KindInvalidStateRequested, http.StatusBadRequest))
				Expect(e.provisionState(ctx, p.UUID)()).To(Equal(states.Active))
				Expect(e.node(ctx, p.UUID).Reservation).To(BeNil())
			})

			It("cleans manually back to manageable, and fails on a step the driver lacks", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable)
				Expect(rpc.DoNodeClean.Call(ctx, api, rpc.CleanArgs{NodeID: n.UUID, CleanSteps: []map[string]any{}})).To(Succeed())
				Eventually(func() []any {
					got := e.node(ctx, n.UUID)
					return []any{got.State(), got.TargetProvisionState, got.Reservation}
				}).Should(Equal([]any{states.Manageable, (*string)(nil), (*string)(nil)}))

				Expect(rpc.DoNodeClean.Call(ctx, api, rpc.CleanArgs{NodeID: n.UUID, CleanSteps: []map[string]any{{"interface": "deploy", "step": "erase_devices"}}})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.CleanFail))
				got := e.node(ctx, n.UUID)
				Expect(got.TargetState()).To(Equal(states.Manageable))
				Expect(got.Maintenance).To(BeTrue())
				Expect(str(got.LastError)).To(ContainSubstring("node does not support this clean step"))
				Expect(str(got.LastError)).To(ContainSubstring("erase_devices"))
			})

			It("refuses a manual clean in maintenance or outside manageable", func(ctx SpecContext) {
				m := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.Maintenance = true })
				Expect(rpc.DoNodeClean.Call(ctx, api, rpc.CleanArgs{NodeID: m.UUID, CleanSteps: []map[string]any{}})).To(haveKind(errs.KindNodeInMaintenance, http.StatusBadRequest))
				a := e.createNode(ctx, states.Available)
				Expect(rpc.DoNodeClean.Call(ctx, api, rpc.CleanArgs{NodeID: a.UUID, CleanSteps: []map[string]any{}})).To(haveKind(errs.KindInvalidStateRequested, http.StatusBadRequest))
			})

			It("aborts a clean waiting for its ramdisk", func(ctx SpecContext) {
				n := e.createNode(ctx, states.CleanWait, func(n *model.Node) { n.TargetProvisionState = ptr(string(states.Manageable)) })
				Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: "abort"})).To(Succeed())
				Eventually(func() string { return str(e.node(ctx, n.UUID).LastError) }).Should(Equal("By request, the clean operation was aborted"))
				got := e.node(ctx, n.UUID)
				Expect(got.State()).To(Equal(states.CleanFail))
				Expect(got.TargetState()).To(Equal(states.Manageable))
				Expect(got.Maintenance).To(BeFalse())
			})

			It("defers the abort of a clean step that cannot be interrupted", func(ctx SpecContext) {
				n := e.createNode(ctx, states.CleanWait, func(n *model.Node) {
					n.CleanStep = model.JSONObject{"interface": "deploy", "step": "erase_devices", "abortable": false}
				})
				Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: "abort"})).To(Succeed())
				got := e.node(ctx, n.UUID)
				Expect(got.State()).To(Equal(states.CleanWait))
				Expect(got.CleanStep).To(HaveKeyWithValue("abort_after", true))
			})

			It("continues a clean and a deploy after their ramdisk called back", func(ctx SpecContext) {
				cl := e.createNode(ctx, states.CleanWait, func(n *model.Node) {
					n.TargetProvisionState = ptr(string(states.Available))
					n.DriverInternalInfo = model.JSONObject{"clean_steps": []any{}}
				})
				dp := e.createNode(ctx, states.DeployWait, func(n *model.Node) { n.TargetProvisionState = ptr(string(states.Active)) })
				Expect(rpc.ContinueNodeClean.Call(ctx, api, rpc.NodeArgs{NodeID: cl.UUID})).To(Succeed())
				Expect(rpc.ContinueNodeDeploy.Call(ctx, api, rpc.NodeArgs{NodeID: dp.UUID})).To(Succeed())
				Eventually(e.provisionState(ctx, cl.UUID)).Should(Equal(states.Available))
				Eventually(e.provisionState(ctx, dp.UUID)).Should(Equal(states.Active))
				Expect(e.node(ctx, cl.UUID).DriverInternalInfo).NotTo(HaveKey("clean_steps"))
			})

			It("refuses to continue nodes that are not waiting", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Available)
				Expect(c.ContinueNodeClean(ctx, rpc.NodeArgs{NodeID: n.UUID})).To(haveKind(errs.KindInvalidStateRequested, http.StatusBadRequest))
				Expect(c.ContinueNodeDeploy(ctx, rpc.NodeArgs{NodeID: n.UUID})).To(haveKind(errs.KindInvalidStateRequested, http.StatusBadRequest))
				Expect(e.node(ctx, n.UUID).Reservation).To(BeNil())
			})

			It("changes power state asynchronously and records it", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.PowerState = ptr(states.PowerOff) })
				Expect(rpc.ChangeNodePowerState.Call(ctx, api, rpc.ChangePowerStateArgs{NodeID: n.UUID, NewState: states.PowerOn})).To(Succeed())
				Eventually(func() []any {
					got := e.node(ctx, n.UUID)
					return []any{str(got.PowerState), got.TargetPowerState, got.Reservation}
				}).Should(Equal([]any{states.PowerOn, (*string)(nil), (*string)(nil)}))
				Expect(e.hwPower(n.UUID)).To(Equal(states.PowerOn))

				Expect(rpc.ChangeNodePowerState.Call(ctx, api, rpc.ChangePowerStateArgs{NodeID: n.UUID, NewState: states.SoftPowerOff})).To(Succeed())
				Eventually(func() string { return str(e.node(ctx, n.UUID).PowerState) }).Should(Equal(states.PowerOff))
				Expect(e.hwPower(n.UUID)).To(Equal(states.PowerOff))

				Expect(rpc.ChangeNodePowerState.Call(ctx, api, rpc.ChangePowerStateArgs{NodeID: n.UUID, NewState: states.Rebooting})).To(Succeed())
				Eventually(func() string { return str(e.node(ctx, n.UUID).PowerState) }).Should(Equal(states.PowerOn))
			})

			It("records a failed power action in last_error and clears the target", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.PowerState = ptr(states.PowerOff) })
				e.hw.Inject(n.UUID, fake.OpSetPowerState, fake.Fault{Err: errors.New("IPMI timeout")})
				Expect(rpc.ChangeNodePowerState.Call(ctx, api, rpc.ChangePowerStateArgs{NodeID: n.UUID, NewState: states.PowerOn})).To(Succeed())
				Eventually(func() string { return str(e.node(ctx, n.UUID).LastError) }).Should(
					Equal("Failed to change power state to 'power on' by 'power on'. Error: IPMI timeout"))
				got := e.node(ctx, n.UUID)
				Expect(got.TargetPowerState).To(BeNil())
				Expect(str(got.PowerState)).To(Equal(states.PowerOff))
			})

			It("refuses unsupported power states and invalid power credentials", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable)
				Expect(rpc.ChangeNodePowerState.Call(ctx, api, rpc.ChangePowerStateArgs{NodeID: n.UUID, NewState: "warp speed"})).To(
					haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				e.hw.Inject(n.UUID, fake.OpPowerValidate, fake.Fault{Err: errors.New("ipmi_address missing")})
				Expect(rpc.ChangeNodePowerState.Call(ctx, api, rpc.ChangePowerStateArgs{NodeID: n.UUID, NewState: states.PowerOn})).To(
					haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				got := e.node(ctx, n.UUID)
				Expect(got.TargetPowerState).To(BeNil())
				Expect(got.Reservation).To(BeNil())
			})

			It("updates user fields and never lets a stale copy overwrite conductor-owned ones", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Available, func(n *model.Node) {
					n.Maintenance, n.MaintenanceReason, n.Fault = true, ptr("fan"), ptr("power failure")
				})
				patched := *n
				patched.Description = ptr("rack 4")
				patched.Extra = model.JSONObject{"a": "b"}
				patched.Maintenance = false
				patched.ProvisionState = ptr(string(states.Active))
				patched.Reservation = ptr("someone")
				got, err := rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{Node: patched})
				Expect(err).NotTo(HaveOccurred())
				Expect(str(got.Description)).To(Equal("rack 4"))
				stored := e.node(ctx, n.UUID)
				Expect(str(stored.Description)).To(Equal("rack 4"))
				Expect(stored.Extra).To(Equal(model.JSONObject{"a": "b"}))
				Expect(stored.State()).To(Equal(states.Available))
				Expect(stored.Maintenance).To(BeFalse())
				Expect(stored.MaintenanceReason).To(BeNil())
				Expect(stored.Fault).To(BeNil())
				Expect(stored.Reservation).To(BeNil())
			})

			It("applies concurrent patches of different keys to the node read under the lock, losing none", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.Extra = model.JSONObject{"kept": true} })
				const count = 50
				var wg sync.WaitGroup
				failures := make([]error, count)
				for i := range count {
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer GinkgoRecover()
						patch := fmt.Sprintf(`[{"op": "add", "path": "/extra/key%d", "value": %d}]`, i, i)
						// A client retries 409 NodeLocked, as the message asks.
						for {
							_, err := rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{NodeID: n.UUID, Patch: []byte(patch), APIVersion: "1.65"})
							if !errs.Is(err, errs.KindNodeLocked) {
								failures[i] = err
								return
							}
						}
					}()
				}
				wg.Wait()
				for _, err := range failures {
					Expect(err).NotTo(HaveOccurred())
				}
				extra := e.node(ctx, n.UUID).Extra
				Expect(extra).To(HaveLen(count + 1))
				Expect(extra).To(HaveKeyWithValue("kept", true))
				for i := range count {
					Expect(extra).To(HaveKeyWithValue(fmt.Sprintf("key%d", i), BeNumerically("==", i)))
				}
			})

			It("refuses a patch that no longer applies to the stored node, and saves nothing", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.Extra = model.JSONObject{"a": "b"} })
				_, err := rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{NodeID: n.UUID, APIVersion: "1.65",
					Patch: []byte(`[{"op": "add", "path": "/description", "value": "d"}, {"op": "remove", "path": "/extra/gone"}]`)})
				Expect(err).To(haveKind(errs.KindPatchError, http.StatusBadRequest))
				_, err = rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{NodeID: n.UUID, APIVersion: "1.65",
					Patch: []byte(`[{"op": "add", "path": "/provision_state", "value": "active"}]`)})
				Expect(err).To(haveKind(errs.KindInvalid, http.StatusBadRequest))
				_, err = rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{NodeID: n.UUID, APIVersion: "one",
					Patch: []byte(`[{"op": "add", "path": "/description", "value": "d"}]`)})
				Expect(err).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				got := e.node(ctx, n.UUID)
				Expect(got.Description).To(BeNil())
				Expect(got.Extra).To(Equal(model.JSONObject{"a": "b"}))
				Expect(got.Reservation).To(BeNil())
			})

			It("enforces the update rules for instance, interfaces and driver", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Active, func(n *model.Node) { n.InstanceUUID = ptr(newUUID()) })
				patched := *n
				patched.InstanceUUID = ptr(newUUID())
				_, err := rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{Node: patched})
				Expect(err).To(haveKind(errs.KindNodeAssociated, http.StatusConflict))

				patched = *n
				patched.InspectInterface = ptr("no-inspect")
				_, err = rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{Node: patched})
				Expect(err).To(haveKind(errs.KindInvalidState, http.StatusConflict))
				Expect(err.Error()).To(ContainSubstring("inspect_interface"))

				patched.Maintenance = true
				got, err := rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{Node: patched})
				Expect(err).NotTo(HaveOccurred())
				Expect(str(got.InspectInterface)).To(Equal("no-inspect"))

				patched = *e.node(ctx, n.UUID)
				patched.PowerInterface = ptr("ipmitool")
				_, err = rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{Node: patched})
				Expect(err).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))

				patched.PowerInterface = ptr("fake")
				patched.Driver = "ipmi"
				_, err = rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{Node: patched})
				Expect(err).To(haveKind(errs.KindDriverNotFound, http.StatusNotFound))

				patched.Driver = fake.Name
				patched.InstanceUUID = nil
				got, err = rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{Node: patched})
				Expect(err).NotTo(HaveOccurred())
				Expect(got.InstanceUUID).To(BeNil())
				Expect(e.node(ctx, n.UUID).Reservation).To(BeNil())
			})

			It("deletes nodes (and their ports) only when the rules allow", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Available)
				port := &model.Port{UUID: newUUID(), Address: "52:54:00:00:00:01", NodeID: n.ID}
				Expect(e.store.CreatePort(ctx, port)).To(Succeed())
				Expect(rpc.DestroyNode.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})).To(Succeed())
				_, err := e.store.GetNode(ctx, n.UUID)
				Expect(err).To(haveKind(errs.KindNodeNotFound, http.StatusNotFound))
				_, err = e.store.GetPort(ctx, port.UUID)
				Expect(err).To(haveKind(errs.KindPortNotFound, http.StatusNotFound))

				active := e.createNode(ctx, states.Active)
				Expect(rpc.DestroyNode.Call(ctx, api, rpc.NodeArgs{NodeID: active.UUID})).To(haveKind(errs.KindInvalidState, http.StatusConflict))
				associated := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.InstanceUUID = ptr(newUUID()) })
				Expect(rpc.DestroyNode.Call(ctx, api, rpc.NodeArgs{NodeID: associated.UUID})).To(haveKind(errs.KindNodeAssociated, http.StatusConflict))
				protected := e.createNode(ctx, states.Active, func(n *model.Node) { n.Protected, n.Maintenance = true, true })
				Expect(rpc.DestroyNode.Call(ctx, api, rpc.NodeArgs{NodeID: protected.UUID})).To(haveKind(errs.KindNodeProtected, http.StatusForbidden))
				for _, m := range []*model.Node{active, associated, protected} {
					Expect(e.node(ctx, m.UUID).Reservation).To(BeNil())
				}

				maint := e.createNode(ctx, states.Active, func(n *model.Node) { n.Maintenance = true })
				Expect(rpc.DestroyNode.Call(ctx, api, rpc.NodeArgs{NodeID: maint.UUID})).To(Succeed())
				Expect(rpc.DestroyNode.Call(ctx, api, rpc.NodeArgs{NodeID: maint.UUID})).To(haveKind(errs.KindNodeNotFound, http.StatusNotFound))
			})

			It("validates every driver interface without locking", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable)
				res, err := rpc.ValidateDriverInterfaces.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})
				Expect(err).NotTo(HaveOccurred())
				Expect(res).To(HaveLen(11))
				Expect(res).NotTo(HaveKey("vendor"))
				for iface, r := range res {
					Expect(r.Result).To(Equal(ptr(true)), iface)
				}
				e.hw.Inject(n.UUID, fake.OpPowerValidate, fake.Fault{Err: errs.New(errs.KindMissingParameterValue, "ipmi_address is required")})
				e.hw.Inject(n.UUID, fake.OpBootValidate, fake.Fault{Err: errors.New("segfault")})
				res, err = rpc.ValidateDriverInterfaces.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})
				Expect(err).NotTo(HaveOccurred())
				Expect(res["power"]).To(Equal(rpc.ValidationResult{Result: ptr(false), Reason: "ipmi_address is required"}))
				Expect(*res["boot"].Result).To(BeFalse())
				Expect(res["boot"].Reason).To(ContainSubstring("Unexpected exception"))
				Expect(res["boot"].Reason).To(ContainSubstring("segfault"))
			})

			It("sets and reads the boot device", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable)
				devices, err := rpc.GetSupportedBootDevices.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})
				Expect(err).NotTo(HaveOccurred())
				Expect(devices).To(ContainElements("pxe", "disk"))
				Expect(rpc.SetBootDevice.Call(ctx, api, rpc.SetBootDeviceArgs{NodeID: n.UUID, Device: "disk", Persistent: true})).To(Succeed())
				bd, err := rpc.GetBootDevice.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})
				Expect(err).NotTo(HaveOccurred())
				Expect(bd).To(Equal(rpc.BootDevice{BootDevice: ptr("disk"), Persistent: ptr(true)}))
				Expect(rpc.SetBootDevice.Call(ctx, api, rpc.SetBootDeviceArgs{NodeID: n.UUID, Device: "floppy"})).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				Expect(e.node(ctx, n.UUID).Reservation).To(BeNil())
			})

			It("updates and deletes ports under their node's lock", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable)
				p1 := &model.Port{UUID: newUUID(), Address: "52:54:00:00:01:01", NodeID: n.ID, PXEEnabled: true}
				p2 := &model.Port{UUID: newUUID(), Address: "52:54:00:00:01:02", NodeID: n.ID, PXEEnabled: true}
				Expect(e.store.CreatePort(ctx, p1)).To(Succeed())
				Expect(e.store.CreatePort(ctx, p2)).To(Succeed())

				patched := *p1
				patched.NodeUUID = n.UUID
				patched.Address = "52:54:00:00:01:09"
				patched.Extra = model.JSONObject{"x": "y"}
				got, err := rpc.UpdatePort.Call(ctx, api, rpc.PortArgs{Port: patched})
				Expect(err).NotTo(HaveOccurred())
				Expect(got.Address).To(Equal("52:54:00:00:01:09"))
				stored, err := e.store.GetPort(ctx, p1.UUID)
				Expect(err).NotTo(HaveOccurred())
				Expect(stored.Extra).To(Equal(model.JSONObject{"x": "y"}))

				patched.Address = p2.Address
				_, err = rpc.UpdatePort.Call(ctx, api, rpc.PortArgs{Port: patched})
				Expect(err).To(haveKind(errs.KindAlreadyExists, http.StatusConflict))
				Expect(err.Error()).To(ContainSubstring("A port with MAC address " + p2.Address + " already exists."))

				Expect(rpc.DestroyPort.Call(ctx, api, rpc.PortArgs{Port: *p2})).To(Succeed())
				_, err = e.store.GetPort(ctx, p2.UUID)
				Expect(err).To(haveKind(errs.KindPortNotFound, http.StatusNotFound))
				Expect(e.node(ctx, n.UUID).Reservation).To(BeNil())
			})

			It("protects the ports of a deployed node", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Active)
				p := &model.Port{UUID: newUUID(), Address: "52:54:00:00:02:01", NodeID: n.ID,
					InternalInfo: model.JSONObject{"tenant_vif_port_id": "vif-1"}}
				Expect(e.store.CreatePort(ctx, p)).To(Succeed())
				patched := *p
				patched.Address = "52:54:00:00:02:02"
				_, err := rpc.UpdatePort.Call(ctx, api, rpc.PortArgs{Port: patched})
				Expect(err).To(haveKind(errs.KindInvalidState, http.StatusConflict))
				Expect(rpc.DestroyPort.Call(ctx, api, rpc.PortArgs{Port: *p})).To(haveKind(errs.KindInvalidState, http.StatusConflict))
				Expect(e.node(ctx, n.UUID).Reservation).To(BeNil())
			})

			It("refuses heartbeats without the issued token and vendor methods the driver lacks", func(ctx SpecContext) {
				n := e.createNode(ctx, states.DeployWait)
				Expect(rpc.Heartbeat.Call(ctx, api, rpc.HeartbeatArgs{NodeID: n.UUID, CallbackURL: "http://10.0.0.1:9999"})).To(
					haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				_, err := rpc.VendorPassthru.Call(ctx, api, rpc.VendorPassthruArgs{NodeID: n.UUID, Method: "pass_deploy_info", HTTPMethod: "POST"})
				Expect(err).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
			})

			It("answers NodeNotFound for a node that does not exist", func(ctx SpecContext) {
				missing := newUUID()
				Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: missing})).To(haveKind(errs.KindNodeNotFound, http.StatusNotFound))
				Expect(rpc.ChangeNodePowerState.Call(ctx, api, rpc.ChangePowerStateArgs{NodeID: missing, NewState: states.PowerOn})).To(haveKind(errs.KindNodeNotFound, http.StatusNotFound))
				_, err := rpc.ValidateDriverInterfaces.Call(ctx, api, rpc.NodeArgs{NodeID: missing})
				Expect(err).To(haveKind(errs.KindNodeNotFound, http.StatusNotFound))
				Expect(rpc.Heartbeat.Call(ctx, api, rpc.HeartbeatArgs{NodeID: missing})).To(haveKind(errs.KindNodeNotFound, http.StatusNotFound))
			})
		})

		Context("with automated cleaning disabled", func() {
			BeforeEach(func(ctx SpecContext) {
				start(ctx, func(cfg *config.Config) { cfg.Conductor.AutomatedClean = false })
			})

			It("skips cleaning unless the node asks for it", func(ctx SpecContext) {
				skip := e.createNode(ctx, states.Manageable)
				e.hw.Inject(skip.UUID, fake.OpPrepareCleaning, fake.Fault{Err: errors.New("would have cleaned")})
				wants := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.AutomatedClean = ptr(true) })
				e.hw.Inject(wants.UUID, fake.OpPrepareCleaning, fake.Fault{Err: errors.New("cleaned")})
				for _, n := range []*model.Node{skip, wants} {
					Expect(rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: "provide"})).To(Succeed())
				}
				Eventually(e.provisionState(ctx, skip.UUID)).Should(Equal(states.Available))
				Eventually(e.provisionState(ctx, wants.UUID)).Should(Equal(states.CleanFail))
			})
		})

		Context("when available nodes may not be deleted", func() {
			BeforeEach(func(ctx SpecContext) {
				start(ctx, func(cfg *config.Config) { cfg.Conductor.AllowDeletingAvailableNodes = false })
			})

			It("refuses to delete an available node", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Available)
				Expect(rpc.DestroyNode.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})).To(haveKind(errs.KindInvalidState, http.StatusConflict))
			})
		})
	})
})
