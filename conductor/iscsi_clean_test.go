package conductor_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/driver/iscsideploy"
	"github.com/ferricbm/ferric/deploy/agent"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// cleanTimeout bounds a clean of the small disks these specs use.
const cleanTimeout = 2 * time.Minute

// fillDisk gives a disk file a filesystem signature at its start and
// random data after it: what a deployed image leaves.
func fillDisk(path string) []byte {
	GinkgoHelper()
	run("mkfs.ext4", "-q", "-F", "-L", "tenant-root", path)
	data := make([]byte, 1<<20)
	_, _ = rand.Read(data)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	Expect(err).NotTo(HaveOccurred())
	_, err = f.WriteAt(data, 8<<20)
	Expect(err).NotTo(HaveOccurred())
	Expect(f.Close()).To(Succeed())
	Expect(signatures(path)).NotTo(BeEmpty())
	return data
}

// signatures are what blkid finds on a disk file ("" when nothing).
func signatures(path string) string {
	out, err := exec.Command("blkid", "-p", "-o", "export", path).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 {
		return ""
	}
	Expect(err).NotTo(HaveOccurred())
	return string(out)
}

func allZero(path string) bool {
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	return bytes.Count(b, []byte{0}) == len(b)
}

// corruptHook damages a KiB near the start of a disk file between an
// erase and its verification.
type corruptHook struct{ path string }

func (h *corruptHook) BeforeVerify(string) error {
	f, err := os.OpenFile(h.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteAt(bytes.Repeat([]byte{0x5a}, 1024), 4096)
	return err
}

// ramdisk serves ferric-agent's command API over the given disk files, as
// the ramdisk of a node would. Each boot is a new agent holding the token
// its lookup got: ferric-agent answers nothing without one.
type ramdisk struct {
	*httptest.Server
	disks   []string
	handler atomic.Pointer[http.Handler]
}

func startAgent(disks ...string) *ramdisk {
	r := &ramdisk{disks: disks}
	r.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		if h := r.handler.Load(); h != nil {
			(*h).ServeHTTP(rw, req)
			return
		}
		rw.WriteHeader(http.StatusServiceUnavailable)
	}))
	DeferCleanup(r.Close)
	return r
}

// boot starts a new agent holding token.
func (r *ramdisk) boot(token string) {
	GinkgoHelper()
	log := logrus.New()
	log.SetOutput(GinkgoWriter)
	a, err := agent.New(agent.Config{Disks: r.disks, Log: log, EraseBlockSize: 1 << 20, Params: agent.Params{AgentToken: token}})
	Expect(err).NotTo(HaveOccurred())
	h := a.Handler()
	r.handler.Store(&h)
}

// lookUp plays the lookup of a freshly booted ramdisk, which issues its token.
func (w *iscsiWorld) lookUp(ctx context.Context, uuid string) string {
	GinkgoHelper()
	withToken, err := rpc.GetNodeWithToken.Call(ctx, w.e.api(w.c), rpc.LookupArgs{NodeID: uuid})
	Expect(err).NotTo(HaveOccurred())
	Expect(withToken.AgentToken).NotTo(Equal("******"), "the cleaning ramdisk gets a token of its own")
	return withToken.AgentToken
}

// heartbeatUntil boots r (when given) with the token a lookup issues, then
// heartbeats until the node reaches one of want.
func (w *iscsiWorld) heartbeatUntil(ctx context.Context, uuid string, r *ramdisk, agentURL string, want ...states.State) *model.Node {
	GinkgoHelper()
	token := w.lookUp(ctx, uuid)
	if r != nil {
		r.boot(token)
		agentURL = r.URL
	}
	Eventually(func() states.State {
		// A heartbeat finding the node locked is refused; the next one
		// goes through.
		_ = rpc.Heartbeat.Call(ctx, w.e.api(w.c), rpc.HeartbeatArgs{NodeID: uuid, CallbackURL: agentURL, AgentToken: token})
		return w.e.node(ctx, uuid).State()
	}).WithContext(ctx).WithTimeout(cleanTimeout).WithPolling(100 * time.Millisecond).Should(BeElementOf(want))
	Eventually(w.e.reservation(ctx, uuid)).Should(BeNil())
	return w.e.node(ctx, uuid)
}

