package conductor_test

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/bmc/ilotest"
	"github.com/ferricbm/ferric/conductor/driver/ilo"
	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/deploy/image/glancetest"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// downSwift answers every call as a Swift proxy that is down would.
type downSwift struct{}

var errSwiftDown = errors.New("swift: PUT ironic_ilo_container: 503 Service Unavailable")

func (downSwift) Publish(context.Context, string, io.Reader, time.Duration) error {
	return errSwiftDown
}
func (downSwift) URL(context.Context, string, time.Duration) (string, error) { return "", errSwiftDown }
func (downSwift) Delete(context.Context, string) error                       { return errSwiftDown }

// glanceISO is the id of a deploy ISO in the Glance stand-in.
const glanceISO = "6c0a9d3e-2b7f-4e15-8a4d-93f1c2b5e7a0"

var _ = Describe("iLO virtual-media deploy failures", Label("tgtd"), func() {
	type failure struct {
		driver string
		bmc    ilotest.Options
		// swiftDown publishes through a Swift that is down.
		swiftDown bool
		// glance, when set, is the deploy ISO's record in a Glance stand-in
		// the conductor reads deploy ISOs from.
		glance *glancetest.Image
		// breakNode changes the node's driver_info, its BMC running.
		breakNode func(w *iscsiWorld, srv *ilotest.Server, info model.JSONObject)
		lastError []string
	}
	closedPort := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	DescribeTable("end in deploy failed, saying why, with nothing attached or published",
		func(ctx SpecContext, f failure) {
			wrap := func(p publish.Publisher) publish.Publisher { return p }
			if f.swiftDown {
				wrap = func(publish.Publisher) publish.Publisher { return downSwift{} }
			}
			var glance func() (*image.Glance, error)
			if f.glance != nil {
				srv := glancetest.NewServer()
				DeferCleanup(srv.Close)
				srv.Add(*f.glance)
				client, err := image.NewGlance(image.GlanceOptions{AuthType: image.GlanceAuthNone, Endpoint: srv.URL})
				Expect(err).NotTo(HaveOccurred())
				glance = func() (*image.Glance, error) { return client, nil }
			}
			w := iloWorldWith(ctx, backends[0], wrap, glance)
			srv, n, _, _ := w.vmediaNodeWith(ctx, f.bmc, f.driver, states.Available,
				model.JSONObject{"image_source": w.images.URL + "/disk.qcow2"})
			stored := w.e.node(ctx, n.UUID)
			f.breakNode(w, srv, stored.DriverInfo)
			Expect(w.e.store.SaveNode(ctx, stored)).To(Succeed())

			Expect(rpc.DoNodeDeploy.Call(ctx, w.e.api(w.c), rpc.DeployArgs{NodeID: n.UUID})).To(Succeed())
			Eventually(w.e.provisionState(ctx, n.UUID), time.Minute).Should(Equal(states.DeployFail))
			Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
			final := w.e.node(ctx, n.UUID)
			Expect(final.LastError).NotTo(BeNil())
			for _, want := range f.lastError {
				Expect(*final.LastError).To(ContainSubstring(want))
			}
			Expect(*final.LastError).NotTo(ContainSubstring("s3cret-pw"))
			Expect(*final.LastError).NotTo(ContainSubstring("sig="))

			cd, fl, _ := vmediaOf(srv)
			Expect(cd).To(BeEmpty(), "the deploy ISO is ejected")
			Expect(fl).To(BeEmpty(), "the floppy is ejected")
			published, err := filepath.Glob(filepath.Join(w.httpRoot, "vmedia", "[^.]*"))
			Expect(err).NotTo(HaveOccurred())
			Expect(published).To(BeEmpty(), "nothing stays published")
			Expect(final.DriverInternalInfo).NotTo(HaveKey("deploy_key_secret"))
		},
		Entry("a wrong iLO password", failure{driver: ilo.Name, bmc: ilotest.Options{Model: "ProLiant DL360 Gen9"},
			breakNode: func(_ *iscsiWorld, _ *ilotest.Server, info model.JSONObject) { info["ilo_password"] = "wrong-pw" },
			lastError: []string{"refused the user name and password of driver_info ilo_username/ilo_password"}}),
		Entry("a wrong Redfish password, the cause left unmasked", failure{driver: ilo.RedfishName,
			bmc:       ilotest.Options{Model: "ProLiant DL360 Gen10"},
			breakNode: func(_ *iscsiWorld, _ *ilotest.Server, info model.JSONObject) { info["redfish_password"] = "wrong-pw" },
			lastError: []string{"refused the user name and password of driver_info redfish_username/redfish_password (read the system"}}),
		Entry("virtual media refused", failure{driver: ilo.Name, bmc: ilotest.Options{Model: "ProLiant DL360 Gen9"},
			breakNode: func(_ *iscsiWorld, srv *ilotest.Server, _ model.JSONObject) { srv.RIBCL.RefuseVirtualMedia(true) },
			lastError: []string{"insert the parameter floppy"}}),
		Entry("Swift down", failure{driver: ilo.Name, bmc: ilotest.Options{Model: "ProLiant DL360 Gen9"}, swiftDown: true,
			breakNode: func(*iscsiWorld, *ilotest.Server, model.JSONObject) {},
			lastError: []string{"delete the parameter floppy", "503 Service Unavailable"}}),
		Entry("a deploy ISO URL that answers 404", failure{driver: ilo.Name, bmc: ilotest.Options{Model: "ProLiant DL360 Gen9"},
			breakNode: func(w *iscsiWorld, _ *ilotest.Server, info model.JSONObject) {
				info["deploy_iso"] = w.images.URL + "/missing.iso"
			},
			lastError: []string{"insert the deploy ISO"}}),
		Entry("a Glance deploy ISO that does not match its checksum", failure{driver: ilo.Name, bmc: ilotest.Options{Model: "ProLiant DL360 Gen9"},
			glance: &glancetest.Image{ID: glanceISO, DiskFormat: "iso", Data: []byte("deploy ISO, altered"),
				HashValue: strings.Repeat("ab", 64)},
			breakNode: func(_ *iscsiWorld, _ *ilotest.Server, info model.JSONObject) { info["deploy_iso"] = glanceISO },
			lastError: []string{"deploy ISO " + glanceISO + " does not match its checksum in Glance, not used",
				"image checksum mismatch: sha512 of glance://" + glanceISO, "expected " + strings.Repeat("ab", 64)}}),
		Entry("an unreachable iLO", failure{driver: ilo.Name, bmc: ilotest.Options{Model: "ProLiant DL360 Gen9"},
			breakNode: func(_ *iscsiWorld, _ *ilotest.Server, info model.JSONObject) { info["client_port"] = closedPort() },
			lastError: []string{"ilo BMC 127.0.0.1"}}),
		Entry("a Redfish task that fails", failure{driver: ilo.RedfishName,
			bmc: ilotest.Options{Model: "ProLiant DL360 Gen10", AsyncMedia: true, TaskDelay: 100 * time.Millisecond},
			breakNode: func(w *iscsiWorld, _ *ilotest.Server, info model.JSONObject) {
				info["deploy_iso"] = w.images.URL + "/missing.iso"
			},
			lastError: []string{"insert the deploy ISO"}}),
	)
})
