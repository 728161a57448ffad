package conductor_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/ferricbm/ferric/conductor"
	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/conductor/driver/iscsideploy"
	"github.com/ferricbm/ferric/conductor/driver/pxe"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/deploy/agent"
	"github.com/ferricbm/ferric/deploy/agent/tgt"
	"github.com/ferricbm/ferric/deploy/agent/tgt/tgttest"
	"github.com/ferricbm/ferric/deploy/disk"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/deploy/iscsi"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// iscsiWorld is one spec's deploy setting: a tgtd standing in for the
// ramdisk's target, an HTTP server with the images, boot roots, and a
// conductor driving fake-hardware nodes with the pxe and iscsi interfaces.
type iscsiWorld struct {
	e        *env
	c        *conductor.Conductor
	dir      string
	tgt      *tgttest.Target
	images   *httptest.Server
	tftp     string
	httpRoot string
	httpURL  string
	notified chan string
	// agentKnowsNoCHAP makes agentHeartbeat's stub answer as
	// ironic-python-agent does to parameters it does not know.
	agentKnowsNoCHAP bool
	// bootloaderFailure, when set, is the error agentHeartbeat's stub
	// fails image.install_bootloader with.
	bootloaderFailure string
	// refRaw is qemu-img's raw conversion of the qcow2 image.
	refRaw []byte
	rawImg []byte
}

func run(name string, args ...string) {
	out, err := exec.Command(name, args...).CombinedOutput()
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "%s %v: %s", name, args, out)
}

// buildImages writes a 24 MiB raw image with random data in three places
// (zeros elsewhere), its qcow2 conversion, and the raw reference qemu-img
// makes back from the qcow2.
func (w *iscsiWorld) buildImages() {
	dir := filepath.Join(w.dir, "images")
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	img := make([]byte, 24<<20)
	for _, off := range []int{0, 5 << 20, 17<<20 + 4096} {
		_, _ = rand.Read(img[off : off+(1<<20)])
	}
	w.rawImg = img
	Expect(os.WriteFile(filepath.Join(dir, "disk.raw"), img, 0o644)).To(Succeed())
	run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", filepath.Join(dir, "disk.raw"), filepath.Join(dir, "disk.qcow2"))
	ref := filepath.Join(w.dir, "reference.raw")
	run("qemu-img", "convert", "-f", "qcow2", "-O", "raw", filepath.Join(dir, "disk.qcow2"), ref)
	var err error
	w.refRaw, err = os.ReadFile(ref)
	Expect(err).NotTo(HaveOccurred())
	for _, name := range []string{"deploy_kernel", "deploy_ramdisk", "kernel", "ramdisk"} {
		Expect(os.WriteFile(filepath.Join(dir, name), []byte("boot file "+name), 0o644)).To(Succeed())
	}
	w.images = httptest.NewServer(http.FileServer(http.Dir(dir)))
	DeferCleanup(w.images.Close)
}

