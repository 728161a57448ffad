package ilo_test

import (
	"context"
	"github.com/ferricbm/ferric/conductor/driver/drivertest"
	"net"
	"net/http"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver/ilo"
	"github.com/ferricbm/ferric/conductor/driver/pxe"
	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/deploy/image/glancetest"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

var _ = Describe("deploy ISOs from Glance", func() {
	const isoID = "6c0a9d3e-2b7f-4e15-8a4d-93f1c2b5e7a0"

	It("publishes the Glance image behind a temporary URL for the BMC, and deletes it at clean-up", func(ctx SpecContext) {
		hw := ilo.New(ilo.OptionsFrom(fastConfig(), nil))
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		base := "http://" + l.Addr().String()
		l.Close()
		httpRoot := GinkgoT().TempDir()
		web, err := publish.NewWebServer(filepath.Join(httpRoot, "vmedia"), base)
		Expect(err).NotTo(HaveOccurred())
		files := pxe.New(pxe.Options{TFTPRoot: GinkgoT().TempDir(), HTTPRoot: httpRoot, HTTPURL: base, Media: web})
		Expect(files.StartService(ctx)).To(Succeed())
		DeferCleanup(files.StopService)

		glance := glancetest.NewServer()
		DeferCleanup(glance.Close)
		glance.Add(glancetest.Image{ID: isoID, DiskFormat: "iso", Data: []byte("deploy ISO from Glance")})
		client, err := image.NewGlance(image.GlanceOptions{AuthType: image.GlanceAuthNone, Endpoint: glance.URL})
		Expect(err).NotTo(HaveOccurred())
		b := hw.Boot(hw.ILO(), ilo.BootOptions{MediaLifetime: time.Minute,
			Glance:    func() (*image.Glance, error) { return client, nil },
			Publisher: func(context.Context) (publish.Publisher, error) { return web, nil }})

		srv, info := startILO("ProLiant DL360 Gen9", ilo.Name)
		info["deploy_iso"] = isoID
		st := string(states.Deploying)
		n := &model.Node{UUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", ProvisionState: &st, DriverInfo: info,
			InstanceInfo: model.JSONObject{"image_source": "http://images/disk.img"}}
		t := drivertest.New(n)
		Expect(b.Validate(ctx, t)).To(Succeed())

		Expect(b.PrepareRamdisk(ctx, t, map[string]any{"deployment_id": n.UUID})).To(Succeed())
		cd := mediaOf(srv).cd
		Expect(cd).To(HavePrefix(base + "/vmedia/deploy-" + n.UUID + "?"))
		resp, err := http.Get(cd)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(glance.Downloads(isoID)).To(BeNumerically("==", 1))

		Expect(b.CleanUpRamdisk(ctx, t)).To(Succeed())
		Expect(mediaOf(srv)).To(Equal(media{}))
		resp, err = http.Get(cd)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusNotFound))

		By("refusing an image Glance does not know, leaving nothing behind")
		n.DriverInfo["deploy_iso"] = "0a7bd8a2-4b4c-4a6e-9d47-6b5b6a7c8d9e"
		err = b.PrepareRamdisk(ctx, t, map[string]any{"deployment_id": n.UUID})
		Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue))
		Expect(err.Error()).To(ContainSubstring("could not be found in Glance"))
		Expect(mediaOf(srv)).To(Equal(media{}))
		published, err := filepath.Glob(filepath.Join(httpRoot, "vmedia", "[^.]*"))
		Expect(err).NotTo(HaveOccurred())
		Expect(published).To(BeEmpty())
	})

	It("refuses a Glance image id when no Glance is configured", func(ctx SpecContext) {
		hw := ilo.New(ilo.OptionsFrom(fastConfig(), nil))
		b := hw.Boot(hw.ILO(), ilo.BootOptions{Glance: func() (*image.Glance, error) { return nil, nil }})
		st := string(states.Deploying)
		n := &model.Node{UUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", ProvisionState: &st,
			DriverInfo: model.JSONObject{"ilo_address": "192.0.2.1", "ilo_username": "admin", "ilo_password": "pw", "deploy_iso": isoID}}
		err := b.Validate(ctx, drivertest.New(n))
		Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue))
		Expect(err.Error()).To(ContainSubstring("no Glance is configured ([glance] auth_type)"))
	})
})
