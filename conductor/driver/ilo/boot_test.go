package ilo_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/bmc/ilotest"
	"github.com/ferricbm/ferric/conductor/driver/drivertest"
	"github.com/ferricbm/ferric/conductor/driver/ilo"
	"github.com/ferricbm/ferric/conductor/driver/pxe"
	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/deploy/floppy"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// media is what a fake BMC holds in its virtual drives.
type media struct {
	floppy, cd string
}

func mediaOf(srv *ilotest.Server) media {
	if srv.Redfish != nil {
		var m media
		if f := srv.Redfish.Media("Floppy"); f.Inserted {
			m.floppy = f.Image
		}
		if c := srv.Redfish.Media("CD"); c.Inserted {
			m.cd = c.Image
		}
		return m
	}
	var m media
	if f := srv.RIBCL.VirtualMedia("FLOPPY"); f.Inserted {
		m.floppy = f.URL
	}
	if c := srv.RIBCL.VirtualMedia("CDROM"); c.Inserted {
		m.cd = c.URL
	}
	return m
}

var _ = Describe("virtual-media boot", func() {
	var (
		hw       *ilo.Hardware
		base     string
		httpRoot string
		isoURL   string
		params   map[string]any
		// publisher is the boot file server's, as with [ilo]
		// use_web_server_for_images.
		publisher *publish.WebServer
	)

	BeforeEach(func(ctx SpecContext) {
		hw = ilo.New(ilo.OptionsFrom(fastConfig(), nil))
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		base = "http://" + l.Addr().String()
		l.Close()
		httpRoot = GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(httpRoot, "deploy.iso"), []byte("an ISO"), 0o644)).To(Succeed())
		isoURL = base + "/deploy.iso"
		web, err := publish.NewWebServer(filepath.Join(httpRoot, "vmedia"), base)
		Expect(err).NotTo(HaveOccurred())
		files := pxe.New(pxe.Options{TFTPRoot: GinkgoT().TempDir(), HTTPRoot: httpRoot, HTTPURL: base, Media: web, Downloads: loopbackDownloads})
		Expect(files.StartService(ctx)).To(Succeed())
		DeferCleanup(files.StopService)
		publisher = web
		params = map[string]any{"deployment_id": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "deployment_key": "Vfq3Tb0S2J7x0Zc1",
			"iscsi_target_iqn": "iqn.2008-10.org.openstack:1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "boot_option": "local",
			"coreos.configdrive": 0}
	})

	boot := func(f ilo.Flavor) *ilo.Boot {
		return hw.Boot(f, ilo.BootOptions{MediaLifetime: time.Minute, Downloads: loopbackDownloads,
			Publisher: func(context.Context) (publish.Publisher, error) { return publisher, nil }})
	}
	deployingNode := func(info map[string]any) *model.Node {
		st := string(states.Deploying)
		info["deploy_iso"] = isoURL
		return &model.Node{UUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", ProvisionState: &st, DriverInfo: info,
			InstanceInfo: model.JSONObject{"image_source": "http://images/disk.img"}}
	}
	ports := []model.Port{{Address: "52:54:00:AA:BB:02", PXEEnabled: true},
		{Address: "52:54:00:aa:bb:01", PXEEnabled: true, Extra: model.JSONObject{"vif_port_id": "vif-1"}}}
	get := func(u string) (int, []byte) {
		resp, err := http.Get(u)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, body
	}

	for _, c := range []struct{ model, flavor string }{
		{"ProLiant DL360 Gen9", ilo.Name},
		{"ProLiant DL360 Gen10", ilo.Name},
		{"ProLiant DL360 Gen10", ilo.RedfishName},
	} {
		It("boots a "+c.model+" ("+c.flavor+") from the deploy ISO with the parameters on a floppy, then from its disk", func(ctx SpecContext) {
			srv, info := startILO(c.model, c.flavor)
			f := hw.ILO()
			if c.flavor == ilo.RedfishName {
				f = hw.Redfish()
			}
			b := boot(f)
			t := drivertest.New(deployingNode(info)).WithPorts(ports)
			Expect(b.Validate(ctx, t)).To(Succeed())

			Expect(b.PrepareRamdisk(ctx, t, params)).To(Succeed())
			m := mediaOf(srv)
			Expect(m.cd).To(Equal(isoURL))
			Expect(m.floppy).To(MatchRegexp(`^%s/vmedia/image-1be26c0b-03f2-4d2e-ae87-c02d7f33c123-[a-z2-7]{26}\?`, regexp.QuoteMeta(base)),
				"a floppy name of its own for each boot")
			bd, err := hw.Management(f).GetBootDevice(ctx, t)
			Expect(err).NotTo(HaveOccurred())
			Expect(*bd.Device).To(Equal("cdrom"))
			Expect(*bd.Persistent).To(BeFalse())

			status, img := get(m.floppy)
			Expect(status).To(Equal(http.StatusOK))
			fs, err := floppy.Open(bytesReaderAt(img))
			Expect(err).NotTo(HaveOccurred())
			Expect(fs.Label()).To(Equal(floppy.Label))
			txt, err := fs.ReadFile(floppy.ParametersFile)
			Expect(err).NotTo(HaveOccurred())
			token, _ := t.Node().DriverInternalInfo["agent_secret_token"].(string)
			Expect(token).To(HaveLen(43), "a fresh 256-bit agent token for the ramdisk")
			Expect(t.Node().DriverInternalInfo).To(HaveKeyWithValue("agent_secret_token_pregenerated", true))
			Expect(strings.Split(string(txt), "\n")).To(ConsistOf(
				"BOOTIF=52:54:00:aa:bb:01", "boot_option=local", "coreos.configdrive=0",
				"deployment_id=1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "deployment_key=Vfq3Tb0S2J7x0Zc1",
				"iscsi_target_iqn=iqn.2008-10.org.openstack:1be26c0b-03f2-4d2e-ae87-c02d7f33c123",
				"ipa-agent-token="+token))
			unsigned, _ := get(base + "/vmedia/image-1be26c0b-03f2-4d2e-ae87-c02d7f33c123")
			Expect(unsigned).To(Equal(http.StatusForbidden))

			// The deploy powers the node on; the boot uses the one-time
			// device up.
			Expect(hw.Power(f).SetPowerState(ctx, t, states.PowerOn, 0)).To(Succeed())

			Expect(b.CleanUpRamdisk(ctx, t)).To(Succeed())
			Expect(mediaOf(srv)).To(Equal(media{}))
			status, _ = get(m.floppy)
			Expect(status).To(Equal(http.StatusNotFound))

			Expect(b.PrepareInstance(ctx, t)).To(Succeed())
			bd, err = hw.Management(f).GetBootDevice(ctx, t)
			Expect(err).NotTo(HaveOccurred())
			Expect(*bd.Device).To(Equal("disk"))
			Expect(*bd.Persistent).To(BeTrue())
		})
	}

	It("does nothing to the media outside deploying and cleaning", func(ctx SpecContext) {
		srv, info := startILO("ProLiant DL360 Gen9", ilo.Name)
		n := deployingNode(info)
		active := string(states.Active)
		n.ProvisionState = &active
		Expect(boot(hw.ILO()).PrepareRamdisk(ctx, drivertest.New(n), params)).To(Succeed())
		Expect(mediaOf(srv)).To(Equal(media{}))
		Expect(srv.RIBCL.Requests()).To(BeZero())
	})

	It("fails when the BMC cannot fetch the deploy ISO, leaving the floppy neither inserted nor published", func(ctx SpecContext) {
		srv, info := startILO("ProLiant DL360 Gen9", ilo.Name)
		n := deployingNode(info)
		n.DriverInfo["deploy_iso"] = base + "/missing.iso"
		err := boot(hw.ILO()).PrepareRamdisk(ctx, drivertest.New(n), params)
		Expect(err).To(MatchError(ContainSubstring("insert the deploy ISO")))
		Expect(mediaOf(srv)).To(Equal(media{}))
		Expect(filepath.Glob(filepath.Join(httpRoot, "vmedia", publish.FloppyName(n.UUID)+"*"))).To(BeEmpty())
	})

	It("keeps the floppy's temporary URL out of the error when the BMC cannot fetch it", func(ctx SpecContext) {
		_, info := startILO("ProLiant DL360 Gen10", ilo.RedfishName)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		nowhere := "http://" + l.Addr().String()
		l.Close()
		unserved, err := publish.NewWebServer(filepath.Join(GinkgoT().TempDir(), "vmedia"), nowhere)
		Expect(err).NotTo(HaveOccurred())
		b := hw.Boot(hw.Redfish(), ilo.BootOptions{MediaLifetime: time.Minute, Downloads: loopbackDownloads,
			Publisher: func(context.Context) (publish.Publisher, error) { return unserved, nil }})
		err = b.PrepareRamdisk(ctx, drivertest.New(deployingNode(info)), params)
		Expect(err).To(MatchError(ContainSubstring("insert the parameter floppy")))
		Expect(err.Error()).To(ContainSubstring("<temporary URL>"))
		Expect(err.Error()).NotTo(ContainSubstring("sig="))
	})

	Describe("validation", func() {
		validate := func(f ilo.Flavor, n *model.Node) error {
			return boot(f).Validate(context.Background(), drivertest.New(n))
		}
		iloInfo := func() map[string]any {
			return map[string]any{"ilo_address": "192.0.2.1", "ilo_username": "admin", "ilo_password": "pw"}
		}

		It("takes the deprecated ilo_deploy_iso for iLO nodes", func() {
			n := deployingNode(iloInfo())
			delete(n.DriverInfo, "deploy_iso")
			n.DriverInfo["ilo_deploy_iso"] = isoURL
			Expect(validate(hw.ILO(), n)).To(Succeed())
		})

		It("requires a deploy ISO given as an http(s) URL, swift:<object> or a Glance image id", func() {
			n := deployingNode(iloInfo())
			delete(n.DriverInfo, "deploy_iso")
			err := validate(hw.ILO(), n)
			Expect(errs.KindOf(err)).To(Equal(errs.KindMissingParameterValue))
			Expect(err.Error()).To(ContainSubstring("Missing are: ['deploy_iso']"))
			n.DriverInfo["deploy_iso"] = "0a7bd8a2-4b4c-4a6e-9d47-6b5b6a7c8d9e"
			err = validate(hw.ILO(), n)
			Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue))
			Expect(err.Error()).To(ContainSubstring("is a Glance image id, but this conductor has no Glance client"))
			n.DriverInfo["deploy_iso"] = "ftp://images/deploy.iso"
			err = validate(hw.ILO(), n)
			Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue))
			Expect(err.Error()).To(ContainSubstring("must be an http:// or https:// URL, swift:<object> or a Glance image id"))
		})

		It("refuses a deploy ISO URL at a literal loopback, link-local or private address outside the download allow-list", func() {
			n := deployingNode(iloInfo())
			for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:3306/", "https://10.1.2.3/deploy.iso"} {
				n.DriverInfo["deploy_iso"] = u
				err := hw.Boot(hw.ILO(), ilo.BootOptions{}).Validate(context.Background(), drivertest.New(n))
				Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue), u)
				Expect(err.Error()).To(ContainSubstring("driver_info deploy_iso of node " + n.UUID + ": download destination refused"))
			}
		})

		It("refuses a swift:<object> naming the virtual media the conductor publishes for a node", func() {
			n := deployingNode(iloInfo())
			other := "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
			for _, object := range []string{"image-" + other, "boot-" + other, "deploy-" + other, "image-" + n.UUID} {
				n.DriverInfo["deploy_iso"] = "swift:" + object
				err := validate(hw.ILO(), n)
				Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue), object)
				Expect(err.Error()).To(ContainSubstring("names virtual media the conductor publishes for a node"))
			}
			n.DriverInfo["deploy_iso"] = "swift:ferric-deploy.iso"
			Expect(validate(hw.ILO(), n)).To(Succeed())
		})

		It("boots a partition image from the image's own boot ISO or one built from its kernel and ramdisk, else asks for local boot", func(ctx SpecContext) {
			n := deployingNode(iloInfo())
			n.InstanceInfo = model.JSONObject{"image_source": "http://images/part.img", "kernel": "http://k", "ramdisk": "http://r",
				"capabilities": map[string]any{"boot_option": "netboot"}}
			err := validate(hw.ILO(), n)
			Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue), "a conductor without a boot ISO store")
			Expect(err.Error()).To(ContainSubstring("boot_option=local"))

			store, err := db.Open(ctx, "sqlite://"+filepath.Join(GinkgoT().TempDir(), "ferric.db"))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(store.Close)
			Expect(store.Upgrade(ctx)).To(Succeed())
			withISOs := hw.Boot(hw.ILO(), ilo.BootOptions{Downloads: loopbackDownloads, BootISOs: store, Fetch: func(context.Context, any, string) error { return nil },
				Publisher: func(context.Context) (publish.Publisher, error) { return publisher, nil }})
			Expect(withISOs.Validate(ctx, drivertest.New(n))).To(Succeed())

			delete(n.InstanceInfo, "ramdisk")
			err = withISOs.Validate(ctx, drivertest.New(n))
			Expect(errs.KindOf(err)).To(Equal(errs.KindMissingParameterValue))
			Expect(err.Error()).To(ContainSubstring("missing are: ramdisk"))

			n.InstanceInfo["boot_iso"] = "0a7bd8a2-4b4c-4a6e-9d47-6b5b6a7c8d9e"
			err = withISOs.Validate(ctx, drivertest.New(n))
			Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue))
			Expect(err.Error()).To(ContainSubstring("boot_iso must be an http:// or https:// URL"))
			n.InstanceInfo["boot_iso"] = "http://169.254.169.254/latest/meta-data/"
			err = withISOs.Validate(ctx, drivertest.New(n))
			Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue))
			Expect(err.Error()).To(ContainSubstring("instance_info boot_iso: download destination refused"))
			n.InstanceInfo["boot_iso"] = "https://images/part-boot.iso"
			Expect(withISOs.Validate(ctx, drivertest.New(n))).To(Succeed())

			delete(n.InstanceInfo, "boot_iso")
			n.InstanceInfo["capabilities"] = map[string]any{"boot_option": "local"}
			Expect(validate(hw.ILO(), n)).To(Succeed())
		})
	})
})

func bytesReaderAt(b []byte) io.ReaderAt { return strings.NewReader(string(b)) }