// loopbackDownloads lets a world's conductor download the images its
// specs serve from 127.0.0.1, as the lab's configuration does.
var loopbackDownloads = image.Destinations{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

func newISCSIWorld(ctx context.Context, backend string, mods ...func(*iscsideploy.Options)) *iscsiWorld {
	return newISCSIWorldWith(ctx, backend, worldHooks{}, mods...)
}

// worldHooks add hardware types to a world's conductor.
type worldHooks struct {
	// files changes the boot file server's options before it is made.
	files func(w *iscsiWorld, o *pxe.Options)
	// types are enabled next to fake-hardware, sharing the world's
	// interfaces.
	types func(w *iscsiWorld, boot *pxe.Boot, dep *iscsideploy.Deploy) []driver.HardwareType
}

func newISCSIWorldWith(ctx context.Context, backend string, hooks worldHooks, mods ...func(*iscsideploy.Options)) *iscsiWorld {
	w := &iscsiWorld{e: newEnv(backend), dir: GinkgoT().TempDir(), notified: make(chan string, 4)}
	w.buildImages()
	daemon, err := tgttest.Start(ctx, w.dir, tgt.Options{Stock: true})
	Expect(err).NotTo(HaveOccurred())
	w.tgt = daemon
	// Specs kill this tgtd or leave sessions behind, as failing ramdisks
	// do, so a slow stop is reported, not failed; Stop still ends it.
	DeferCleanup(func() {
		if err := daemon.Stop(); err != nil {
			GinkgoWriter.Println("stop tgtd:", err)
		}
	})

	// The callback-only ramdisk waits for "done" here.
	notify, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(notify.Close)
	go func() {
		for {
			conn, err := notify.Accept()
			if err != nil {
				return
			}
			b, _ := io.ReadAll(io.LimitReader(conn, 64))
			conn.Close()
			w.notified <- string(b)
		}
	}()

	w.tftp, w.httpRoot = filepath.Join(w.dir, "tftpboot"), filepath.Join(w.dir, "httpboot")
	httpPort, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	w.httpURL = fmt.Sprintf("http://%s/boot", httpPort.Addr())
	Expect(httpPort.Close()).To(Succeed())
	allowed := []string{filepath.Join(w.dir, "images")}
	files := pxe.Options{TFTPRoot: w.tftp, HTTPRoot: w.httpRoot, HTTPURL: w.httpURL, IPXE: true,
		DefaultBootOption: "local", FileAllowedPaths: allowed, Downloads: loopbackDownloads, Log: w.e.log}
	if hooks.files != nil {
		hooks.files(w, &files)
	}
	boot := pxe.New(files)
	opts := iscsideploy.Options{
		APIURL: "http://127.0.0.1:6385/", PortalPort: daemon.Port, MaxConcurrentWrites: 2, WriteWorkers: 4,
		PowerOffAfterFailure: true, DefaultBootOption: "local", CacheDir: filepath.Join(w.dir, "cache"),
		ConnectAttempts: 2, NotifyPort: notify.Addr().(*net.TCPAddr).Port, ProgressInterval: 10 * time.Millisecond,
		TempDir: w.dir, FileAllowedPaths: allowed, Downloads: loopbackDownloads, Log: w.e.log,
	}
	for _, m := range mods {
		m(&opts)
	}
	dep := iscsideploy.New(opts)
	hw := fake.New()
	ht := hw.HardwareType()
	ht.Interfaces = maps.Clone(ht.Interfaces)
	add := func(it hwcatalog.InterfaceType, name string, impl driver.Interface) {
		ht.Interfaces[it] = append(slices.Clone(ht.Interfaces[it]), driver.Implementation{Name: name, Impl: impl})
	}
	add(hwcatalog.Boot, pxe.Name, boot)
	add(hwcatalog.Deploy, iscsideploy.Name, dep)
	add(hwcatalog.Vendor, iscsideploy.Name, dep.Vendor())
	types, enabled := []driver.HardwareType{ht}, []string{fake.Name}
	if hooks.types != nil {
		for _, t := range hooks.types(w, boot, dep) {
			types, enabled = append(types, t), append(enabled, t.Name)
		}
	}
	reg, err := driver.NewRegistry(enabled, types...)
	Expect(err).NotTo(HaveOccurred())
	w.e.hw, w.e.drivers = hw, reg
	w.c = w.e.start(ctx, "iscsi-"+newUUID()[:8])
	return w
}

// node creates an available node booting pxe, deployed by iscsi, with one
// PXE port, its disk a sparse file of diskMB exported by tgtd when export
// is set.
func (w *iscsiWorld) node(ctx context.Context, instanceInfo model.JSONObject, diskMB int64) (*model.Node, string, string) {
	n := w.e.createNode(ctx, states.Available, func(n *model.Node) {
		n.BootInterface, n.DeployInterface, n.VendorInterface = ptr(pxe.Name), ptr(iscsideploy.Name), ptr(iscsideploy.Name)
		n.DriverInfo = model.JSONObject{"deploy_kernel": w.images.URL + "/deploy_kernel",
			"deploy_ramdisk": filepath.Join(w.dir, "images", "deploy_ramdisk")}
		n.InstanceInfo = instanceInfo
		n.PowerState = ptr(states.PowerOff)
	})
	mac := randomMAC()
	Expect(w.e.store.CreatePort(ctx, &model.Port{UUID: newUUID(), NodeID: n.ID, Address: mac, PXEEnabled: true})).To(Succeed())
	backing := filepath.Join(w.dir, n.UUID+".disk")
	f, err := os.Create(backing)
	Expect(err).NotTo(HaveOccurred())
	Expect(f.Truncate(diskMB << 20)).To(Succeed())
	Expect(f.Close()).To(Succeed())
	return n, mac, backing
}

func (w *iscsiWorld) pxelinuxPath(mac string) string {
	return filepath.Join(w.tftp, "pxelinux.cfg", "01-"+bytes2dash(mac))
}

func bytes2dash(mac string) string {
	return strings.ReplaceAll(mac, ":", "-")
}

func (w *iscsiWorld) deployToWait(ctx context.Context, uuid string) {
	Expect(rpc.DoNodeDeploy.Call(ctx, w.e.api(w.c), rpc.DeployArgs{NodeID: uuid})).To(Succeed())
	Eventually(w.e.provisionState(ctx, uuid)).Should(Equal(states.DeployWait))
	Eventually(w.e.reservation(ctx, uuid)).Should(BeNil())
}

func (w *iscsiWorld) passDeployInfo(ctx context.Context, uuid string, info map[string]any) (rpc.VendorPassthruResult, error) {
	return rpc.VendorPassthru.Call(ctx, w.e.api(w.c), rpc.VendorPassthruArgs{NodeID: uuid, Method: iscsideploy.PassDeployInfo,
		HTTPMethod: http.MethodPost, Info: info})
}

// The CHAP account the callback-only ramdisk of these specs exports the
// disk with and sends in pass_deploy_info.
const ramdiskCHAPUser, ramdiskCHAPSecret = "ferric-ramdisk02", "Wm4Xc7Vb2Nq9Lp5Rt8Zk3Hs6"

// exportAsRamdisk exports the node's disk as the callback-only ramdisk
// does: only to the initiator logging in with ramdiskCHAPUser.
func (w *iscsiWorld) exportAsRamdisk(iqn, backing string) error {
	return w.tgt.ExportCHAP(iqn, backing, ramdiskCHAPUser, ramdiskCHAPSecret)
}

// withCHAP adds the ramdisk's CHAP account to a pass_deploy_info body.
func withCHAP(info map[string]any) map[string]any {
	info["chap_username"], info["chap_secret"] = ramdiskCHAPUser, ramdiskCHAPSecret
	return info
}

// callbackWithoutCHAP exports the node's disk open to every initiator and
// calls back without a CHAP account, as a bash ramdisk does.
func (w *iscsiWorld) callbackWithoutCHAP(ctx context.Context, uuid, backing string) {
	GinkgoHelper()
	iqn := iscsideploy.IQN(uuid)
	Expect(w.tgt.Export(iqn, backing)).To(Succeed())
	_, err := w.passDeployInfo(ctx, uuid, map[string]any{"key": deployKey(w.e.node(ctx, uuid)),
		"address": "127.0.0.1", "iqn": iqn, "port": w.tgt.Port})
	Expect(err).NotTo(HaveOccurred())
}

// allowOpenExport is [iscsi] allow_export_without_chap = true.
func allowOpenExport(o *iscsideploy.Options) { o.AllowExportWithoutCHAP = true }

func deployKey(n *model.Node) string {
	k, _ := n.DriverInternalInfo["deploy_key_secret"].(string)
	return k
}

// expectCleanFailure checks what every failed deploy must leave: deploy
// failed, the lock free, the node off, no boot files, no deploy key.
func (w *iscsiWorld) expectCleanFailure(ctx context.Context, uuid, mac, lastError string) {
	Eventually(w.e.provisionState(ctx, uuid)).Should(Equal(states.DeployFail))
	Eventually(w.e.reservation(ctx, uuid)).Should(BeNil())
	n := w.e.node(ctx, uuid)
	Expect(str(n.LastError)).To(ContainSubstring(lastError))
	Expect(w.pxelinuxPath(mac)).NotTo(BeAnExistingFile())
	Expect(filepath.Join(w.tftp, uuid)).NotTo(BeADirectory())
	Expect(n.DriverInternalInfo).NotTo(HaveKey("deploy_key_secret"))
	Expect(w.e.hwPower(uuid)).NotTo(Equal(states.PowerOn))
	_, err := os.Lstat(image.RefPath(filepath.Join(w.dir, "cache"), uuid))
	Expect(err).To(MatchError(os.ErrNotExist), "no image cache reference is left")
}

// agentStub is a heartbeating agent's API: iscsi.start_iscsi_target
// exports the node's disk, GET /v1/checksums checksums it.
type agentStub struct {
	mu          sync.Mutex
	cmd         map[string]any
	commands    int
	checksummed atomic.Int64
	// requestIDs are the X-Openstack-Request-Id headers of every call.
	requestIDs []string
}

func (a *agentStub) sawRequestIDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.requestIDs)
}

