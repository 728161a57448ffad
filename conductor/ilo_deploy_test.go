package conductor_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/ferricbm/ferric/conductor/bmc"
	"github.com/ferricbm/ferric/conductor/bmc/ilotest"
	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/ilo"
	"github.com/ferricbm/ferric/conductor/driver/iscsideploy"
	"github.com/ferricbm/ferric/conductor/driver/pxe"
	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/deploy/bootiso"
	"github.com/ferricbm/ferric/deploy/floppy"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// iloWorld is an iSCSI deploy world whose conductor also drives the ilo
// hardware type, publishing media on its boot file server.
func iloWorld(ctx context.Context, backend string) *iscsiWorld {
	return iloWorldWith(ctx, backend, func(p publish.Publisher) publish.Publisher { return p }, nil)
}

// iloWorldWith is iloWorld with the publisher the boot interfaces get
// passed through wrap, and glance (nil: none) resolving deploy ISOs given
// as Glance image ids.
func iloWorldWith(ctx context.Context, backend string, wrap func(publish.Publisher) publish.Publisher, glance func() (*image.Glance, error)) *iscsiWorld {
	var web *publish.WebServer
	return newISCSIWorldWith(ctx, backend, worldHooks{
		files: func(w *iscsiWorld, o *pxe.Options) {
			var err error
			web, err = publish.NewWebServer(filepath.Join(w.httpRoot, "vmedia"), w.httpURL)
			Expect(err).NotTo(HaveOccurred())
			o.Media = web
		},
		types: func(w *iscsiWorld, boot *pxe.Boot, dep *iscsideploy.Deploy) []driver.HardwareType {
			cfg := config.Defaults()
			cfg.ILO.PowerWait, cfg.ILO.PowerRetry = 1, 5
			hw := ilo.New(ilo.OptionsFrom(cfg, w.e.log))
			pub := wrap(web)
			opts := ilo.BootOptions{MediaLifetime: 15 * time.Minute, Downloads: loopbackDownloads, BootISOs: w.e.store, Fetch: boot.Fetch,
				WorkDir: GinkgoT().TempDir(), Publisher: func(context.Context) (publish.Publisher, error) { return pub, nil },
				Glance: glance}
			var types []driver.HardwareType
			for _, t := range []struct {
				name, boot string
				flavor     ilo.Flavor
			}{{ilo.Name, ilo.ILOBootName, hw.ILO()}, {ilo.RedfishName, ilo.RedfishBootName, hw.Redfish()}} {
				types = append(types, hw.HardwareType(t.name, t.flavor, map[hwcatalog.InterfaceType][]driver.Implementation{
					hwcatalog.Boot:   {{Name: t.boot, Impl: hw.Boot(t.flavor, opts)}},
					hwcatalog.Deploy: {{Name: iscsideploy.Name, Impl: dep}},
					hwcatalog.Vendor: {{Name: iscsideploy.Name, Impl: dep.Vendor()}},
				}))
			}
			return types
		},
	})
}

// vmediaOf reads a fake BMC's virtual drives and first boot device, on
// whichever side of the fake holds the server's state.
func vmediaOf(srv *ilotest.Server) (cd, fl string, persistent string) {
	if srv.Redfish != nil {
		if m := srv.Redfish.Media("CD"); m.Inserted {
			cd = m.Image
		}
		if m := srv.Redfish.Media("Floppy"); m.Inserted {
			fl = m.Image
		}
		if b := srv.Redfish.Boot(); b.Enabled == "Continuous" {
			persistent = b.Target
		}
		return cd, fl, persistent
	}
	if m := srv.RIBCL.VirtualMedia("CDROM"); m.Inserted {
		cd = m.URL
	}
	if m := srv.RIBCL.VirtualMedia("FLOPPY"); m.Inserted {
		fl = m.URL
	}
	return cd, fl, srv.RIBCL.PersistentBoot()[0]
}