func (w *iscsiWorld) provide(ctx context.Context, uuid string) {
	GinkgoHelper()
	Expect(rpc.DoProvisioningAction.Call(ctx, w.e.api(w.c), rpc.ProvisioningActionArgs{NodeID: uuid, Action: string(states.EventProvide)})).To(Succeed())
	Eventually(w.e.provisionState(ctx, uuid)).Should(Equal(states.CleanWait))
	Eventually(w.e.reservation(ctx, uuid)).Should(BeNil())
}

// eraseRecords reads driver_internal_info.erase_record.
func eraseRecords(n *model.Node) []map[string]any {
	list, _ := n.DriverInternalInfo["erase_record"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, r := range list {
		m, _ := r.(map[string]any)
		out = append(out, m)
	}
	return out
}

// expectCleanedUp checks what every finished clean leaves: no cleaning
// bookkeeping, no ramdisk boot files, the node off.
func (w *iscsiWorld) expectCleanedUp(n *model.Node, mac string) {
	GinkgoHelper()
	for _, k := range []string{"clean_steps", "clean_step_index", "agent_url", "deploy_key_secret", "agent_secret_token",
		"cleaning_iscsi_target", "agent_erase_devices_iterations", "cleaning_manual", "agent_cached_clean_steps",
		"clean_step_progress", "cleaning_reboot"} {
		Expect(n.DriverInternalInfo).NotTo(HaveKey(k))
	}
	Expect(n.CleanStep).To(BeEmpty())
	Expect(w.pxelinuxPath(mac)).NotTo(BeAnExistingFile())
	Expect(w.e.hwPower(n.UUID)).To(Equal(states.PowerOff))
}

func (w *iscsiWorld) manageableNode(ctx context.Context, diskMB int64) (*model.Node, string, string) {
	n, mac, backing := w.node(ctx, nil, diskMB)
	Expect(w.e.store.SaveNode(ctx, func() *model.Node {
		n := w.e.node(ctx, n.UUID)
		n.ProvisionState = ptr(string(states.Manageable))
		return n
	}())).To(Succeed())
	return n, mac, backing
}

var _ = Describe("In-band cleaning with the iscsi deploy interface", Label("tgtd"), func() {
	for _, backend := range backends {
		Context(backend, func() {
			It("erases the disk through the agent on provide, records it, and leaves nothing of the clean behind", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, backing := w.manageableNode(ctx, 16)
				fillDisk(backing)
				srv := startAgent(backing)
				w.provide(ctx, n.UUID)

				By("booting the ramdisk with both kinds of parameters and the erase settings")
				cfg, err := os.ReadFile(w.pxelinuxPath(mac))
				Expect(err).NotTo(HaveOccurred())
				for _, want := range []string{"ipa-api-url=http://127.0.0.1:6385 ", "deployment_id=" + n.UUID,
					"deployment_key=", "iscsi_target_iqn=" + iscsideploy.IQN(n.UUID), "boot_option=netboot"} {
					Expect(string(cfg)).To(ContainSubstring(want))
				}
				waiting := w.e.node(ctx, n.UUID)
				Expect(deployKey(waiting)).To(MatchRegexp(`^[A-Za-z0-9]{32}$`))
				Expect(waiting.DriverInternalInfo).To(HaveKeyWithValue("agent_erase_devices_iterations", BeNumerically("==", 1)))
				Expect(waiting.DriverInternalInfo).To(HaveKeyWithValue("agent_erase_devices_zeroize", true))
				Expect(w.e.hwPower(n.UUID)).To(Equal(states.PowerOn))

				final := w.heartbeatUntil(ctx, n.UUID, srv, "", states.Available)
				Expect(final.LastError).To(BeNil())
				Expect(final.Maintenance).To(BeFalse())
				Expect(allZero(backing)).To(BeTrue(), "a random pass and a zero pass leave zeros")

				By("recording both erase steps, metadata first (priority 99 before 10)")
				recs := eraseRecords(final)
				Expect(recs).To(HaveLen(2))
				Expect(recs[0]).To(And(HaveKeyWithValue("step", "erase_devices_metadata"), HaveKeyWithValue("device", backing),
					HaveKeyWithValue("by", "agent"), HaveKeyWithValue("method", "metadata")))
				Expect(recs[1]).To(And(HaveKeyWithValue("step", "erase_devices"), HaveKeyWithValue("method", "shred"),
					HaveKeyWithValue("passes", BeNumerically("==", 2)), HaveKeyWithValue("bytes", BeNumerically("==", 16<<20)),
					HaveKeyWithValue("samples_checked", BeNumerically(">", 0)), HaveKeyWithValue("at", Not(BeEmpty()))))
				w.expectCleanedUp(final, mac)
			})

			It("runs only the chosen step of a manual clean, and a configured priority of 0 leaves a step out of automated cleaning", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend, func(o *iscsideploy.Options) { o.Clean.EraseDevicesPriority = ptr(0) })
				n, mac, backing := w.manageableNode(ctx, 16)
				middle := fillDisk(backing)
				srv := startAgent(backing)
				Expect(rpc.DoNodeClean.Call(ctx, w.e.api(w.c), rpc.CleanArgs{NodeID: n.UUID,
					CleanSteps: []map[string]any{{"interface": "deploy", "step": "erase_devices_metadata"}}})).To(Succeed())
				Eventually(w.e.provisionState(ctx, n.UUID)).Should(Equal(states.CleanWait))
				final := w.heartbeatUntil(ctx, n.UUID, srv, "", states.Manageable)
				Expect(final.LastError).To(BeNil())
				Expect(signatures(backing)).To(BeEmpty(), "no filesystem signature left")
				data, err := os.ReadFile(backing)
				Expect(err).NotTo(HaveOccurred())
				Expect(data[8<<20:9<<20]).To(Equal(middle), "only metadata was erased")
				Expect(eraseRecords(final)).To(ConsistOf(HaveKeyWithValue("step", "erase_devices_metadata")))
				w.expectCleanedUp(final, mac)

				By("providing: erase_devices is disabled, the metadata wipe runs again")
				w.provide(ctx, n.UUID)
				final = w.heartbeatUntil(ctx, n.UUID, srv, "", states.Available)
				Expect(eraseRecords(final)).To(ConsistOf(HaveKeyWithValue("step", "erase_devices_metadata")), "a new clean replaces the record")
				data, err = os.ReadFile(backing)
				Expect(err).NotTo(HaveOccurred())
				Expect(data[8<<20 : 9<<20]).To(Equal(middle))
			})

			It("erases through the callback-only ramdisk's target itself, with its CHAP account, after checking the deploy key", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, backing := w.manageableNode(ctx, 16)
				fillDisk(backing)
				iqn := iscsideploy.IQN(n.UUID)
				Expect(w.tgt.ExportCHAP(iqn, backing, "ferric-cleaning1", "Hq4Ws8Ez2Xr6Tb9Yn3Um7Kp5")).To(Succeed())
				w.provide(ctx, n.UUID)
				key := deployKey(w.e.node(ctx, n.UUID))
				info := map[string]any{"key": "0" + key[1:], "address": "127.0.0.1", "iqn": iqn, "port": fmt.Sprint(w.tgt.Port), "lun": "1",
					"chap_username": "ferric-cleaning1", "chap_secret": "Hq4Ws8Ez2Xr6Tb9Yn3Um7Kp5"}
				if key[0] == '0' {
					info["key"] = "1" + key[1:]
				}
				_, err := w.passDeployInfo(ctx, n.UUID, info)
				Expect(err).To(MatchError(ContainSubstring("Deploy key does not match")))
				Expect(w.e.node(ctx, n.UUID).State()).To(Equal(states.CleanWait))

				info["key"] = key
				_, err = w.passDeployInfo(ctx, n.UUID, info)
				Expect(err).NotTo(HaveOccurred())
				Eventually(w.e.provisionState(ctx, n.UUID), cleanTimeout).Should(Equal(states.Available))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				final := w.e.node(ctx, n.UUID)
				Expect(final.LastError).To(BeNil())
				Expect(allZero(backing)).To(BeTrue())
				recs := eraseRecords(final)
				Expect(recs).To(HaveLen(2))
				Expect(recs[0]).To(And(HaveKeyWithValue("step", "erase_devices_metadata"), HaveKeyWithValue("by", "conductor"),
					HaveKeyWithValue("identity_verified", false)), "nothing was known of the disk to check")
				Expect(recs[1]).To(And(HaveKeyWithValue("step", "erase_devices"), HaveKeyWithValue("by", "conductor"),
					HaveKeyWithValue("device", ContainSubstring(iqn)), HaveKeyWithValue("passes", BeNumerically("==", 2)),
					HaveKeyWithValue("bytes", BeNumerically("==", 16<<20))))
				w.expectCleanedUp(final, mac)
			})

			It("fails the clean when the callback-only ramdisk sends no CHAP account, erasing nothing through its open export", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, backing := w.manageableNode(ctx, 16)
				middle := fillDisk(backing)
				w.provide(ctx, n.UUID)
				w.callbackWithoutCHAP(ctx, n.UUID, backing)
				Eventually(w.e.provisionState(ctx, n.UUID), cleanTimeout).Should(Equal(states.CleanFail))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				final := w.e.node(ctx, n.UUID)
				Expect(str(final.LastError)).To(Equal("Failed to clean the node " + n.UUID + ". Error: " + noCHAP))
				Expect(eraseRecords(final)).To(BeEmpty())
				data, err := os.ReadFile(backing)
				Expect(err).NotTo(HaveOccurred())
				Expect(data[8<<20:9<<20]).To(Equal(middle), "nothing was erased")
				w.expectCleanedUp(final, mac)
			})

			It("fails the clean when a second pass_deploy_info comes while the conductor erases through the first one's target", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend, func(o *iscsideploy.Options) { o.Initiator.LoginTimeout = 10 * time.Minute })
				n, mac, backing := w.manageableNode(ctx, 16)
				middle := fillDisk(backing)
				iqn := iscsideploy.IQN(n.UUID)
				Expect(w.exportAsRamdisk(iqn, backing)).To(Succeed())
				w.provide(ctx, n.UUID)
				key := deployKey(w.e.node(ctx, n.UUID))

				By("an attacker calling back first, so that its target would be erased in the disk's place")
				attacker := stallingPortal()
				_, err := w.passDeployInfo(ctx, n.UUID, map[string]any{"key": key, "address": "127.0.0.1", "iqn": iqn, "port": attacker.port,
					"chap_username": "ferric-attacker", "chap_secret": "Ab3Cd5Ef7Gh9Jk2Lm4Np6Qr8"})
				Expect(err).NotTo(HaveOccurred())
				Eventually(attacker.connected, cleanTimeout).Should(Receive())

				By("the node's own ramdisk calling back with the same key")
				_, err = w.passDeployInfo(ctx, n.UUID, withCHAP(map[string]any{"key": key, "address": "127.0.0.1", "iqn": iqn, "port": w.tgt.Port}))
				Expect(errs.Message(err)).To(Equal(secondCallback))
				Eventually(w.e.provisionState(ctx, n.UUID), cleanTimeout).Should(Equal(states.CleanFail))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				final := w.e.node(ctx, n.UUID)
				Expect(str(final.LastError)).To(ContainSubstring(secondCallback))
				Expect(eraseRecords(final)).To(BeEmpty(), "nothing is recorded as erased")
				data, err := os.ReadFile(backing)
				Expect(err).NotTo(HaveOccurred())
				Expect(data[8<<20 : 9<<20]).To(Equal(middle))
				w.expectCleanedUp(final, mac)
			})

			It("erases only a LUN reporting the serial number recorded at the last deploy, and says it checked", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, backing := w.manageableNode(ctx, 16)
				recorded := w.e.node(ctx, n.UUID)
				recorded.DriverInternalInfo = model.JSONObject{"disk_serial": "SN-DEPLOYED"}
				Expect(w.e.store.SaveNode(ctx, recorded)).To(Succeed())
				iqn := iscsideploy.IQN(n.UUID)
				Expect(w.exportAsRamdisk(iqn, backing)).To(Succeed())
				Expect(w.tgt.SetSerial("SN-DEPLOYED")).To(Succeed())
				callback := func() {
					GinkgoHelper()
					_, err := w.passDeployInfo(ctx, n.UUID, withCHAP(map[string]any{"key": deployKey(w.e.node(ctx, n.UUID)),
						"address": "127.0.0.1", "iqn": iqn, "port": w.tgt.Port}))
					Expect(err).NotTo(HaveOccurred())
				}
				fillDisk(backing)
				w.provide(ctx, n.UUID)
				callback()
				Eventually(w.e.provisionState(ctx, n.UUID), cleanTimeout).Should(Equal(states.Available))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				recs := eraseRecords(w.e.node(ctx, n.UUID))
				Expect(recs).To(HaveLen(2))
				Expect(recs).To(HaveEach(HaveKeyWithValue("identity_verified", true)))

				By("refusing to erase a LUN that reports another serial number")
				Expect(rpc.DoProvisioningAction.Call(ctx, w.e.api(w.c), rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: string(states.EventManage)})).To(Succeed())
				Eventually(w.e.provisionState(ctx, n.UUID)).Should(Equal(states.Manageable))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				Expect(w.tgt.SetSerial("SN-ELSEWHERE")).To(Succeed())
				middle := fillDisk(backing)
				w.provide(ctx, n.UUID)
				callback()
				Eventually(w.e.provisionState(ctx, n.UUID), cleanTimeout).Should(Equal(states.CleanFail))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				final := w.e.node(ctx, n.UUID)
				Expect(str(final.LastError)).To(ContainSubstring(`disk identity check failed: the exported LUN reports serial number "SN-ELSEWHERE", ` +
					`but the disk of the node's last deploy says "SN-DEPLOYED"`))
				data, err := os.ReadFile(backing)
				Expect(err).NotTo(HaveOccurred())
				Expect(data[8<<20:9<<20]).To(Equal(middle), "nothing was erased")
				w.expectCleanedUp(final, mac)
			})

			It("fails the clean when verification finds the disk changed after the conductor's erase", func(ctx SpecContext) {
				hook := &corruptHook{}
				w := newISCSIWorld(ctx, backend, func(o *iscsideploy.Options) { o.Clean.EraseHook = hook })
				n, mac, backing := w.manageableNode(ctx, 16)
				hook.path = backing
				iqn := iscsideploy.IQN(n.UUID)
				Expect(w.exportAsRamdisk(iqn, backing)).To(Succeed())
				w.provide(ctx, n.UUID)
				_, err := w.passDeployInfo(ctx, n.UUID, withCHAP(map[string]any{"key": deployKey(w.e.node(ctx, n.UUID)),
					"address": "127.0.0.1", "iqn": iqn, "port": w.tgt.Port}))
				Expect(err).NotTo(HaveOccurred())
				Eventually(w.e.provisionState(ctx, n.UUID), cleanTimeout).Should(Equal(states.CleanFail))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				final := w.e.node(ctx, n.UUID)
				Expect(str(final.LastError)).To(ContainSubstring("verification of " + iqn))
				Expect(final.Maintenance).To(BeTrue())
				Expect(str(final.Fault)).To(Equal("clean failure"))
				Expect(eraseRecords(final)).To(ConsistOf(HaveKeyWithValue("step", "erase_devices_metadata")), "only the step that passed is recorded")
				w.expectCleanedUp(final, mac)
			})

			It("keeps a node in clean wait on its step when another conductor takes it over", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, backing := w.manageableNode(ctx, 16)
				fillDisk(backing)
				srv := startAgent(backing)
				w.provide(ctx, n.UUID)
				token := w.lookUp(ctx, n.UUID)
				srv.boot(token)
				Eventually(func() any {
					_ = rpc.Heartbeat.Call(ctx, w.e.api(w.c), rpc.HeartbeatArgs{NodeID: n.UUID, CallbackURL: srv.URL, AgentToken: token})
					return w.e.node(ctx, n.UUID).CleanStep["step"]
				}).WithContext(ctx).WithTimeout(cleanTimeout).Should(Equal("erase_devices_metadata"))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())

				By("stopping the conductor; the next heartbeat reaches the survivor")
				Expect(w.c.Stop(ctx)).To(Succeed())
				w.c = w.e.start(ctx, "iscsi-survivor-"+newUUID()[:8])
				Eventually(func() states.State {
					_ = rpc.Heartbeat.Call(ctx, w.e.api(w.c), rpc.HeartbeatArgs{NodeID: n.UUID, CallbackURL: srv.URL, AgentToken: token})
					return w.e.node(ctx, n.UUID).State()
				}).WithContext(ctx).WithTimeout(cleanTimeout).WithPolling(100 * time.Millisecond).Should(Equal(states.Available))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				final := w.e.node(ctx, n.UUID)
				Expect(final.LastError).To(BeNil())
				Expect(eraseRecords(final)).To(HaveLen(2), "the step the first conductor started was not run twice or lost")
				Expect(allZero(backing)).To(BeTrue())
				w.expectCleanedUp(final, mac)
			})

			It("reboots the node after a step that asks for it, and goes on when the rebooted agent heartbeats", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, _ := w.manageableNode(ctx, 16)
				agent := newStubAgent(map[string]any{"interface": "deploy", "step": "erase_devices_metadata", "priority": 99,
					"abortable": true, "reboot_requested": true})
				w.provide(ctx, n.UUID)
				Eventually(func() bool {
					// No heartbeat once the node rebooted: the old agent is gone.
					if w.e.node(ctx, n.UUID).DriverInternalInfo["cleaning_reboot"] == true {
						return true
					}
					agent.heartbeat(ctx, w, n.UUID)
					return false
				}).WithContext(ctx).WithTimeout(cleanTimeout).WithPolling(100 * time.Millisecond).Should(BeTrue())
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				Expect(w.e.node(ctx, n.UUID).State()).To(Equal(states.CleanWait))
				Expect(w.e.node(ctx, n.UUID).DriverInternalInfo).NotTo(HaveKey("agent_secret_token"), "the rebooted agent gets a new token")

				By("the agent coming back with no command run")
				agent.reboot()
				final := w.heartbeatUntil(ctx, n.UUID, nil, agent.srv.URL, states.Available)
				Expect(final.LastError).To(BeNil())
				Expect(agent.executed()).To(HaveLen(1), "the step ran once")
				w.expectCleanedUp(final, mac)
			})

			It("cleans through an agent serving TLS, trusting the certificate its heartbeat presented and no other", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, _ := w.manageableNode(ctx, 16)
				step := map[string]any{"interface": "deploy", "step": "erase_devices_metadata", "priority": 99, "abortable": true}
				cert, certPEM, err := agent.NewSelfSignedCert("127.0.0.1")
				Expect(err).NotTo(HaveOccurred())
				tlsAgent := newTLSStubAgent(step, cert, certPEM)
				Expect(tlsAgent.srv.URL).To(HavePrefix("https://"))
				w.provide(ctx, n.UUID)
				w.heartbeatTLSUntil(ctx, n.UUID, tlsAgent, states.Available)
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				final := w.e.node(ctx, n.UUID)
				Expect(final.LastError).To(BeNil())
				Expect(tlsAgent.executed()).To(HaveLen(1), "the step ran on the agent, over TLS")
				w.expectCleanedUp(final, mac)
				Expect(final.DriverInternalInfo).NotTo(HaveKey("agent_verify_ca"))

				By("a server at the agent's address with another certificate")
				n2, _, _ := w.manageableNode(ctx, 16)
				otherCert, _, err := agent.NewSelfSignedCert("127.0.0.1")
				Expect(err).NotTo(HaveOccurred())
				mitm := newTLSStubAgent(step, otherCert, certPEM)
				w.provide(ctx, n2.UUID)
				w.heartbeatTLSUntil(ctx, n2.UUID, mitm, states.CleanFail)
				Eventually(w.e.reservation(ctx, n2.UUID)).Should(BeNil())
				Expect(str(w.e.node(ctx, n2.UUID).LastError)).To(And(ContainSubstring("Failed to poll the agent"), ContainSubstring("certificate")))
				Expect(mitm.executed()).To(BeEmpty(), "nothing was sent to the server that does not hold the agent's key")
			})

			It("refreshes the agent's steps and starts an automated clean again after a hardware manager version mismatch", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, _, _ := w.manageableNode(ctx, 16)
				agent := newStubAgent(map[string]any{"interface": "deploy", "step": "erase_devices", "priority": 10, "abortable": true})
				agent.mismatchOnce = true
				w.provide(ctx, n.UUID)
				final := w.heartbeatUntil(ctx, n.UUID, nil, agent.srv.URL, states.Available)
				Expect(final.LastError).To(BeNil())
				runs := agent.executed()
				Expect(runs).To(HaveLen(2))
				Expect(runs[0]["clean_version"]).To(Equal(map[string]any{"stub": "1.0"}))
				Expect(runs[1]["clean_version"]).To(Equal(map[string]any{"stub": "1.1"}), "the steps were fetched again")
			})

			It("fails the clean with the agent's error when its step fails", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, _ := w.manageableNode(ctx, 16)
				srv := startAgent(w.dir + "/no-such-disk")
				w.provide(ctx, n.UUID)
				final := w.heartbeatUntil(ctx, n.UUID, srv, "", states.CleanFail)
				Expect(str(final.LastError)).To(And(ContainSubstring("Agent returned error for clean step"),
					ContainSubstring("erase_devices_metadata"), ContainSubstring("no-such-disk")))
				Expect(final.Maintenance).To(BeTrue())
				Expect(final.TargetState()).To(Equal(states.Available))
				w.expectCleanedUp(final, mac)
			})

			It("aborts a clean waiting for its agent: clean failed without maintenance, the ramdisk powered off", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, _ := w.manageableNode(ctx, 16)
				w.provide(ctx, n.UUID)
				Expect(rpc.DoProvisioningAction.Call(ctx, w.e.api(w.c), rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: string(states.EventAbort)})).To(Succeed())
				Eventually(w.e.provisionState(ctx, n.UUID)).Should(Equal(states.CleanFail))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				final := w.e.node(ctx, n.UUID)
				Expect(str(final.LastError)).To(Equal("By request, the clean operation was aborted"))
				Expect(final.Maintenance).To(BeFalse())
				w.expectCleanedUp(final, mac)

				Expect(rpc.DoProvisioningAction.Call(ctx, w.e.api(w.c), rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: string(states.EventManage)})).To(Succeed())
				Eventually(w.e.provisionState(ctx, n.UUID)).Should(Equal(states.Manageable))
			})

			It("fails a clean whose agent stops heartbeating when the clean callback timeout expires", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, _ := w.manageableNode(ctx, 16)
				w.provide(ctx, n.UUID)
				Expect(w.c.Stop(ctx)).To(Succeed())
				w.c = w.e.start(ctx, "iscsi-cleanwait-"+newUUID()[:8], withPeriodicTasks, func(cfg *config.Config) {
					cfg.Conductor.CleanCallbackTimeout = time.Second
				})
				Eventually(w.e.provisionState(ctx, n.UUID)).Should(Equal(states.CleanFail))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				Eventually(func() string { return w.pxelinuxPath(mac) }).ShouldNot(BeAnExistingFile())
				final := w.e.node(ctx, n.UUID)
				Expect(str(final.LastError)).To(ContainSubstring("Timeout reached while cleaning the node"))
				Expect(final.Maintenance).To(BeTrue())
				w.expectCleanedUp(final, mac)
			})
		})
	}
})