// command is the last command the agent was sent.
func (a *agentStub) command() map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cmd
}

// commandCount is how many commands the agent was sent.
func (a *agentStub) commandCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.commands
}

// agentHeartbeat starts an agent stub for the node whose disk is backing
// and heartbeats for it; beforeChecksums, if set, runs before each
// checksums answer.
func (w *iscsiWorld) agentHeartbeat(ctx context.Context, uuid, backing string, beforeChecksums func()) *agentStub {
	GinkgoHelper()
	withToken, err := rpc.GetNodeWithToken.Call(ctx, w.e.api(w.c), rpc.LookupArgs{NodeID: uuid})
	Expect(err).NotTo(HaveOccurred())
	return w.agentHeartbeatWith(ctx, uuid, backing, withToken.AgentToken, beforeChecksums)
}

// agentHeartbeatWith is agentHeartbeat for an agent that holds token
// without a lookup handing it out (pre-issued on virtual media).
func (w *iscsiWorld) agentHeartbeatWith(ctx context.Context, uuid, backing, token string, beforeChecksums func()) *agentStub {
	GinkgoHelper()
	withToken := rpc.NodeWithToken{AgentToken: token}
	iqn := iscsideploy.IQN(uuid)
	a := &agentStub{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		defer GinkgoRecover()
		a.mu.Lock()
		a.requestIDs = append(a.requestIDs, r.Header.Get(agent.RequestIDHeader))
		a.mu.Unlock()
		if r.URL.Path == "/v1/checksums" {
			if beforeChecksums != nil {
				beforeChecksums()
			}
			a.checksummed.Add(serveChecksums(rw, r, backing, withToken.AgentToken))
			return
		}
		Expect(r.Method).To(Equal(http.MethodPost))
		Expect(r.URL.Path).To(Equal("/v1/commands"))
		Expect(r.URL.Query().Get("wait")).To(Equal("true"))
		Expect(r.URL.Query()).NotTo(HaveKey("agent_token"), "no token in a URL")
		Expect(r.Header.Get(agent.TokenHeader)).To(Equal(withToken.AgentToken))
		var cmd map[string]any
		Expect(json.NewDecoder(r.Body).Decode(&cmd)).To(Succeed())
		a.mu.Lock()
		a.cmd = cmd
		a.commands++
		a.mu.Unlock()
		if cmd["name"] == "image.install_bootloader" {
			res := map[string]any{"command_status": "SUCCEEDED", "command_result": nil}
			if w.bootloaderFailure != "" {
				res = map[string]any{"command_status": "FAILED", "command_error": map[string]any{
					"type": "CommandExecutionError", "message": "Command execution failed", "details": w.bootloaderFailure}}
			}
			_ = json.NewEncoder(rw).Encode(res)
			return
		}
		params, _ := cmd["params"].(map[string]any)
		user, _ := params["chap_username"].(string)
		secret, _ := params["chap_secret"].(string)
		switch {
		case w.agentKnowsNoCHAP && user != "":
			_ = json.NewEncoder(rw).Encode(map[string]any{"command_status": "FAILED", "command_error": map[string]any{
				"type": "TypeError", "details": "start_iscsi_target() got an unexpected keyword argument 'chap_username'"}})
			return
		case w.agentKnowsNoCHAP:
			Expect(w.tgt.Export(iqn, backing)).To(Succeed())
		default:
			Expect(w.tgt.ExportCHAP(iqn, backing, user, secret)).To(Succeed())
		}
		// ferric-agent exports its disk with the disk's own serial number,
		// the same for every ramdisk booted on the node; tgtd's default
		// changes with each target.
		Expect(w.tgt.SetSerial(fmt.Sprintf("SN-%08x", crc32.ChecksumIEEE([]byte(backing))))).To(Succeed())
		_ = json.NewEncoder(rw).Encode(map[string]any{"command_status": "SUCCEEDED",
			"command_result": map[string]any{"iscsi_target_iqn": iqn}})
	}))
	DeferCleanup(srv.Close)
	Expect(rpc.Heartbeat.Call(ctx, w.e.api(w.c), rpc.HeartbeatArgs{NodeID: uuid, CallbackURL: srv.URL,
		AgentVersion: "9.0.0", AgentToken: withToken.AgentToken})).To(Succeed())
	return a
}

// serveChecksums answers GET /v1/checksums as ferric-agent does, from the
// disk file backing, and returns how many bytes it checksummed.
func serveChecksums(rw http.ResponseWriter, r *http.Request, backing, token string) int64 {
	GinkgoHelper()
	q := r.URL.Query()
	Expect(q).NotTo(HaveKey("agent_token"), "no token in a URL")
	Expect(r.Header.Get(agent.TokenHeader)).To(Equal(token))
	off, err := strconv.ParseInt(q.Get("offset"), 10, 64)
	Expect(err).NotTo(HaveOccurred())
	n, err := strconv.ParseInt(q.Get("length"), 10, 64)
	Expect(err).NotTo(HaveOccurred())
	bs, err := strconv.Atoi(q.Get("block_size"))
	Expect(err).NotTo(HaveOccurred())
	f, err := os.Open(backing)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	sums, err := disk.ReadBack{R: f}.Checksums(r.Context(), off, n, bs)
	if r.Context().Err() != nil {
		// The deploy ended (a failed verification stops the others'
		// requests): nobody reads this answer.
		return 0
	}
	Expect(err).NotTo(HaveOccurred())
	Expect(json.NewEncoder(rw).Encode(map[string]any{"algorithm": "crc32c", "checksums": sums})).To(Succeed())
	return n
}

