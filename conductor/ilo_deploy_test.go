package conductor_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/bmc/ilotest"
	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/ilo"
	"github.com/ferricbm/ferric/conductor/driver/iscsideploy"
	"github.com/ferricbm/ferric/conductor/driver/pxe"
	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/deploy/floppy"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// iloWorld is an iSCSI deploy world whose conductor also drives the ilo
// hardware type, publishing media on its boot file server.
func iloWorld(ctx context.Context, backend string) *iscsiWorld {
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
			media := hw.Boot(hw.ILO(), ilo.BootOptions{MediaLifetime: 15 * time.Minute,
				Publisher: func(context.Context) (publish.Publisher, error) { return web, nil }})
			return []driver.HardwareType{hw.HardwareType(ilo.Name, hw.ILO(), map[hwcatalog.InterfaceType][]driver.Implementation{
				hwcatalog.Boot:   {{Name: ilo.ILOBootName, Impl: media}},
				hwcatalog.Deploy: {{Name: iscsideploy.Name, Impl: dep}},
				hwcatalog.Vendor: {{Name: iscsideploy.Name, Impl: dep.Vendor()}},
			})}
		},
	})
}

var _ = Describe("iSCSI deploy with iLO virtual media", Label("tgtd"), func() {
	It("boots the ramdisk from the fake iLO's virtual CD with its parameters on the virtual floppy, writes the image and boots it from disk", func(ctx SpecContext) {
		w := iloWorld(ctx, backends[0])
		srv, err := ilotest.Start("127.0.0.1:0", ilotest.Options{Username: "admin", Password: "s3cret-pw",
			Model: "ProLiant DL360 Gen9", PowerDelay: 200 * time.Millisecond})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		ca, err := srv.WriteCAFile(w.dir)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(w.dir, "images", "deploy.iso"), []byte("deploy ISO"), 0o644)).To(Succeed())

		n := w.e.createNode(ctx, states.Available, func(n *model.Node) {
			n.Driver = ilo.Name
			n.DriverInfo = model.JSONObject{"ilo_address": "127.0.0.1", "client_port": srv.Port, "ilo_username": "admin",
				"ilo_password": "s3cret-pw", "ca_file": ca, "deploy_iso": w.images.URL + "/deploy.iso"}
			n.InstanceInfo = model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"}
			n.PowerState = ptr(states.PowerOff)
		})
		Expect(str(n.BootInterface)).To(Equal(ilo.ILOBootName))
		mac := randomMAC()
		Expect(w.e.store.CreatePort(ctx, &model.Port{UUID: newUUID(), NodeID: n.ID, Address: mac, PXEEnabled: true})).To(Succeed())
		backing := filepath.Join(w.dir, n.UUID+".disk")
		Expect(os.WriteFile(backing, nil, 0o644)).To(Succeed())
		Expect(os.Truncate(backing, 64<<20)).To(Succeed())

		w.deployToWait(ctx, n.UUID)

		By("inserting the floppy and the deploy ISO, booting once from the CD")
		Expect(srv.RIBCL.Power()).To(Equal("ON"))
		cd := srv.RIBCL.VirtualMedia("CDROM")
		Expect(cd.Inserted).To(BeTrue())
		Expect(cd.URL).To(Equal(w.images.URL + "/deploy.iso"))
		fl := srv.RIBCL.VirtualMedia("FLOPPY")
		Expect(fl.Inserted).To(BeTrue())
		Expect(fl.URL).To(HavePrefix(w.httpURL + "/vmedia/image-" + n.UUID + "?"))
		Expect(w.pxelinuxPath(mac)).NotTo(BeAnExistingFile(), "no PXE configuration")

		By("serving the ramdisk's parameters on the floppy")
		resp, err := http.Get(fl.URL)
		Expect(err).NotTo(HaveOccurred())
		img, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		fs, err := floppy.Open(bytes.NewReader(img))
		Expect(err).NotTo(HaveOccurred())
		txt, err := fs.ReadFile(floppy.ParametersFile)
		Expect(err).NotTo(HaveOccurred())
		key := deployKey(w.e.node(ctx, n.UUID))
		iqn := iscsideploy.IQN(n.UUID)
		for _, want := range []string{"deployment_id=" + n.UUID, "deployment_key=" + key, "iscsi_target_iqn=" + iqn,
			"BOOTIF=" + mac, "ipa-driver-name=ilo"} {
			Expect(string(txt)).To(ContainSubstring(want))
		}

		By("writing the image when the ramdisk calls back, then booting from disk")
		Expect(w.exportAsRamdisk(iqn, backing)).To(Succeed())
		_, err = w.passDeployInfo(ctx, n.UUID, withCHAP(map[string]any{"key": key, "address": "127.0.0.1",
			"iqn": iqn, "port": strconv.Itoa(w.tgt.port)}))
		Expect(err).NotTo(HaveOccurred())
		Eventually(w.e.provisionState(ctx, n.UUID), 2*time.Minute).Should(Equal(states.Active))
		Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
		Eventually(w.notified).Should(Receive(Equal("done " + key)))
		written, err := os.ReadFile(backing)
		Expect(err).NotTo(HaveOccurred())
		Expect(written[:len(w.refRaw)]).To(Equal(w.refRaw))

		Expect(srv.RIBCL.VirtualMedia("CDROM").Inserted).To(BeFalse())
		Expect(srv.RIBCL.VirtualMedia("FLOPPY").Inserted).To(BeFalse())
		resp, err = http.Get(fl.URL)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusNotFound), "the floppy and its deploy key are gone")
		bd, err := w.e.api(w.c).GetBootDevice(ctx, rpc.NodeArgs{NodeID: n.UUID})
		Expect(err).NotTo(HaveOccurred())
		Expect(*bd.BootDevice).To(Equal("disk"))
		Expect(*bd.Persistent).To(BeTrue())
		Expect(srv.RIBCL.PersistentBoot()[0]).To(Equal("HDD"))
		final := w.e.node(ctx, n.UUID)
		Expect(final.LastError).To(BeNil())
		Expect(str(final.PowerState)).To(Equal(states.PowerOn))
	})
})
