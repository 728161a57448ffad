package conductor_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/ferricbm/ferric/conductor"
	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/deploy/agent"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

func randomMAC() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("52:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4])
}

// heartbeatDeploy is the fake deploy interface plus heartbeat handling,
// standing in for an agent-driven deploy interface.
type heartbeatDeploy struct {
	driver.DeployInterface
	mu    sync.Mutex
	beats []string
}

func (h *heartbeatDeploy) Heartbeat(_ context.Context, t driver.TaskContext, callbackURL, agentVersion string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.beats = append(h.beats, t.Node().UUID+" "+callbackURL+" "+agentVersion)
	t.Node().DriverInternalInfo["handled"] = true
	return nil
}

func (h *heartbeatDeploy) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string{}, h.beats...)
}

var _ = Describe("RAID, console, NMI, vendor, agent and VIF RPCs", func() {
	for _, backend := range backends {
		Context("on "+backend, func() {
			var (
				e   *env
				c   *conductor.Conductor
				api rpc.Endpoint
			)
			BeforeEach(func(ctx SpecContext) {
				e = newEnv(backend)
				c = e.start(ctx, "cond-"+e.group)
				api = e.api(c)
			})
			// lockedByOther holds the node's lock as another conductor would.
			lockedByOther := func(ctx context.Context, n *model.Node) {
				_, err := e.store.ReserveNode(ctx, n.UUID, "other-conductor", 1)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(func(ctx SpecContext) { _ = e.store.ReleaseNode(ctx, n.UUID, "other-conductor", 1) })
			}
			mirror := map[string]any{"logical_disks": []any{map[string]any{"raid_level": "1", "size_gb": 100.0, "is_root_volume": true}}}

			It("stores a valid target RAID configuration and refuses invalid ones, missing RAID and a held lock", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable)
				Expect(rpc.SetTargetRAIDConfig.Call(ctx, api, rpc.SetTargetRAIDConfigArgs{NodeID: n.UUID, Config: mirror})).To(Succeed())
				Expect(map[string]any(e.node(ctx, n.UUID).TargetRAIDConfig)).To(Equal(mirror))
				Expect(e.node(ctx, n.UUID).Reservation).To(BeNil())

				bad := map[string]any{"logical_disks": []any{map[string]any{"raid_level": "7", "size_gb": 1.0}}}
				err := rpc.SetTargetRAIDConfig.Call(ctx, api, rpc.SetTargetRAIDConfigArgs{NodeID: n.UUID, Config: bad})
				Expect(err).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				Expect(errs.Message(err)).To(ContainSubstring("raid_level"))
				Expect(map[string]any(e.node(ctx, n.UUID).TargetRAIDConfig)).To(Equal(mirror), "nothing changed")

				Expect(rpc.SetTargetRAIDConfig.Call(ctx, api, rpc.SetTargetRAIDConfigArgs{NodeID: n.UUID, Config: map[string]any{}})).To(Succeed())
				Expect(e.node(ctx, n.UUID).TargetRAIDConfig).To(BeEmpty())

				noRAID := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.RAIDInterface = ptr("no-raid") })
				Expect(rpc.SetTargetRAIDConfig.Call(ctx, api, rpc.SetTargetRAIDConfigArgs{NodeID: noRAID.UUID, Config: mirror})).To(
					haveKind(errs.KindUnsupportedDriverExtension, http.StatusBadRequest))

				lockedByOther(ctx, n)
				Expect(rpc.SetTargetRAIDConfig.Call(ctx, api, rpc.SetTargetRAIDConfigArgs{NodeID: n.UUID, Config: mirror})).To(
					haveKind(errs.KindNodeLocked, http.StatusConflict))
			})

			It("describes logical disk properties of the default RAID interface", func(ctx SpecContext) {
				props, err := rpc.GetRAIDLogicalDiskProperties.Call(ctx, api, rpc.DriverArgs{DriverName: fake.Name})
				Expect(err).NotTo(HaveOccurred())
				Expect(props).To(HaveKey("raid_level"))
				Expect(props).To(HaveKey("size_gb"))
				_, err = rpc.GetRAIDLogicalDiskProperties.Call(ctx, api, rpc.DriverArgs{DriverName: "ipmi"})
				Expect(err).To(haveKind(errs.KindDriverNotFound, http.StatusNotFound))
			})

			It("describes the properties the default interfaces of a hardware type read", func(ctx SpecContext) {
				props, err := rpc.GetDriverProperties.Call(ctx, api, rpc.DriverArgs{DriverName: fake.Name})
				Expect(err).NotTo(HaveOccurred())
				want, err := e.drivers.Properties(fake.Name)
				Expect(err).NotTo(HaveOccurred())
				Expect(props).To(Equal(want))
				_, err = rpc.GetDriverProperties.Call(ctx, api, rpc.DriverArgs{DriverName: "ipmi"})
				Expect(err).To(haveKind(errs.KindDriverNotFound, http.StatusNotFound))
			})

			It("builds the target RAID configuration in a manual clean", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.TargetRAIDConfig = mirror })
				steps := []map[string]any{{"interface": "raid", "step": "create_configuration"}}
				Expect(rpc.DoNodeClean.Call(ctx, api, rpc.CleanArgs{NodeID: n.UUID, CleanSteps: steps})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Manageable))
				got := e.node(ctx, n.UUID)
				Expect(got.LastError).To(BeNil())
				Expect(map[string]any(got.RAIDConfig)).To(Equal(mirror))
				Expect(got.CleanStep).To(BeEmpty())

				unknown := []map[string]any{{"interface": "raid", "step": "make_it_fast"}}
				Expect(rpc.DoNodeClean.Call(ctx, api, rpc.CleanArgs{NodeID: n.UUID, CleanSteps: unknown})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.CleanFail))
				Expect(str(e.node(ctx, n.UUID).LastError)).To(ContainSubstring("node does not support this clean step"))
			})

			It("starts, describes and stops a console, and refuses drivers without one", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.ConsoleInterface = ptr("fake") })
				_, err := rpc.GetConsoleInformation.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})
				Expect(err).To(haveKind(errs.KindInvalid, http.StatusBadRequest))

				Expect(rpc.SetConsoleMode.Call(ctx, api, rpc.SetConsoleModeArgs{NodeID: n.UUID, Enabled: true})).To(Succeed())
				Eventually(func() bool { return e.node(ctx, n.UUID).ConsoleEnabled }).Should(BeTrue())
				Expect(e.hw.ConsoleRunning(n.UUID)).To(BeTrue())
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
				info, err := rpc.GetConsoleInformation.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})
				Expect(err).NotTo(HaveOccurred())
				Expect(info).To(HaveKeyWithValue("type", "fake"))

				e.hw.Inject(n.UUID, fake.OpStopConsole, fake.Fault{Err: fmt.Errorf("serial port busy")})
				Expect(rpc.SetConsoleMode.Call(ctx, api, rpc.SetConsoleModeArgs{NodeID: n.UUID, Enabled: false})).To(Succeed())
				Eventually(func() string { return str(e.node(ctx, n.UUID).LastError) }).Should(ContainSubstring("serial port busy"))
				Expect(e.node(ctx, n.UUID).ConsoleEnabled).To(BeTrue(), "still running")
				e.hw.Clear(n.UUID)
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
				Expect(rpc.SetConsoleMode.Call(ctx, api, rpc.SetConsoleModeArgs{NodeID: n.UUID, Enabled: false})).To(Succeed())
				Eventually(func() bool { return e.node(ctx, n.UUID).ConsoleEnabled }).Should(BeFalse())
				Expect(e.hw.ConsoleRunning(n.UUID)).To(BeFalse())
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())

				plain := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.ConsoleInterface = ptr("no-console") })
				Expect(rpc.SetConsoleMode.Call(ctx, api, rpc.SetConsoleModeArgs{NodeID: plain.UUID, Enabled: true})).To(
					haveKind(errs.KindUnsupportedDriverExtension, http.StatusBadRequest))
				lockedByOther(ctx, n)
				Expect(rpc.SetConsoleMode.Call(ctx, api, rpc.SetConsoleModeArgs{NodeID: n.UUID, Enabled: true})).To(
					haveKind(errs.KindNodeLocked, http.StatusConflict))
			})

			It("stops a running console when the node is torn down", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Active, func(n *model.Node) { n.ConsoleInterface = ptr("fake") })
				Expect(rpc.SetConsoleMode.Call(ctx, api, rpc.SetConsoleModeArgs{NodeID: n.UUID, Enabled: true})).To(Succeed())
				Eventually(func() bool { return e.node(ctx, n.UUID).ConsoleEnabled }).Should(BeTrue())
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
				Expect(rpc.DoNodeTearDown.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Available))
				Expect(e.node(ctx, n.UUID).ConsoleEnabled).To(BeFalse())
				Expect(e.hw.ConsoleRunning(n.UUID)).To(BeFalse())
			})

			It("injects an NMI under the lock", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Active)
				Expect(rpc.InjectNMI.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})).To(Succeed())
				Expect(e.hw.NMIs(n.UUID)).To(Equal(1))
				lockedByOther(ctx, n)
				Expect(rpc.InjectNMI.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})).To(haveKind(errs.KindNodeLocked, http.StatusConflict))
				Expect(e.hw.NMIs(n.UUID)).To(Equal(1))
			})

			It("lists and calls node and driver vendor methods", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Manageable)
				methods, err := rpc.GetNodeVendorPassthruMethods.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})
				Expect(err).NotTo(HaveOccurred())
				Expect(methods).To(HaveKey(fake.VendorEcho))
				Expect(methods[fake.VendorRecord].Async).To(BeTrue())
				Expect(methods[fake.VendorRecord].RequireExclusiveLock).To(HaveValue(BeTrue()))

				res, err := rpc.VendorPassthru.Call(ctx, api, rpc.VendorPassthruArgs{NodeID: n.UUID, Method: fake.VendorEcho, HTTPMethod: "GET", Info: map[string]any{"a": "b"}})
				Expect(err).NotTo(HaveOccurred())
				Expect(res.Async).To(BeFalse())
				Expect(res.Return).To(Equal(map[string]any{"a": "b"}))

				res, err = rpc.VendorPassthru.Call(ctx, api, rpc.VendorPassthruArgs{NodeID: n.UUID, Method: fake.VendorRecord, HTTPMethod: "POST", Info: map[string]any{"k": "v"}})
				Expect(err).NotTo(HaveOccurred())
				Expect(res.Async).To(BeTrue())
				Eventually(func() any { return e.node(ctx, n.UUID).DriverInternalInfo["fake_vendor_record"] }).Should(Equal(map[string]any{"k": "v"}))
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())

				_, err = rpc.VendorPassthru.Call(ctx, api, rpc.VendorPassthruArgs{NodeID: n.UUID, Method: "nope", HTTPMethod: "POST"})
				Expect(err).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				Expect(errs.Message(err)).To(Equal("No handler for method nope"))
				_, err = rpc.VendorPassthru.Call(ctx, api, rpc.VendorPassthruArgs{NodeID: n.UUID, Method: fake.VendorRecord, HTTPMethod: "DELETE"})
				Expect(errs.Message(err)).To(Equal("The method record does not support HTTP DELETE"))

				lockedByOther(ctx, n)
				_, err = rpc.VendorPassthru.Call(ctx, api, rpc.VendorPassthruArgs{NodeID: n.UUID, Method: fake.VendorRecord, HTTPMethod: "POST"})
				Expect(err).To(haveKind(errs.KindNodeLocked, http.StatusConflict))
				_, err = rpc.VendorPassthru.Call(ctx, api, rpc.VendorPassthruArgs{NodeID: n.UUID, Method: fake.VendorEcho, HTTPMethod: "GET"})
				Expect(err).NotTo(HaveOccurred(), "a method that needs no lock runs beside the holder")

				dm, err := rpc.GetDriverVendorPassthruMethods.Call(ctx, api, rpc.DriverArgs{DriverName: fake.Name})
				Expect(err).NotTo(HaveOccurred())
				Expect(dm).To(HaveKey(fake.VendorRecord))
				Expect(dm[fake.VendorRecord].RequireExclusiveLock).To(BeNil())
				res, err = rpc.DriverVendorPassthru.Call(ctx, api, rpc.DriverVendorPassthruArgs{DriverName: fake.Name, Method: fake.VendorRecord, HTTPMethod: "POST", Info: map[string]any{"x": 1.0}})
				Expect(err).NotTo(HaveOccurred())
				Expect(res.Async).To(BeTrue())
				Eventually(e.hw.DriverVendorCalls).Should(ContainElement(fake.VendorCall{Method: fake.VendorRecord, Info: map[string]any{"x": 1.0}}))
				_, err = rpc.DriverVendorPassthru.Call(ctx, api, rpc.DriverVendorPassthruArgs{DriverName: "ipmi", Method: fake.VendorEcho, HTTPMethod: "GET"})
				Expect(err).To(haveKind(errs.KindDriverNotFound, http.StatusNotFound))

				noVendor := e.createNode(ctx, states.Manageable, func(n *model.Node) { n.VendorInterface = ptr("no-vendor") })
				_, err = rpc.GetNodeVendorPassthruMethods.Call(ctx, api, rpc.NodeArgs{NodeID: noVendor.UUID})
				Expect(err).To(haveKind(errs.KindUnsupportedDriverExtension, http.StatusBadRequest))
			})

			It("issues an agent token once and accepts heartbeats only with it", func(ctx SpecContext) {
				// Waiting for most of the (one hour) callback timeout, not
				// past it: a heartbeat must still be welcome.
				n := e.createNode(ctx, states.DeployWait, func(n *model.Node) { n.ProvisionUpdatedAt = ptr(time.Now().UTC().Add(-55 * time.Minute)) })
				first, err := rpc.GetNodeWithToken.Call(ctx, api, rpc.LookupArgs{NodeID: n.UUID})
				Expect(err).NotTo(HaveOccurred())
				Expect(len(first.AgentToken)).To(BeNumerically(">=", 40))
				Expect(e.node(ctx, n.UUID).DriverInternalInfo).To(HaveKeyWithValue("agent_secret_token", first.AgentToken))
				again, err := rpc.GetNodeWithToken.Call(ctx, api, rpc.LookupArgs{NodeID: n.UUID})
				Expect(err).NotTo(HaveOccurred())
				Expect(again.AgentToken).To(Equal("******"))
				other, err := rpc.GetNodeWithToken.Call(ctx, api, rpc.LookupArgs{NodeID: e.createNode(ctx, states.DeployWait).UUID})
				Expect(err).NotTo(HaveOccurred())
				Expect(other.AgentToken).NotTo(Equal(first.AgentToken))

				beat := rpc.HeartbeatArgs{NodeID: n.UUID, CallbackURL: "http://192.0.2.7:9999", AgentVersion: "9.1.0", AgentToken: "wrong"}
				Expect(rpc.Heartbeat.Call(ctx, api, beat)).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				Expect(e.node(ctx, n.UUID).DriverInternalInfo).NotTo(HaveKey("agent_url"))

				before := *e.node(ctx, n.UUID).ProvisionUpdatedAt
				beat.AgentToken = first.AgentToken
				Expect(rpc.Heartbeat.Call(ctx, api, beat)).To(Succeed())
				got := e.node(ctx, n.UUID)
				Expect(got.DriverInternalInfo).To(HaveKeyWithValue("agent_url", "http://192.0.2.7:9999"))
				Expect(got.DriverInternalInfo).To(HaveKeyWithValue("agent_version", "9.1.0"))
				Expect(got.ProvisionUpdatedAt.After(before.Add(50*time.Minute))).To(BeTrue(), "the callback timeout starts over")
				Expect(got.State()).To(Equal(states.DeployWait), "fake deploy does nothing with heartbeats")
				Expect(got.Reservation).To(BeNil())

				lockedByOther(ctx, n)
				Expect(rpc.Heartbeat.Call(ctx, api, beat)).To(haveKind(errs.KindNodeLocked, http.StatusConflict))
			})

			It("reports a waiting node's ramdisk whose heartbeats keep being refused in last_error, and clears it at the first valid one", func(ctx SpecContext) {
				n := e.createNode(ctx, states.DeployWait)
				tok, err := rpc.GetNodeWithToken.Call(ctx, api, rpc.LookupArgs{NodeID: n.UUID})
				Expect(err).NotTo(HaveOccurred())
				beat := rpc.HeartbeatArgs{NodeID: n.UUID, CallbackURL: "http://192.0.2.7:9999"}
				err = rpc.Heartbeat.Call(ctx, api, beat)
				Expect(err).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				Expect(errs.Message(err)).To(Equal("Agent token is required for heartbeat processing."))
				beat.AgentToken = "******"
				Expect(rpc.Heartbeat.Call(ctx, api, beat)).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				Expect(e.node(ctx, n.UUID).LastError).To(BeNil(), "two refusals may be a glitch")
				Expect(rpc.Heartbeat.Call(ctx, api, beat)).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				got := e.node(ctx, n.UUID)
				Expect(str(got.LastError)).To(ContainSubstring("3 heartbeats in a row without a valid agent token"))
				Expect(got.State()).To(Equal(states.DeployWait), "the node keeps waiting for its callback timeout")
				Expect(got.Reservation).To(BeNil())
				Expect(got.DriverInternalInfo).NotTo(HaveKey("agent_url"))

				beat.AgentToken = tok.AgentToken
				Expect(rpc.Heartbeat.Call(ctx, api, beat)).To(Succeed())
				got = e.node(ctx, n.UUID)
				Expect(got.LastError).To(BeNil())
				Expect(got.DriverInternalInfo).To(HaveKeyWithValue("agent_url", "http://192.0.2.7:9999"))

				beat.AgentToken = "wrong"
				for range 2 {
					Expect(rpc.Heartbeat.Call(ctx, api, beat)).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				}
				Expect(e.node(ctx, n.UUID).LastError).To(BeNil(), "a valid heartbeat starts the count over")

				active := e.createNode(ctx, states.Active)
				for range 5 {
					Expect(rpc.Heartbeat.Call(ctx, api, rpc.HeartbeatArgs{NodeID: active.UUID, AgentToken: "wrong"})).To(
						haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				}
				Expect(e.node(ctx, active.UUID).LastError).To(BeNil(), "a node not waiting for a ramdisk has nothing to report")
			})

			It("pins the TLS certificate an agent's first heartbeat presents, refuses heartbeats presenting another, and forgets it on reboot", func(ctx SpecContext) {
				_, certA, err := agent.NewSelfSignedCert("192.0.2.7")
				Expect(err).NotTo(HaveOccurred())
				_, certB, err := agent.NewSelfSignedCert("192.0.2.7")
				Expect(err).NotTo(HaveOccurred())
				n := e.createNode(ctx, states.DeployWait)
				tok, err := rpc.GetNodeWithToken.Call(ctx, api, rpc.LookupArgs{NodeID: n.UUID})
				Expect(err).NotTo(HaveOccurred())

				beat := rpc.HeartbeatArgs{NodeID: n.UUID, CallbackURL: "https://192.0.2.7:9999", AgentToken: tok.AgentToken,
					AgentVerifyCA: "-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n"}
				Expect(rpc.Heartbeat.Call(ctx, api, beat)).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				Expect(e.node(ctx, n.UUID).DriverInternalInfo).NotTo(HaveKey("agent_verify_ca"))

				beat.AgentVerifyCA = certA
				Expect(rpc.Heartbeat.Call(ctx, api, beat)).To(Succeed())
				Expect(e.node(ctx, n.UUID).DriverInternalInfo).To(HaveKeyWithValue("agent_verify_ca", certA))

				for _, other := range []string{certB, "", certB} {
					beat.AgentVerifyCA = other
					err = rpc.Heartbeat.Call(ctx, api, beat)
					Expect(err).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
					Expect(errs.Message(err)).To(ContainSubstring("is not the one its first heartbeat presented"))
					Expect(e.node(ctx, n.UUID).DriverInternalInfo).To(HaveKeyWithValue("agent_verify_ca", certA))
				}
				Expect(str(e.node(ctx, n.UUID).LastError)).To(ContainSubstring("heartbeats in a row without a valid agent token (or with another TLS certificate"))
				beat.AgentVerifyCA = certA
				Expect(rpc.Heartbeat.Call(ctx, api, beat)).To(Succeed())
				Expect(e.node(ctx, n.UUID).LastError).To(BeNil())

				Expect(rpc.ChangeNodePowerState.Call(ctx, api, rpc.ChangePowerStateArgs{NodeID: n.UUID, NewState: states.Rebooting})).To(Succeed())
				Eventually(func() model.JSONObject { return e.node(ctx, n.UUID).DriverInternalInfo }).ShouldNot(HaveKey("agent_verify_ca"))
			})

			It("logs a burst of refused heartbeats as a few warnings, never as errors", func(ctx SpecContext) {
				hook := logtest.NewLocal(e.log)
				n := e.createNode(ctx, states.CleanWait)
				_, err := rpc.GetNodeWithToken.Call(ctx, api, rpc.LookupArgs{NodeID: n.UUID})
				Expect(err).NotTo(HaveOccurred())
				for range 100 {
					Expect(rpc.Heartbeat.Call(ctx, api, rpc.HeartbeatArgs{NodeID: n.UUID, CallbackURL: "http://192.0.2.7:9999", AgentToken: "guess"})).To(
						haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				}
				var warnings []string
				for _, entry := range hook.AllEntries() {
					Expect(entry.Level).NotTo(BeNumerically("<=", logrus.ErrorLevel), entry.Message)
					Expect(entry.Message+fmt.Sprint(entry.Data)).NotTo(ContainSubstring("guess"), "no token in the log")
					if entry.Level == logrus.WarnLevel {
						warnings = append(warnings, entry.Message)
						Expect(entry.Data).To(HaveKeyWithValue("node", n.UUID))
					}
				}
				Expect(warnings).To(HaveLen(1), "one warning a minute per node")
				Expect(warnings[0]).To(ContainSubstring("agent token refused"))
			})

			It("forgets the agent of an earlier attempt when a failed deploy is retried", func(ctx SpecContext) {
				n := e.createNode(ctx, states.DeployFail, func(n *model.Node) {
					n.DriverInternalInfo = model.JSONObject{"agent_secret_token": "old", "agent_url": "https://192.0.2.9:9999",
						"agent_verify_ca": "the old agent's certificate", "keep": 1}
				})
				Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: n.UUID})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Active))
				info := e.node(ctx, n.UUID).DriverInternalInfo
				Expect(info).NotTo(HaveKey("agent_secret_token"))
				Expect(info).NotTo(HaveKey("agent_url"))
				Expect(info).NotTo(HaveKey("agent_verify_ca"), "the next agent serves another certificate")
				Expect(info).To(HaveKey("keep"))
			})

			It("attaches, lists and detaches VIFs on free ports with flat, and only accepts them with noop", func(ctx SpecContext) {
				n := e.createNode(ctx, states.Active, func(n *model.Node) { n.NetworkInterface = ptr("flat") })
				p1 := &model.Port{UUID: newUUID(), Address: randomMAC(), NodeID: n.ID, PXEEnabled: false}
				p2 := &model.Port{UUID: newUUID(), Address: randomMAC(), NodeID: n.ID, PXEEnabled: true}
				Expect(e.store.CreatePort(ctx, p1)).To(Succeed())
				Expect(e.store.CreatePort(ctx, p2)).To(Succeed())

				Expect(rpc.VIFAttach.Call(ctx, api, rpc.VIFAttachArgs{NodeID: n.UUID, VIF: rpc.VIF{ID: "vif-a"}})).To(Succeed())
				port, err := e.store.GetPort(ctx, p2.UUID)
				Expect(err).NotTo(HaveOccurred())
				Expect(port.InternalInfo).To(HaveKeyWithValue("tenant_vif_port_id", "vif-a"), "PXE-enabled ports first")
				Expect(rpc.VIFAttach.Call(ctx, api, rpc.VIFAttachArgs{NodeID: n.UUID, VIF: rpc.VIF{ID: "vif-a"}})).To(haveKind(errs.KindConflict, http.StatusConflict))
				Expect(rpc.VIFAttach.Call(ctx, api, rpc.VIFAttachArgs{NodeID: n.UUID, VIF: rpc.VIF{ID: "vif-b"}})).To(Succeed())
				err = rpc.VIFAttach.Call(ctx, api, rpc.VIFAttachArgs{NodeID: n.UUID, VIF: rpc.VIF{ID: "vif-c"}})
				Expect(err).To(haveKind(errs.KindInvalid, http.StatusBadRequest))
				Expect(errs.Message(err)).To(Equal("Unable to attach VIF vif-c, not enough free physical ports."))

				vifs, err := rpc.VIFList.Call(ctx, api, rpc.NodeArgs{NodeID: n.UUID})
				Expect(err).NotTo(HaveOccurred())
				Expect(vifs).To(ConsistOf(rpc.VIF{ID: "vif-a"}, rpc.VIF{ID: "vif-b"}))

				Expect(rpc.VIFDetach.Call(ctx, api, rpc.VIFDetachArgs{NodeID: n.UUID, VIFID: "vif-a"})).To(Succeed())
				port, err = e.store.GetPort(ctx, p2.UUID)
				Expect(err).NotTo(HaveOccurred())
				Expect(port.InternalInfo).NotTo(HaveKey("tenant_vif_port_id"))
				Expect(rpc.VIFDetach.Call(ctx, api, rpc.VIFDetachArgs{NodeID: n.UUID, VIFID: "vif-a"})).To(haveKind(errs.KindInvalid, http.StatusBadRequest))
				Expect(e.node(ctx, n.UUID).Reservation).To(BeNil())

				noop := e.createNode(ctx, states.Active)
				vifs, err = rpc.VIFList.Call(ctx, api, rpc.NodeArgs{NodeID: noop.UUID})
				Expect(err).NotTo(HaveOccurred())
				Expect(vifs).To(BeEmpty())
				Expect(rpc.VIFAttach.Call(ctx, api, rpc.VIFAttachArgs{NodeID: noop.UUID, VIF: rpc.VIF{ID: "vif-a"}})).To(Succeed(), "noop accepts and forgets")
				vifs, err = rpc.VIFList.Call(ctx, api, rpc.NodeArgs{NodeID: noop.UUID})
				Expect(err).NotTo(HaveOccurred())
				Expect(vifs).To(BeEmpty())

				lockedByOther(ctx, n)
				Expect(rpc.VIFAttach.Call(ctx, api, rpc.VIFAttachArgs{NodeID: n.UUID, VIF: rpc.VIF{ID: "vif-d"}})).To(haveKind(errs.KindNodeLocked, http.StatusConflict))
			})
		})
	}

	It("refuses heartbeats with an http callback_url under [agent] require_tls", func(ctx SpecContext) {
		e := newEnv(backends[0])
		c := e.start(ctx, "cond-"+e.group, func(cfg *config.Config) { cfg.Agent.RequireTLS = true })
		api := e.api(c)
		n := e.createNode(ctx, states.DeployWait)
		tok, err := rpc.GetNodeWithToken.Call(ctx, api, rpc.LookupArgs{NodeID: n.UUID})
		Expect(err).NotTo(HaveOccurred())
		err = rpc.Heartbeat.Call(ctx, api, rpc.HeartbeatArgs{NodeID: n.UUID, CallbackURL: "http://192.0.2.7:9999", AgentToken: tok.AgentToken})
		Expect(err).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
		Expect(errs.Message(err)).To(ContainSubstring("require_tls"))
		Expect(e.node(ctx, n.UUID).DriverInternalInfo).NotTo(HaveKey("agent_url"))

		_, cert, err := agent.NewSelfSignedCert("192.0.2.7")
		Expect(err).NotTo(HaveOccurred())
		Expect(rpc.Heartbeat.Call(ctx, api, rpc.HeartbeatArgs{NodeID: n.UUID, CallbackURL: "https://192.0.2.7:9999", AgentToken: tok.AgentToken,
			AgentVerifyCA: cert})).To(Succeed())
		Expect(e.node(ctx, n.UUID).DriverInternalInfo).To(HaveKeyWithValue("agent_url", "https://192.0.2.7:9999"))
	})

	It("binds a looked-up token to the lookup's address under [agent] bind_token_to_source, and not when it is off", func(ctx SpecContext) {
		for _, bind := range []bool{true, false} {
			e := newEnv(backends[0])
			c := e.start(ctx, fmt.Sprintf("bind-%t-%s", bind, e.group), func(cfg *config.Config) { cfg.Agent.BindTokenToSource = bind })
			api := e.api(c)
			n := e.createNode(ctx, states.DeployWait)
			tok, err := rpc.GetNodeWithToken.Call(ctx, api, rpc.LookupArgs{NodeID: n.UUID, SourceAddress: "192.0.2.7"})
			Expect(err).NotTo(HaveOccurred())
			again, err := rpc.GetNodeWithToken.Call(ctx, api, rpc.LookupArgs{NodeID: n.UUID, SourceAddress: "192.0.2.66"})
			Expect(err).NotTo(HaveOccurred())
			Expect(again.AgentToken).To(Equal("******"), "a second lookup gets no token, from any address")

			beat := rpc.HeartbeatArgs{NodeID: n.UUID, SourceAddress: "192.0.2.66", CallbackURL: "http://192.0.2.66:9999", AgentToken: tok.AgentToken}
			err = rpc.Heartbeat.Call(ctx, api, beat)
			if bind {
				Expect(err).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
				Expect(e.node(ctx, n.UUID).DriverInternalInfo).NotTo(HaveKey("agent_url"))
				beat.SourceAddress, beat.CallbackURL = "192.0.2.7", "http://192.0.2.7:9999"
				Expect(rpc.Heartbeat.Call(ctx, api, beat)).To(Succeed())
			} else {
				Expect(err).NotTo(HaveOccurred())
			}
			Expect(e.node(ctx, n.UUID).DriverInternalInfo).To(HaveKeyWithValue("agent_url", beat.CallbackURL))
		}
	})

	It("hands valid heartbeats to a deploy interface that handles them, in a worker holding the lock", func(ctx SpecContext) {
		e := newEnv(backends[0])
		ht := e.hw.HardwareType()
		ht.Interfaces = maps.Clone(ht.Interfaces)
		hb := &heartbeatDeploy{DeployInterface: ht.Interfaces[hwcatalog.Deploy][0].Impl.(driver.DeployInterface)}
		ht.Interfaces[hwcatalog.Deploy] = []driver.Implementation{{Name: "fake", Impl: hb}}
		reg, err := driver.NewRegistry([]string{fake.Name}, ht)
		Expect(err).NotTo(HaveOccurred())
		c := e.startWith(ctx, "cond-"+e.group, func(o *conductor.Options) { o.Drivers = reg })
		api := e.api(c)
		n := e.createNode(ctx, states.CleanWait)
		tok, err := rpc.GetNodeWithToken.Call(ctx, api, rpc.LookupArgs{NodeID: n.UUID})
		Expect(err).NotTo(HaveOccurred())
		Expect(rpc.Heartbeat.Call(ctx, api, rpc.HeartbeatArgs{NodeID: n.UUID, CallbackURL: "http://192.0.2.8:9999", AgentVersion: "9.2", AgentToken: tok.AgentToken})).To(Succeed())
		Eventually(hb.seen).Should(Equal([]string{n.UUID + " http://192.0.2.8:9999 9.2"}))
		// Polled as the whole map: BeTrue panics on the nil of a key not
		// yet written instead of polling again.
		Eventually(func() model.JSONObject { return e.node(ctx, n.UUID).DriverInternalInfo }).Should(HaveKeyWithValue("handled", true))
		Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
	})
})