// lastBootOf is the device a fake BMC's server last started from.
func lastBootOf(srv *ilotest.Server) string {
	if srv.Redfish != nil {
		return srv.Redfish.LastBoot()
	}
	return srv.RIBCL.LastBoot()
}

// vmediaNode starts a fake BMC of model and creates a node of driver
// reaching it, with a PXE port and a 64 MiB disk file.
func (w *iscsiWorld) vmediaNode(ctx context.Context, bmcModel, drv string, state states.State, instanceInfo model.JSONObject) (*ilotest.Server, *model.Node, string, string) {
	GinkgoHelper()
	return w.vmediaNodeWith(ctx, ilotest.Options{Model: bmcModel}, drv, state, instanceInfo)
}

// vmediaNodeWith is vmediaNode with the fake BMC's options (its user,
// password and power delay are set here).
func (w *iscsiWorld) vmediaNodeWith(ctx context.Context, opts ilotest.Options, drv string, state states.State, instanceInfo model.JSONObject) (*ilotest.Server, *model.Node, string, string) {
	GinkgoHelper()
	opts.Username, opts.Password, opts.PowerDelay = "admin", "s3cret-pw", 200*time.Millisecond
	srv, err := ilotest.Start("127.0.0.1:0", opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(srv.Close)
	ca, err := srv.WriteCAFile(w.dir)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(w.dir, "images", "deploy.iso"), []byte("deploy ISO"), 0o644)).To(Succeed())
	info := model.JSONObject{"ilo_address": "127.0.0.1", "client_port": srv.Port, "ilo_username": "admin",
		"ilo_password": "s3cret-pw", "ca_file": ca, "deploy_iso": w.images.URL + "/deploy.iso"}
	if drv == ilo.RedfishName {
		info = model.JSONObject{"redfish_address": "127.0.0.1:" + strconv.Itoa(srv.Port), "redfish_username": "admin",
			"redfish_password": "s3cret-pw", "redfish_verify_ca": ca, "deploy_iso": w.images.URL + "/deploy.iso"}
	}
	n := w.e.createNode(ctx, state, func(n *model.Node) {
		n.Driver = drv
		n.DriverInfo = info
		n.InstanceInfo = instanceInfo
		n.PowerState = ptr(states.PowerOff)
	})
	Expect(str(n.BootInterface)).To(HaveSuffix("-virtual-media"))
	mac := randomMAC()
	Expect(w.e.store.CreatePort(ctx, &model.Port{UUID: newUUID(), NodeID: n.ID, Address: mac, PXEEnabled: true})).To(Succeed())
	backing := filepath.Join(w.dir, n.UUID+".disk")
	Expect(os.WriteFile(backing, nil, 0o644)).To(Succeed())
	Expect(os.Truncate(backing, 64<<20)).To(Succeed())
	return srv, n, mac, backing
}

// floppyParameters fetches a published floppy and reads its parameters.txt.
// floppyToken is the agent token a parameter floppy carries.
func floppyToken(u string) string {
	GinkgoHelper()
	for _, line := range strings.Split(floppyParameters(u), "\n") {
		if v, ok := strings.CutPrefix(line, "ipa-agent-token="); ok {
			Expect(v).To(HaveLen(43))
			return v
		}
	}
	Fail("no ipa-agent-token on the floppy")
	return ""
}

func floppyParameters(u string) string {
	GinkgoHelper()
	resp, err := http.Get(u)
	Expect(err).NotTo(HaveOccurred())
	img, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	fs, err := floppy.Open(bytes.NewReader(img))
	Expect(err).NotTo(HaveOccurred())
	txt, err := fs.ReadFile(floppy.ParametersFile)
	Expect(err).NotTo(HaveOccurred())
	return string(txt)
}

func statusOf(u string) int {
	GinkgoHelper()
	resp, err := http.Get(u)
	Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	return resp.StatusCode
}