// stubAgent answers the agent command API with one clean step of its
// own: for what ferric-agent never does (reboot_requested, a version
// change between get_clean_steps and execute_clean_step).
type stubAgent struct {
	srv  *httptest.Server
	step map[string]any
	// mismatchOnce: the first execute_clean_step ends
	// CLEAN_VERSION_MISMATCH and the version becomes 1.1.
	mismatchOnce bool

	token string
	// verifyCA is the certificate its heartbeats present ("" for plain
	// HTTP).
	verifyCA string

	mu       sync.Mutex
	version  string
	commands []map[string]any
	runs     []map[string]any
}

func newStubAgent(step map[string]any) *stubAgent {
	a := &stubAgent{step: step, version: "1.0"}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	DeferCleanup(a.srv.Close)
	return a
}

func (a *stubAgent) serve(rw http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.Method == http.MethodGet {
		_ = json.NewEncoder(rw).Encode(map[string]any{"commands": a.commands})
		return
	}
	var cmd struct {
		Name   string         `json:"name"`
		Params map[string]any `json:"params"`
	}
	_ = json.NewDecoder(r.Body).Decode(&cmd)
	switch cmd.Name {
	case "clean.get_clean_steps":
		_ = json.NewEncoder(rw).Encode(map[string]any{"command_name": "get_clean_steps", "command_status": "SUCCEEDED",
			"command_result": map[string]any{"clean_steps": map[string]any{"StubManager": []any{a.step}},
				"hardware_manager_version": map[string]any{"stub": a.version}}})
	case "clean.execute_clean_step":
		a.runs = append(a.runs, cmd.Params)
		status, result := "SUCCEEDED", any(map[string]any{"clean_step": cmd.Params["step"], "clean_result": nil})
		if a.mismatchOnce {
			a.mismatchOnce, a.version, status, result = false, "1.1", "CLEAN_VERSION_MISMATCH", nil
		}
		a.commands = append(a.commands, map[string]any{"command_name": "execute_clean_step", "command_status": status,
			"command_result": result})
		_ = json.NewEncoder(rw).Encode(map[string]any{"command_name": "execute_clean_step", "command_status": "RUNNING"})
	default:
		rw.WriteHeader(http.StatusNotFound)
	}
}