var _ = Describe("iSCSI deploy with PXE boot", Label("tgtd"), func() {
	for _, backend := range backends {
		Context(backend, func() {
			It("deploys a qcow2 whole-disk image through pass_deploy_info and boots it from disk", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, backing := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}, 64)
				w.deployToWait(ctx, n.UUID)
				iqn := iscsideploy.IQN(n.UUID)
				const chapUser, chapSecret = "ferric-ramdisk01", "Rk3vT8wQ2zL6nY9pB4xM7cJ5"
				Expect(w.tgt.ExportCHAP(iqn, backing, chapUser, chapSecret)).To(Succeed())
				_, err := iscsi.Dial(ctx, w.tgt.Portal, iqn, iscsi.Options{})
				Expect(err).To(HaveOccurred(), "the ramdisk's export refuses an initiator without CHAP")

				By("rendering PXELINUX and iPXE configurations with the ramdisk's parameters")
				key := deployKey(w.e.node(ctx, n.UUID))
				Expect(key).To(MatchRegexp(`^[A-Za-z0-9]{32}$`))
				cfg, err := os.ReadFile(w.pxelinuxPath(mac))
				Expect(err).NotTo(HaveOccurred())
				for _, want := range []string{"default deploy", "kernel " + n.UUID + "/deploy_kernel",
					"initrd=" + n.UUID + "/deploy_ramdisk", "deployment_id=" + n.UUID, "deployment_key=" + key,
					"iscsi_target_iqn=" + iqn, "ironic_api_url=http://127.0.0.1:6385 ", "ipa-api-url=http://127.0.0.1:6385 ",
					"boot_option=netboot", "boot_mode=bios"} {
					Expect(string(cfg)).To(ContainSubstring(want))
				}
				Expect(string(cfg)).NotTo(ContainSubstring("chap"), "no CHAP secret is served over TFTP")
				Expect(os.ReadFile(filepath.Join(w.tftp, n.UUID, "deploy_kernel"))).To(Equal([]byte("boot file deploy_kernel")))
				Expect(os.ReadFile(filepath.Join(w.tftp, n.UUID, "deploy_ramdisk"))).To(Equal([]byte("boot file deploy_ramdisk")))
				resp, err := http.Get(w.httpURL + "/pxelinux.cfg/" + mac)
				Expect(err).NotTo(HaveOccurred())
				ipxe, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				Expect(resp.StatusCode).To(Equal(http.StatusOK))
				Expect(string(ipxe)).To(HavePrefix("#!ipxe"))
				Expect(string(ipxe)).To(ContainSubstring("kernel " + w.httpURL + "/" + n.UUID + "/deploy_kernel"))
				Expect(w.e.hwPower(n.UUID)).To(Equal(states.PowerOn))

				By("refusing a wrong deploy key without changing anything")
				wrong := "x" + key[1:]
				if key[0] == 'x' {
					wrong = "y" + key[1:]
				}
				info := map[string]any{"key": wrong, "address": "127.0.0.1", "iqn": iqn,
					"port": strconv.Itoa(w.tgt.Port), "error": ""}
				_, err = w.passDeployInfo(ctx, n.UUID, info)
				Expect(err).To(HaveOccurred())
				Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
				Expect(errs.Message(err)).To(Equal("Deploy key does not match"))
				after := w.e.node(ctx, n.UUID)
				Expect(after.State()).To(Equal(states.DeployWait))
				Expect(after.Reservation).To(BeNil())
				Expect(deployKey(after)).To(Equal(key))

				By("refusing a callback without the target's address")
				_, err = w.passDeployInfo(ctx, n.UUID, map[string]any{"key": key, "iqn": iqn})
				Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
				Expect(errs.Message(err)).To(Equal("Parameters ['address'] were not passed to ironic for deploy."))

				By("refusing half a CHAP account")
				info["key"], info["chap_username"] = key, chapUser
				_, err = w.passDeployInfo(ctx, n.UUID, info)
				Expect(errs.Message(err)).To(Equal("chap_username and chap_secret must be passed together."))

				By("writing the image, logged in with the ramdisk's CHAP account, once the right key comes")
				info["chap_secret"] = chapSecret
				res, err := w.passDeployInfo(ctx, n.UUID, info)
				Expect(err).NotTo(HaveOccurred())
				Expect(res.Async).To(BeTrue())
				Eventually(w.e.provisionState(ctx, n.UUID), 2*time.Minute).Should(Equal(states.Active))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				Eventually(w.notified).Should(Receive(Equal("done "+chapSecret)), "done, with the CHAP secret the ramdisk sent to the API, not the deploy key TFTP served")

				written, err := os.ReadFile(backing)
				Expect(err).NotTo(HaveOccurred())
				Expect(sha256.Sum256(written[:len(w.refRaw)])).To(Equal(sha256.Sum256(w.refRaw)))
				Expect(w.refRaw).To(Equal(w.rawImg))

				final := w.e.node(ctx, n.UUID)
				Expect(final.LastError).To(BeNil())
				Expect(final.DriverInternalInfo["root_uuid_or_disk_id"]).To(MatchRegexp(`^0x[0-9a-f]{8}$`))
				Expect(final.DriverInternalInfo["root_uuid_or_disk_id"]).To(Equal(fmt.Sprintf("0x%s", hex.EncodeToString(reverse(written[440:444])))))
				Expect(final.DriverInternalInfo).NotTo(HaveKey("deploy_key_secret"))
				progress, _ := final.DriverInternalInfo["deploy_progress"].(map[string]any)
				Expect(progress).To(HaveKeyWithValue("bytes_total", BeNumerically("==", 24<<20)))
				Expect(progress).To(HaveKeyWithValue("bytes_done", BeNumerically("==", 24<<20)))
				Expect(str(final.PowerState)).To(Equal(states.PowerOn))
				Expect(w.e.hwPower(n.UUID)).To(Equal(states.PowerOn))
				bd, err := rpc.GetBootDevice.Call(ctx, w.e.api(w.c), rpc.NodeArgs{NodeID: n.UUID})
				Expect(err).NotTo(HaveOccurred())
				Expect(*bd.BootDevice).To(Equal("disk"))
				Expect(*bd.Persistent).To(BeTrue())

				By("removing the PXE configuration for a local boot")
				Expect(w.pxelinuxPath(mac)).NotTo(BeAnExistingFile())
				Expect(filepath.Join(w.httpRoot, "pxelinux.cfg", mac)).NotTo(BeAnExistingFile())
				Expect(filepath.Join(w.tftp, n.UUID)).NotTo(BeADirectory())
			})

			It("deploys a netbooted partition image with swap, ephemeral and config drive after an agent heartbeat, then tears it down", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				cdContent := bytes.Repeat([]byte("config-2 drive "), 40000)
				var gz bytes.Buffer
				zw := gzip.NewWriter(&gz)
				_, _ = zw.Write(cdContent)
				Expect(zw.Close()).To(Succeed())
				n, mac, backing := w.node(ctx, model.JSONObject{
					"image_source": w.images.URL + "/disk.raw", "root_gb": "1", "swap_mb": 64, "ephemeral_gb": 1,
					"kernel": w.images.URL + "/kernel", "ramdisk": w.images.URL + "/ramdisk",
					"capabilities": map[string]any{"boot_option": "netboot"},
				}, 2200)
				Expect(w.e.store.CreateVolumeTarget(ctx, &model.VolumeTarget{NodeID: n.ID, VolumeType: "iscsi", VolumeID: "data",
					Extra: model.JSONObject{}, Properties: model.JSONObject{}})).To(Succeed())
				By("deploying with a config drive stored apart from the node, as the API stores it")
				driveID, err := w.e.store.SaveConfigDrive(ctx, n.ID, strings.NewReader(base64.StdEncoding.EncodeToString(gz.Bytes())))
				Expect(err).NotTo(HaveOccurred())
				Expect(rpc.DoNodeDeploy.Call(ctx, w.e.api(w.c), rpc.DeployArgs{NodeID: n.UUID, ConfigDriveID: driveID})).To(Succeed())
				Eventually(w.e.provisionState(ctx, n.UUID)).Should(Equal(states.DeployWait))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				iqn := iscsideploy.IQN(n.UUID)
				key := deployKey(w.e.node(ctx, n.UUID))

				By("answering iscsi.start_iscsi_target from an agent stub that exports the disk and checksums it")
				agent := w.agentHeartbeat(ctx, n.UUID, backing, nil)
				Eventually(w.e.provisionState(ctx, n.UUID), 3*time.Minute).Should(Equal(states.Active))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				command := agent.command()
				Expect(command).To(HaveKeyWithValue("name", "iscsi.start_iscsi_target"))
				Expect(command["params"]).To(HaveKeyWithValue("iqn", iqn))
				Expect(command["params"]).To(HaveKeyWithValue("portal_port", BeNumerically("==", w.tgt.Port)))
				Expect(command["params"]).To(HaveKeyWithValue("wipe_disk_metadata", true))
				Expect(command["params"]).To(HaveKeyWithValue("chap_username", MatchRegexp(`^ferric-[A-Za-z0-9]{12}$`)))
				Expect(command["params"]).To(HaveKeyWithValue("chap_secret", MatchRegexp(`^[A-Za-z0-9]{24}$`)))
				By("verifying the write with the agent's checksums of its disk")
				Expect(agent.checksummed.Load()).To(BeNumerically(">=", 3<<20), "the image's 3 MiB of data")

				By("refusing the deploy key the agent's heartbeat made useless as a second callback")
				_, err = w.passDeployInfo(ctx, n.UUID, map[string]any{"key": key, "address": "127.0.0.1", "iqn": iqn})
				Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
				Expect(errs.Message(err)).To(Equal(secondCallback))
				Expect(w.e.node(ctx, n.UUID).State()).To(Equal(states.Active))

				By("laying out ephemeral, swap, config drive and root, in that order")
				f, err := disk.OpenFile(backing)
				Expect(err).NotTo(HaveOccurred())
				defer f.Close()
				table, err := disk.ReadTable(f)
				Expect(err).NotTo(HaveOccurred())
				Expect(table.Label).To(Equal(disk.LabelMSDOS))
				Expect(table.Partitions).To(HaveLen(4))
				eph, swap, cd, root := table.Partitions[0], table.Partitions[1], table.Partitions[2], table.Partitions[3]
				Expect(eph.Size).To(Equal(int64(1024 << 20)))
				Expect(swap.Size).To(Equal(int64(64 << 20)))
				Expect(root.Size).To(Equal(int64(1024 << 20)))
				Expect(eph.Start).To(Equal(int64(1 << 20)))
				Expect(swap.Start).To(Equal(eph.Start + eph.Size))
				Expect(cd.Start).To(Equal(swap.Start + swap.Size))
				Expect(root.Start).To(Equal(cd.Start + cd.Size))

				rootBytes := make([]byte, len(w.rawImg))
				_, err = f.ReadAt(rootBytes, root.Start)
				Expect(err).NotTo(HaveOccurred())
				Expect(rootBytes).To(Equal(w.rawImg))
				cdBytes := make([]byte, len(cdContent))
				_, err = f.ReadAt(cdBytes, cd.Start)
				Expect(err).NotTo(HaveOccurred())
				Expect(cdBytes).To(Equal(cdContent))
				swapSig := make([]byte, 10)
				_, err = f.ReadAt(swapSig, swap.Start+4096-10)
				Expect(err).NotTo(HaveOccurred())
				Expect(string(swapSig)).To(Equal("SWAPSPACE2"))
				ext := make([]byte, 2)
				_, err = f.ReadAt(ext, eph.Start+1024+56)
				Expect(err).NotTo(HaveOccurred())
				Expect(ext).To(Equal([]byte{0x53, 0xef}), "ext4 superblock magic on the ephemeral partition")

				By("switching the PXE configuration to the instance's kernel with its root")
				final := w.e.node(ctx, n.UUID)
				rootID, _ := final.DriverInternalInfo["root_uuid_or_disk_id"].(string)
				Expect(rootID).To(Equal(table.PartUUID(root)))
				cfg, err := os.ReadFile(w.pxelinuxPath(mac))
				Expect(err).NotTo(HaveOccurred())
				Expect(string(cfg)).To(ContainSubstring("default boot_partition"))
				Expect(string(cfg)).To(ContainSubstring("kernel " + n.UUID + "/kernel"))
				Expect(string(cfg)).To(ContainSubstring("root=UUID=" + rootID))
				Expect(string(cfg)).NotTo(ContainSubstring("deployment_key"))
				Expect(filepath.Join(w.tftp, n.UUID, "deploy_kernel")).NotTo(BeAnExistingFile())
				bd, err := rpc.GetBootDevice.Call(ctx, w.e.api(w.c), rpc.NodeArgs{NodeID: n.UUID})
				Expect(err).NotTo(HaveOccurred())
				Expect(*bd.BootDevice).To(Equal("pxe"))

				By("tearing down: the instance's files go, automated cleaning boots the ramdisk")
				Expect(rpc.DoNodeTearDown.Call(ctx, w.e.api(w.c), rpc.NodeArgs{NodeID: n.UUID})).To(Succeed())
				Eventually(w.e.provisionState(ctx, n.UUID)).Should(Equal(states.CleanWait))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				_, err = w.e.store.ConfigDrive(ctx, n.ID, driveID)
				Expect(err).To(MatchError(ContainSubstring("not found")), "the config drive goes with the instance")
				Expect(w.e.store.ListVolumeTargets(ctx, db.VolumeFilter{NodeID: &n.ID}, db.Page{}, nil)).To(BeEmpty(),
					"the iscsi deploy tears the instance's storage down, unlike the fake one")
				cfg, err = os.ReadFile(w.pxelinuxPath(mac))
				Expect(err).NotTo(HaveOccurred())
				Expect(string(cfg)).To(ContainSubstring("deployment_key="))
				Expect(filepath.Join(w.tftp, n.UUID, "kernel")).NotTo(BeAnExistingFile())

				By("aborting the clean (iscsi_clean_test.go cleans for real): power off, files removed")
				Expect(rpc.DoProvisioningAction.Call(ctx, w.e.api(w.c), rpc.ProvisioningActionArgs{NodeID: n.UUID, Action: string(states.EventAbort)})).To(Succeed())
				Eventually(w.e.provisionState(ctx, n.UUID)).Should(Equal(states.CleanFail))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				Expect(w.e.hwPower(n.UUID)).To(Equal(states.PowerOff))
				Expect(w.pxelinuxPath(mac)).NotTo(BeAnExistingFile())
				Expect(filepath.Join(w.tftp, n.UUID, "deploy_kernel")).NotTo(BeAnExistingFile())
				Expect(filepath.Join(w.tftp, n.UUID, "config")).NotTo(BeAnExistingFile())
			})

			It("rebuilds a node deployed through a heartbeating agent: each ramdisk gets a token of its own", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, _, backing := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}, 64)
				for _, rebuild := range []bool{false, true} {
					Expect(rpc.DoNodeDeploy.Call(ctx, w.e.api(w.c), rpc.DeployArgs{NodeID: n.UUID, Rebuild: rebuild})).To(Succeed())
					Eventually(w.e.provisionState(ctx, n.UUID)).Should(Equal(states.DeployWait))
					Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
					w.agentHeartbeat(ctx, n.UUID, backing, nil)
					Eventually(w.e.provisionState(ctx, n.UUID), 3*time.Minute).Should(Equal(states.Active), "rebuild: %v", rebuild)
					Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
					done := w.e.node(ctx, n.UUID)
					Expect(done.LastError).To(BeNil())
					Expect(done.DriverInternalInfo).NotTo(HaveKey("agent_secret_token"), "the ramdisk is gone with the deploy")
					Expect(done.DriverInternalInfo).NotTo(HaveKey("agent_url"))
					_ = w.tgt.RemoveTargets()
				}
			})

			It("fails the deploy when the image does not exist", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, _ := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/missing.qcow2"}, 64)
				Expect(rpc.DoNodeDeploy.Call(ctx, w.e.api(w.c), rpc.DeployArgs{NodeID: n.UUID})).To(Succeed())
				w.expectCleanFailure(ctx, n.UUID, mac, "Failed to deploy. Error: cache image "+w.images.URL+"/missing.qcow2")
				Expect(str(w.e.node(ctx, n.UUID).LastError)).To(ContainSubstring("not found"))
			})

			It("refuses to start a deploy whose image is a conductor file outside file_url_allowed_paths", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, _, _ := w.node(ctx, model.JSONObject{"image_source": "file:///proc/self/environ"}, 64)
				err := rpc.DoNodeDeploy.Call(ctx, w.e.api(w.c), rpc.DeployArgs{NodeID: n.UUID})
				Expect(err).To(MatchError(ContainSubstring("Image file:///proc/self/environ cannot be used: local file not allowed")))
				Expect(w.e.node(ctx, n.UUID).State()).To(Equal(states.Available))
				Expect(filepath.Join(w.dir, "cache", "sha256")).NotTo(BeADirectory())

				By("deploying a file under an allowed directory")
				n, _, _ = w.node(ctx, model.JSONObject{"image_source": "file://" + filepath.Join(w.dir, "images", "disk.qcow2")}, 64)
				w.deployToWait(ctx, n.UUID)
			})

			It("fails the deploy when the image is larger than [deploy] max_image_size, caching nothing", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend, func(o *iscsideploy.Options) { o.MaxImageSize = 1 << 20 })
				n, mac, _ := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}, 64)
				Expect(rpc.DoNodeDeploy.Call(ctx, w.e.api(w.c), rpc.DeployArgs{NodeID: n.UUID})).To(Succeed())
				w.expectCleanFailure(ctx, n.UUID, mac, "download too large")
				Expect(os.ReadDir(filepath.Join(w.dir, "cache", "sha256"))).To(BeEmpty())
			})

			It("fails the deploy when the image checksum does not match", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, _ := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2",
					"image_checksum": hex.EncodeToString(make([]byte, 16))}, 64)
				Expect(rpc.DoNodeDeploy.Call(ctx, w.e.api(w.c), rpc.DeployArgs{NodeID: n.UUID})).To(Succeed())
				w.expectCleanFailure(ctx, n.UUID, mac, "checksum mismatch")
			})

			It("fails the deploy when the node cannot be powered on", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, _ := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}, 64)
				w.e.hw.Inject(n.UUID, fake.OpSetPowerState, fake.Fault{Err: fmt.Errorf("BMC unreachable")})
				Expect(rpc.DoNodeDeploy.Call(ctx, w.e.api(w.c), rpc.DeployArgs{NodeID: n.UUID})).To(Succeed())
				w.expectCleanFailure(ctx, n.UUID, mac, "Failed to deploy. Error: power on: BMC unreachable")
			})

			It("fails the deploy when the ramdisk reports an error", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, _ := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}, 64)
				w.deployToWait(ctx, n.UUID)
				key := deployKey(w.e.node(ctx, n.UUID))
				_, err := w.passDeployInfo(ctx, n.UUID, map[string]any{"key": key, "address": "127.0.0.1",
					"iqn": iscsideploy.IQN(n.UUID), "error": "no disk found"})
				Expect(err).NotTo(HaveOccurred())
				w.expectCleanFailure(ctx, n.UUID, mac, "Error returned from deploy ramdisk: no disk found")
				Expect(w.e.hwPower(n.UUID)).To(Equal(states.PowerOff))
			})

			It("fails the deploy when the target is not there", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, _ := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}, 64)
				w.deployToWait(ctx, n.UUID)
				key := deployKey(w.e.node(ctx, n.UUID))
				_, err := w.passDeployInfo(ctx, n.UUID, withCHAP(map[string]any{"key": key, "address": "127.0.0.1",
					"iqn": iscsideploy.IQN(n.UUID), "port": w.tgt.Port}))
				Expect(err).NotTo(HaveOccurred())
				w.expectCleanFailure(ctx, n.UUID, mac, "did not become active after 2 attempts")
				Expect(w.e.hwPower(n.UUID)).To(Equal(states.PowerOff))
			})

			It("fails the deploy when the target goes away in the middle of the write", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				// Data everywhere, so the write takes long enough to be cut.
				big := filepath.Join(w.dir, "images", "big.raw")
				Expect(os.WriteFile(big, bytes.Repeat([]byte{0xa5}, 256<<20), 0o644)).To(Succeed())
				n, mac, backing := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/big.raw"}, 300)
				w.deployToWait(ctx, n.UUID)
				iqn := iscsideploy.IQN(n.UUID)
				Expect(w.exportAsRamdisk(iqn, backing)).To(Succeed())
				key := deployKey(w.e.node(ctx, n.UUID))
				_, err := w.passDeployInfo(ctx, n.UUID, withCHAP(map[string]any{"key": key, "address": "127.0.0.1",
					"iqn": iqn, "port": float64(w.tgt.Port)}))
				Expect(err).NotTo(HaveOccurred())
				Eventually(func() int64 {
					st, err := os.Stat(backing)
					Expect(err).NotTo(HaveOccurred())
					return st.Sys().(*syscall.Stat_t).Blocks
				}, 30*time.Second, 2*time.Millisecond).Should(BeNumerically(">", 0))
				w.tgt.Kill()
				w.expectCleanFailure(ctx, n.UUID, mac, "Deploy failed for node "+n.UUID+": write whole disk image")
				Expect(w.e.hwPower(n.UUID)).To(Equal(states.PowerOff))
			})

			It("fails the deploy when the agent's disk does not hold what was written", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, backing := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}, 64)
				w.deployToWait(ctx, n.UUID)
				// A disk that loses what reaches it at 5 MiB: its agent
				// checksums what is really there.
				w.agentHeartbeat(ctx, n.UUID, backing, func() {
					f, err := os.OpenFile(backing, os.O_WRONLY, 0)
					Expect(err).NotTo(HaveOccurred())
					_, err = f.WriteAt(bytes.Repeat([]byte{0xff}, 4096), 5<<20)
					Expect(err).NotTo(HaveOccurred())
					Expect(f.Close()).To(Succeed())
				})
				w.expectCleanFailure(ctx, n.UUID, mac, fmt.Sprintf("verification failed: data read back at offset %d differs", 5<<20))
			})

			It("fails the deploy when a second pass_deploy_info comes while the first one's write runs", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend, func(o *iscsideploy.Options) { o.Initiator.LoginTimeout = 10 * time.Minute })
				n, mac, backing := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}, 64)
				w.deployToWait(ctx, n.UUID)
				iqn := iscsideploy.IQN(n.UUID)
				Expect(w.exportAsRamdisk(iqn, backing)).To(Succeed())
				key := deployKey(w.e.node(ctx, n.UUID))

				By("an attacker who read the key from TFTP calling back first, naming its own target and CHAP account")
				attacker := stallingPortal()
				_, err := w.passDeployInfo(ctx, n.UUID, map[string]any{"key": key, "address": "127.0.0.1", "iqn": iqn,
					"port": attacker.port, "chap_username": "ferric-attacker", "chap_secret": "Ab3Cd5Ef7Gh9Jk2Lm4Np6Qr8"})
				Expect(err).NotTo(HaveOccurred())
				Eventually(attacker.connected).Should(Receive(), "the conductor logs in to the attacker's target")

				By("the node's own ramdisk calling back with the same key")
				_, err = w.passDeployInfo(ctx, n.UUID, withCHAP(map[string]any{"key": key, "address": "127.0.0.1", "iqn": iqn,
					"port": w.tgt.Port}))
				Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
				Expect(errs.Message(err)).To(Equal(secondCallback))
				w.expectCleanFailure(ctx, n.UUID, mac, secondCallback)
				Expect(str(w.e.node(ctx, n.UUID).LastError)).To(Equal(secondCallback))

				By("refusing the used key as loudly once the deploy failed, changing nothing")
				_, err = w.passDeployInfo(ctx, n.UUID, map[string]any{"key": key, "address": "127.0.0.1", "iqn": iqn})
				Expect(errs.Message(err)).To(Equal(secondCallback))
				Expect(w.e.node(ctx, n.UUID).State()).To(Equal(states.DeployFail))
			})

			It("gives every wait state a fresh deploy key that one callback uses up", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, _, _ := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}, 64)
				w.deployToWait(ctx, n.UUID)
				first := deployKey(w.e.node(ctx, n.UUID))
				_, err := w.passDeployInfo(ctx, n.UUID, map[string]any{"key": first, "address": "127.0.0.1",
					"iqn": iscsideploy.IQN(n.UUID), "error": "no disk found"})
				Expect(err).NotTo(HaveOccurred())
				Eventually(w.e.provisionState(ctx, n.UUID)).Should(Equal(states.DeployFail))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				_, err = w.passDeployInfo(ctx, n.UUID, map[string]any{"key": first, "address": "127.0.0.1",
					"iqn": iscsideploy.IQN(n.UUID)})
				Expect(errs.Message(err)).To(Equal(secondCallback), "a used key is told from a wrong one")

				By("issuing a fresh key for the next wait state, which forgets the old one")
				w.deployToWait(ctx, n.UUID)
				second := deployKey(w.e.node(ctx, n.UUID))
				Expect(second).To(MatchRegexp(`^[A-Za-z0-9]{32}$`))
				Expect(second).NotTo(Equal(first))
				_, err = w.passDeployInfo(ctx, n.UUID, map[string]any{"key": first, "address": "127.0.0.1",
					"iqn": iscsideploy.IQN(n.UUID)})
				Expect(errs.Message(err)).To(Equal("Deploy key does not match"))
				Expect(w.e.node(ctx, n.UUID).State()).To(Equal(states.DeployWait))

				By("accepting the new key")
				_, err = w.passDeployInfo(ctx, n.UUID, map[string]any{"key": second, "address": "127.0.0.1",
					"iqn": iscsideploy.IQN(n.UUID), "error": "no disk found"})
				Expect(err).NotTo(HaveOccurred())
				Eventually(w.e.provisionState(ctx, n.UUID)).Should(Equal(states.DeployFail))
				Expect(str(w.e.node(ctx, n.UUID).LastError)).To(ContainSubstring("Error returned from deploy ramdisk"))
			})

			It("writes only to a LUN reporting the serial number of the root device hint, and records it", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, backing := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}, 64)
				hinted := w.e.node(ctx, n.UUID)
				hinted.Properties = model.JSONObject{"root_device": map[string]any{"serial": "SN-NODE-DISK"}}
				Expect(w.e.store.SaveNode(ctx, hinted)).To(Succeed())
				iqn := iscsideploy.IQN(n.UUID)
				Expect(w.exportAsRamdisk(iqn, backing)).To(Succeed())
				Expect(w.tgt.SetSerial("SN-OTHER-DISK")).To(Succeed())
				w.deployToWait(ctx, n.UUID)
				_, err := w.passDeployInfo(ctx, n.UUID, withCHAP(map[string]any{"key": deployKey(w.e.node(ctx, n.UUID)),
					"address": "127.0.0.1", "iqn": iqn, "port": w.tgt.Port}))
				Expect(err).NotTo(HaveOccurred())
				w.expectCleanFailure(ctx, n.UUID, mac, `disk identity check failed: the exported LUN reports serial number "SN-OTHER-DISK", `+
					`but the root device hint says "SN-NODE-DISK": it is not the node's disk`)
				Expect(allZero(backing)).To(BeTrue(), "nothing was written")

				By("deploying once the LUN reports the hinted serial number")
				Expect(w.tgt.SetSerial("SN-NODE-DISK")).To(Succeed())
				w.deployToWait(ctx, n.UUID)
				_, err = w.passDeployInfo(ctx, n.UUID, withCHAP(map[string]any{"key": deployKey(w.e.node(ctx, n.UUID)),
					"address": "127.0.0.1", "iqn": iqn, "port": w.tgt.Port}))
				Expect(err).NotTo(HaveOccurred())
				Eventually(w.e.provisionState(ctx, n.UUID), 2*time.Minute).Should(Equal(states.Active))
				Expect(w.e.node(ctx, n.UUID).DriverInternalInfo).To(HaveKeyWithValue("disk_serial", "SN-NODE-DISK"))
			})

			It("fails the deploy through an ironic-python-agent that knows no CHAP, naming the option that would accept its open export", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				w.agentKnowsNoCHAP = true
				n, mac, backing := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}, 64)
				w.deployToWait(ctx, n.UUID)
				agent := w.agentHeartbeat(ctx, n.UUID, backing, nil)
				w.expectCleanFailure(ctx, n.UUID, mac, "Failed to start the iSCSI target to deploy the node "+n.UUID+". Error: "+noCHAP)
				Expect(agent.commandCount()).To(Equal(1), "the command is not repeated without CHAP")
				Expect(allZero(backing)).To(BeTrue(), "nothing was written")
			})

			It("deploys through an ironic-python-agent that knows no CHAP when [iscsi] allow_export_without_chap accepts its open export, with a warning", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend, allowOpenExport)
				w.agentKnowsNoCHAP = true
				logs := logtest.NewLocal(w.e.log)
				n, _, backing := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}, 64)
				w.deployToWait(ctx, n.UUID)
				agent := w.agentHeartbeat(ctx, n.UUID, backing, nil)
				Eventually(w.e.provisionState(ctx, n.UUID), 2*time.Minute).Should(Equal(states.Active))
				Expect(agent.commandCount()).To(Equal(2), "asked with CHAP, then without")
				Expect(agent.command()["params"]).NotTo(HaveKey("chap_username"))
				Expect(logs.AllEntries()).To(ContainElement(HaveField("Message", ContainSubstring("The ramdisk does not support CHAP"))))
			})

			It("fails the deploy when the callback-only ramdisk sends no CHAP account, naming the option that would accept its open export", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, backing := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}, 64)
				w.deployToWait(ctx, n.UUID)
				w.callbackWithoutCHAP(ctx, n.UUID, backing)
				w.expectCleanFailure(ctx, n.UUID, mac, "Failed to deploy the node "+n.UUID+". Error: "+noCHAP)
				Expect(allZero(backing)).To(BeTrue(), "nothing was written")
			})

			It("deploys through the open export of a callback-only ramdisk sending no CHAP account when [iscsi] allow_export_without_chap accepts it, with a warning", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend, allowOpenExport)
				logs := logtest.NewLocal(w.e.log)
				n, _, backing := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}, 64)
				w.deployToWait(ctx, n.UUID)
				w.callbackWithoutCHAP(ctx, n.UUID, backing)
				Eventually(w.e.provisionState(ctx, n.UUID), 2*time.Minute).Should(Equal(states.Active))
				Expect(w.e.node(ctx, n.UUID).LastError).To(BeNil())
				Expect(logs.AllEntries()).To(ContainElement(HaveField("Message", ContainSubstring("The ramdisk does not support CHAP"))))
			})

			It("fails the deploy when the ramdisk never calls back", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, mac, _ := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}, 64)
				w.deployToWait(ctx, n.UUID)
				Expect(w.pxelinuxPath(mac)).To(BeAnExistingFile())
				Expect(w.c.Stop(ctx)).To(Succeed())
				w.c = w.e.start(ctx, "iscsi-timeout-"+newUUID()[:8], withPeriodicTasks, func(cfg *config.Config) {
					cfg.Conductor.DeployCallbackTimeout = time.Second
				})
				Eventually(w.e.provisionState(ctx, n.UUID)).Should(Equal(states.DeployFail))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				Expect(str(w.e.node(ctx, n.UUID).LastError)).To(ContainSubstring("Timeout reached while waiting for callback"))
				Eventually(func() string { return w.pxelinuxPath(mac) }).ShouldNot(BeAnExistingFile())
				Eventually(func() model.JSONObject { return w.e.node(ctx, n.UUID).DriverInternalInfo }).
					ShouldNot(HaveKey("deploy_key_secret"), "the clean-up is stored")
				_, err := os.Lstat(image.RefPath(filepath.Join(w.dir, "cache"), n.UUID))
				Expect(err).To(MatchError(os.ErrNotExist), "no image cache reference is left")
			})
		})
	}
})

// noCHAP is the reason a deploy or clean fails on an export without CHAP.
const noCHAP = "the deploy ramdisk does not support CHAP for its iSCSI export; " +
	"use ferric-agent, or set [iscsi] allow_export_without_chap = true to accept an open export"

// secondCallback is the answer to, and last_error of, a deploy key used
// twice.
const secondCallback = "second pass_deploy_info callback for this deploy: possible attack on the provisioning network"

// stalledPortal accepts iSCSI connections and never answers a login: a
// target that keeps the conductor's write waiting as long as a test needs.
type stalledPortal struct {
	port      int
	connected chan struct{}
}

func stallingPortal() *stalledPortal {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	p := &stalledPortal{port: l.Addr().(*net.TCPAddr).Port, connected: make(chan struct{}, 8)}
	var conns []net.Conn
	var mu sync.Mutex
	DeferCleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			p.connected <- struct{}{}
		}
	}()
	return p
}

func reverse(b []byte) []byte {
	out := slices.Clone(b)
	slices.Reverse(out)
	return out
}