var _ = Describe("iSCSI deploy with iLO virtual media", Label("tgtd"), func() {
	for _, c := range []struct{ model, driver, disk, cd string }{
		{"ProLiant DL360 Gen9", ilo.Name, "HDD", "CDROM"},
		{"ProLiant DL360 Gen10", ilo.RedfishName, "Hdd", "Cd"},
	} {
		It("boots the ramdisk of a "+c.model+" ("+c.driver+") from the virtual CD with its parameters on the virtual floppy, writes the image and boots it from disk", func(ctx SpecContext) {
			w := iloWorld(ctx, backends[0])
			w.e.log.SetLevel(logrus.DebugLevel)
			logs := logtest.NewLocal(w.e.log)
			srv, n, mac, backing := w.vmediaNode(ctx, c.model, c.driver, states.Available,
				model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"})

			w.deployToWait(ctx, n.UUID)

			By("inserting the floppy and the deploy ISO, booting once from the CD")
			if srv.Redfish != nil {
				Expect(srv.Redfish.PowerState()).To(Equal("On"))
			} else {
				Expect(srv.RIBCL.Power()).To(Equal("ON"))
			}
			Expect(lastBootOf(srv)).To(Equal(c.cd), "the server started from the virtual CD")
			cd, floppyURL, _ := vmediaOf(srv)
			Expect(cd).To(Equal(w.images.URL + "/deploy.iso"))
			Expect(floppyURL).To(MatchRegexp(`^%s/vmedia/image-%s-[a-z2-7]{26}\?`, regexp.QuoteMeta(w.httpURL), n.UUID))
			Expect(w.pxelinuxPath(mac)).NotTo(BeAnExistingFile(), "no PXE configuration")

			By("serving the ramdisk's parameters on the floppy")
			txt := floppyParameters(floppyURL)
			key := deployKey(w.e.node(ctx, n.UUID))
			iqn := iscsideploy.IQN(n.UUID)
			for _, want := range []string{"deployment_id=" + n.UUID, "deployment_key=" + key, "iscsi_target_iqn=" + iqn,
				"BOOTIF=" + mac, "ipa-driver-name=" + c.driver} {
				Expect(txt).To(ContainSubstring(want))
			}

			By("writing the image when the ramdisk calls back, then booting from disk")
			Expect(w.exportAsRamdisk(iqn, backing)).To(Succeed())
			_, err := w.passDeployInfo(ctx, n.UUID, withCHAP(map[string]any{"key": key, "address": "127.0.0.1",
				"iqn": iqn, "port": strconv.Itoa(w.tgt.Port)}))
			Expect(err).NotTo(HaveOccurred())
			Eventually(w.e.provisionState(ctx, n.UUID), 2*time.Minute).Should(Equal(states.Active))
			Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
			Eventually(w.notified).Should(Receive(Equal("done " + ramdiskCHAPSecret)))
			written, err := os.ReadFile(backing)
			Expect(err).NotTo(HaveOccurred())
			Expect(written[:len(w.refRaw)]).To(Equal(w.refRaw))

			cd, inserted, first := vmediaOf(srv)
			Expect(cd).To(BeEmpty())
			Expect(inserted).To(BeEmpty())
			Expect(first).To(Equal(c.disk))
			Expect(statusOf(floppyURL)).To(Equal(http.StatusNotFound), "the floppy and its deploy key are gone")
			bd, err := rpc.GetBootDevice.Call(ctx, w.e.api(w.c), rpc.NodeArgs{NodeID: n.UUID})
			Expect(err).NotTo(HaveOccurred())
			Expect(*bd.BootDevice).To(Equal("disk"))
			Expect(*bd.Persistent).To(BeTrue())
			final := w.e.node(ctx, n.UUID)
			Expect(final.LastError).To(BeNil())
			Expect(str(final.PowerState)).To(Equal(states.PowerOn))

			By("logging neither the BMC password nor the floppy's signed URL")
			Expect(logs.AllEntries()).To(ContainElement(HaveField("Message", ContainSubstring("parameter floppy inserted"))))
			for _, e := range logs.AllEntries() {
				line, err := e.String()
				Expect(err).NotTo(HaveOccurred())
				Expect(line).NotTo(ContainSubstring("s3cret-pw"))
				Expect(line).NotTo(ContainSubstring("sig="))
			}
		})
	}

	It("pre-issues the agent token on the floppy, never hands it out at lookup, accepts only it in heartbeats and wipes it at the end", func(ctx SpecContext) {
		w := iloWorld(ctx, backends[0])
		srv, n, _, backing := w.vmediaNode(ctx, "ProLiant DL360 Gen10", ilo.RedfishName, states.Available,
			model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"})
		w.deployToWait(ctx, n.UUID)

		By("putting a fresh token on the floppy only the BMC can fetch")
		_, floppyURL, _ := vmediaOf(srv)
		token := floppyToken(floppyURL)
		info := w.e.node(ctx, n.UUID).DriverInternalInfo
		Expect(info).To(HaveKeyWithValue("agent_secret_token", token))
		Expect(info).To(HaveKeyWithValue("agent_secret_token_pregenerated", true))

		By("handing out only the masked token at lookup, the first lookup included")
		for range 2 {
			withToken, err := rpc.GetNodeWithToken.Call(ctx, w.e.api(w.c), rpc.LookupArgs{NodeID: n.UUID})
			Expect(err).NotTo(HaveOccurred())
			Expect(withToken.AgentToken).To(Equal("******"))
		}

		By("refusing heartbeats without the token, with the masked one and with a wrong one")
		wrong := "x" + token[1:]
		if wrong == token {
			wrong = "y" + token[1:]
		}
		for _, bad := range []string{"", "******", wrong} {
			err := rpc.Heartbeat.Call(ctx, w.e.api(w.c), rpc.HeartbeatArgs{NodeID: n.UUID, CallbackURL: "http://127.0.0.1:9/",
				AgentVersion: "9.0.0", AgentToken: bad})
			Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
		}
		Expect(w.e.node(ctx, n.UUID).DriverInternalInfo).NotTo(HaveKey("agent_url"))
		Expect(w.e.node(ctx, n.UUID).State()).To(Equal(states.DeployWait))

		By("deploying through the agent that heartbeats with the floppy's token")
		w.agentHeartbeatWith(ctx, n.UUID, backing, token, nil)
		Eventually(w.e.provisionState(ctx, n.UUID), 2*time.Minute).Should(Equal(states.Active))
		Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
		final := w.e.node(ctx, n.UUID)
		Expect(final.LastError).To(BeNil())
		Expect(final.DriverInternalInfo).NotTo(HaveKey("agent_secret_token"))
		Expect(final.DriverInternalInfo).NotTo(HaveKey("agent_secret_token_pregenerated"))
		Expect(statusOf(floppyURL)).To(Equal(http.StatusNotFound), "the floppy and its token are gone")
	})

	It("rebuilds the floppy with a new pre-issued token when a clean step reboots, and deletes the old floppy at once", func(ctx SpecContext) {
		w := iloWorld(ctx, backends[0])
		srv, n, _, _ := w.vmediaNode(ctx, "ProLiant DL360 Gen10", ilo.RedfishName, states.Manageable, nil)
		agent := newStubAgent(map[string]any{"interface": "deploy", "step": "erase_devices_metadata", "priority": 99,
			"abortable": true, "reboot_requested": true})
		// The agent knows only the token on its floppy; a heartbeat finding
		// the node locked is refused, and the next one goes through.
		heartbeat := func() {
			_ = rpc.Heartbeat.Call(ctx, w.e.api(w.c), rpc.HeartbeatArgs{NodeID: n.UUID, CallbackURL: agent.srv.URL, AgentToken: agent.token})
		}
		w.provide(ctx, n.UUID)
		_, firstURL, _ := vmediaOf(srv)
		agent.token = floppyToken(firstURL)
		Eventually(func() bool {
			if w.e.node(ctx, n.UUID).DriverInternalInfo["cleaning_reboot"] == true {
				return true
			}
			heartbeat()
			return false
		}).WithContext(ctx).WithTimeout(cleanTimeout).WithPolling(100 * time.Millisecond).Should(BeTrue())
		Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())

		By("booting the rebooted agent from a new floppy with a new token, which lookup does not hand out")
		_, secondURL, _ := vmediaOf(srv)
		Expect(secondURL).NotTo(BeEmpty())
		second := floppyToken(secondURL)
		Expect(second).NotTo(Equal(agent.token))
		info := w.e.node(ctx, n.UUID).DriverInternalInfo
		Expect(info).To(HaveKeyWithValue("agent_secret_token", second))
		Expect(info).To(HaveKeyWithValue("agent_secret_token_pregenerated", true))
		withToken, err := rpc.GetNodeWithToken.Call(ctx, w.e.api(w.c), rpc.LookupArgs{NodeID: n.UUID})
		Expect(err).NotTo(HaveOccurred())
		Expect(withToken.AgentToken).To(Equal("******"))
		Expect(statusOf(firstURL)).To(Equal(http.StatusNotFound), "the old floppy is gone, not left until it expires")

		By("going on with the agent that heartbeats with the new floppy's token")
		agent.reboot()
		agent.token = second
		Eventually(func() states.State {
			heartbeat()
			return w.e.node(ctx, n.UUID).State()
		}).WithContext(ctx).WithTimeout(cleanTimeout).WithPolling(100 * time.Millisecond).Should(Equal(states.Available))
		Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
		Expect(w.e.node(ctx, n.UUID).LastError).To(BeNil())
		Expect(agent.executed()).To(HaveLen(1), "the step ran once")
		Expect(statusOf(secondURL)).To(Equal(http.StatusNotFound))
	})

	It("cleans a Gen9's disk through the callback-only ramdisk booted from virtual media, and ejects it", func(ctx SpecContext) {
		w := iloWorld(ctx, backends[0])
		srv, n, mac, backing := w.vmediaNode(ctx, "ProLiant DL360 Gen9", ilo.Name, states.Manageable, nil)
		fillDisk(backing)
		iqn := iscsideploy.IQN(n.UUID)
		Expect(w.tgt.ExportCHAP(iqn, backing, "ferric-cleaning1", "Hq4Ws8Ez2Xr6Tb9Yn3Um7Kp5")).To(Succeed())
		w.provide(ctx, n.UUID)

		Expect(srv.RIBCL.LastBoot()).To(Equal("CDROM"), "the server started from the virtual CD")
		cd, floppyURL, _ := vmediaOf(srv)
		Expect(cd).To(Equal(w.images.URL + "/deploy.iso"))
		key := deployKey(w.e.node(ctx, n.UUID))
		txt := floppyParameters(floppyURL)
		for _, want := range []string{"deployment_key=" + key, "iscsi_target_iqn=" + iqn, "BOOTIF=" + mac} {
			Expect(txt).To(ContainSubstring(want))
		}

		_, err := w.passDeployInfo(ctx, n.UUID, map[string]any{"key": key, "address": "127.0.0.1", "iqn": iqn,
			"port": strconv.Itoa(w.tgt.Port), "lun": "1", "chap_username": "ferric-cleaning1", "chap_secret": "Hq4Ws8Ez2Xr6Tb9Yn3Um7Kp5"})
		Expect(err).NotTo(HaveOccurred())
		Eventually(w.e.provisionState(ctx, n.UUID), cleanTimeout).Should(Equal(states.Available))
		Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
		Expect(w.e.node(ctx, n.UUID).LastError).To(BeNil())
		Expect(allZero(backing)).To(BeTrue())
		cd, inserted, _ := vmediaOf(srv)
		Expect(cd).To(BeEmpty())
		Expect(inserted).To(BeEmpty())
		Expect(statusOf(floppyURL)).To(Equal(http.StatusNotFound))
		Expect(srv.RIBCL.Power()).To(Equal("OFF"))
	})
})

var _ = Describe("partition images on virtual-media nodes", Label("tgtd"), func() {
	It("boots a netbooted partition image from a boot ISO with its root, re-attaches it on reboot and deletes it at tear down", func(ctx SpecContext) {
		w := iloWorld(ctx, backends[0])
		srv, n, _, backing := w.vmediaNode(ctx, "ProLiant DL360 Gen9", ilo.Name, states.Available, model.JSONObject{
			"image_source": w.images.URL + "/disk.qcow2", "root_gb": "1",
			"kernel": w.images.URL + "/kernel", "ramdisk": w.images.URL + "/ramdisk",
			"capabilities": map[string]any{"boot_option": "netboot"}})
		Expect(os.Truncate(backing, 1100<<20)).To(Succeed())
		w.deployToWait(ctx, n.UUID)

		key := deployKey(w.e.node(ctx, n.UUID))
		iqn := iscsideploy.IQN(n.UUID)
		Expect(w.exportAsRamdisk(iqn, backing)).To(Succeed())
		_, err := w.passDeployInfo(ctx, n.UUID, withCHAP(map[string]any{"key": key, "address": "127.0.0.1",
			"iqn": iqn, "port": strconv.Itoa(w.tgt.Port)}))
		Expect(err).NotTo(HaveOccurred())
		Eventually(w.e.provisionState(ctx, n.UUID), 2*time.Minute).Should(Equal(states.Active))
		Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
		active := w.e.node(ctx, n.UUID)
		Expect(active.LastError).To(BeNil())

		By("inserting a boot ISO whose kernel command line names the deployed root, the CD booted for good")
		ref, _ := active.InstanceInfo["ilo_boot_iso"].(string)
		name, ok := strings.CutPrefix(ref, "published:")
		Expect(ok).To(BeTrue(), "instance_info ilo_boot_iso %q", ref)
		Expect(w.e.store.BootISOUsage(ctx, name)).To(Equal(1))
		cd, fl, first := vmediaOf(srv)
		Expect(fl).To(BeEmpty())
		Expect(first).To(Equal("CDROM"))
		Expect(cd).To(HavePrefix(w.httpURL + "/vmedia/" + name + "?"))
		root, _ := active.DriverInternalInfo["root_uuid_or_disk_id"].(string)
		Expect(root).NotTo(BeEmpty())
		Expect(bootConfigOf(cd).BIOS).To(ContainSubstring("root=UUID=" + root))

		By("re-inserting the ISO before a reboot and booting once from the CD")
		bmcs := ilo.New(ilo.OptionsFrom(config.Defaults(), nil))
		c, err := bmcs.Controller(ctx, bmcs.ILO(), active)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.EjectMedia(ctx, bmc.CDROM)).To(Succeed())
		Expect(c.SetBootDevice(ctx, bmc.BootDisk, true)).To(Succeed())
		Expect(rpc.ChangeNodePowerState.Call(ctx, w.e.api(w.c), rpc.ChangePowerStateArgs{NodeID: n.UUID, NewState: states.Rebooting})).To(Succeed())
		Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
		cd, _, _ = vmediaOf(srv)
		Expect(cd).To(HavePrefix(w.httpURL + "/vmedia/" + name + "?"))
		Expect(srv.RIBCL.LastBoot()).To(Equal("CDROM"))

		By("deleting the ISO with its last user at tear down")
		Expect(rpc.DoNodeTearDown.Call(ctx, w.e.api(w.c), rpc.NodeArgs{NodeID: n.UUID})).To(Succeed())
		Eventually(func() int { c, _ := w.e.store.BootISOUsage(ctx, name); return c }, time.Minute).Should(BeZero())
		Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
		Expect(filepath.Join(w.httpRoot, "vmedia", name)).NotTo(BeAnExistingFile())
	})
})

// bootConfigOf fetches a published boot ISO and reads its kernel command lines.
func bootConfigOf(u string) bootiso.BootConfig {
	GinkgoHelper()
	resp, err := http.Get(u)
	Expect(err).NotTo(HaveOccurred())
	iso, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	cfg, err := bootiso.ReadBootConfig(bytes.NewReader(iso))
	Expect(err).NotTo(HaveOccurred())
	return cfg
}