// newTLSStubAgent serves over TLS with cert, and its heartbeats present
// verifyCA: its own certificate's PEM, or another's for a server that is
// not the agent the heartbeats come from.
func newTLSStubAgent(step map[string]any, cert tls.Certificate, verifyCA string) *stubAgent {
	a := &stubAgent{step: step, version: "1.0", verifyCA: verifyCA}
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	a.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	a.srv.StartTLS()
	DeferCleanup(a.srv.Close)
	return a
}

// heartbeatTLSUntil heartbeats for a, with the token of one lookup and
// its certificate, until the node reaches want.
func (w *iscsiWorld) heartbeatTLSUntil(ctx context.Context, uuid string, a *stubAgent, want states.State) {
	GinkgoHelper()
	token := w.lookUp(ctx, uuid)
	Eventually(func() states.State {
		_ = rpc.Heartbeat.Call(ctx, w.e.api(w.c), rpc.HeartbeatArgs{NodeID: uuid, CallbackURL: a.srv.URL, AgentToken: token, AgentVerifyCA: a.verifyCA})
		return w.e.node(ctx, uuid).State()
	}).WithContext(ctx).WithTimeout(cleanTimeout).WithPolling(100 * time.Millisecond).Should(Equal(want))
}

// reboot forgets the commands run, as a freshly booted agent.
func (a *stubAgent) reboot() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.commands = nil
}

func (a *stubAgent) executed() []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.runs)
}

// heartbeat looks the node up, keeping the token the lookup issues (later
// lookups only get it masked), and heartbeats with it.
func (a *stubAgent) heartbeat(ctx context.Context, w *iscsiWorld, uuid string) {
	withToken, err := rpc.GetNodeWithToken.Call(ctx, w.e.api(w.c), rpc.LookupArgs{NodeID: uuid})
	Expect(err).NotTo(HaveOccurred())
	if withToken.AgentToken != "******" {
		a.token = withToken.AgentToken
	}
	_ = rpc.Heartbeat.Call(ctx, w.e.api(w.c), rpc.HeartbeatArgs{NodeID: uuid, CallbackURL: a.srv.URL, AgentToken: a.token})
}
