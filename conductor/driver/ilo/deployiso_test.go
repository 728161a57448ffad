package ilo_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver/drivertest"
	"github.com/ferricbm/ferric/conductor/driver/ilo"
	"github.com/ferricbm/ferric/conductor/driver/pxe"
	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/deploy/image/glancetest"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// webPublisher is a web-server publisher behind a running boot file
// server, with the folder it publishes into.
func webPublisher(ctx context.Context) (pub *publish.WebServer, base, folder string) {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	base = "http://" + l.Addr().String()
	l.Close()
	httpRoot := GinkgoT().TempDir()
	folder = filepath.Join(httpRoot, "vmedia")
	pub, err = publish.NewWebServer(folder, base)
	Expect(err).NotTo(HaveOccurred())
	files := pxe.New(pxe.Options{TFTPRoot: GinkgoT().TempDir(), HTTPRoot: httpRoot, HTTPURL: base, Media: pub, Downloads: loopbackDownloads})
	Expect(files.StartService(ctx)).To(Succeed())
	DeferCleanup(files.StopService)
	return pub, base, folder
}

// published lists what a web-server publisher's folder holds.
func published(folder string) []string {
	GinkgoHelper()
	names, err := filepath.Glob(filepath.Join(folder, "[^.]*"))
	Expect(err).NotTo(HaveOccurred())
	return names
}

func httpStatus(u string) int {
	GinkgoHelper()
	resp, err := http.Get(u)
	Expect(err).NotTo(HaveOccurred())
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// isoNode is a deploying node of a fake Gen9 iLO whose deploy ISO is
// deployISO, and a reader of the iLO's drives.
func isoNode(deployISO string) (*model.Node, *drivertest.Task, func() media) {
	GinkgoHelper()
	srv, info := startILO("ProLiant DL360 Gen9", ilo.Name)
	info["deploy_iso"] = deployISO
	st := string(states.Deploying)
	n := &model.Node{UUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", ProvisionState: &st, DriverInfo: info,
		InstanceInfo: model.JSONObject{"image_source": "http://images/disk.img"}}
	return n, drivertest.New(n), func() media { return mediaOf(srv) }
}

var _ = Describe("deploy ISOs from Glance", func() {
	const isoID = "6c0a9d3e-2b7f-4e15-8a4d-93f1c2b5e7a0"
	var (
		glance *glancetest.Server
		web    *publish.WebServer
		base   string
		folder string
		b      *ilo.Boot
	)

	BeforeEach(func(ctx SpecContext) {
		web, base, folder = webPublisher(ctx)
		glance = glancetest.NewServer()
		DeferCleanup(glance.Close)
		client, err := image.NewGlance(image.GlanceOptions{AuthType: image.GlanceAuthNone, Endpoint: glance.URL})
		Expect(err).NotTo(HaveOccurred())
		hw := ilo.New(ilo.OptionsFrom(fastConfig(), nil))
		b = hw.Boot(hw.ILO(), ilo.BootOptions{MediaLifetime: time.Minute, Downloads: loopbackDownloads,
			Glance:    func() (*image.Glance, error) { return client, nil },
			Publisher: func(context.Context) (publish.Publisher, error) { return web, nil }})
	})

	It("publishes the Glance image behind a temporary URL for the BMC, and deletes it at clean-up", func(ctx SpecContext) {
		glance.Add(glancetest.Image{ID: isoID, DiskFormat: "iso", Data: []byte("deploy ISO from Glance")})
		n, t, drives := isoNode(isoID)
		Expect(b.Validate(ctx, t)).To(Succeed())

		Expect(b.PrepareRamdisk(ctx, t, map[string]any{"deployment_id": n.UUID})).To(Succeed())
		cd := drives().cd
		Expect(cd).To(HavePrefix(base + "/vmedia/deploy-" + n.UUID + "?"))
		Expect(httpStatus(cd)).To(Equal(http.StatusOK))
		Expect(glance.Downloads(isoID)).To(BeNumerically("==", 1))

		Expect(b.CleanUpRamdisk(ctx, t)).To(Succeed())
		Expect(drives()).To(Equal(media{}))
		Expect(httpStatus(cd)).To(Equal(http.StatusNotFound))

		By("refusing an image Glance does not know, leaving nothing behind")
		n.DriverInfo["deploy_iso"] = "0a7bd8a2-4b4c-4a6e-9d47-6b5b6a7c8d9e"
		err := b.PrepareRamdisk(ctx, t, map[string]any{"deployment_id": n.UUID})
		Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue))
		Expect(err.Error()).To(ContainSubstring("could not be found in Glance"))
		Expect(drives()).To(Equal(media{}))
		Expect(published(folder)).To(BeEmpty())
	})

	It("checks the md5 checksum when Glance gives no multihash", func(ctx SpecContext) {
		glance.Add(glancetest.Image{ID: isoID, DiskFormat: "iso", Data: []byte("deploy ISO, md5 only"), NoMultihash: true})
		n, t, drives := isoNode(isoID)
		Expect(b.PrepareRamdisk(ctx, t, map[string]any{"deployment_id": n.UUID})).To(Succeed())
		Expect(drives().cd).To(HavePrefix(base + "/vmedia/deploy-" + n.UUID + "?"))
		Expect(b.CleanUpRamdisk(ctx, t)).To(Succeed())
	})

	sha512Of := func(s string) string {
		sum := sha512.Sum512([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	DescribeTable("refuses a download that does not match Glance's hash, inserting and publishing nothing",
		func(ctx SpecContext, img glancetest.Image, algo, want string) {
			img.ID, img.DiskFormat, img.Data = isoID, "iso", []byte("deploy ISO altered on its way")
			glance.Add(img)
			n, t, drives := isoNode(isoID)
			err := b.PrepareRamdisk(ctx, t, map[string]any{"deployment_id": n.UUID})
			Expect(err).To(MatchError(image.ErrChecksumMismatch))
			Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("node %s: deploy ISO %s does not match its checksum in Glance", n.UUID, isoID)))
			Expect(err.Error()).To(ContainSubstring(algo + " of glance://" + isoID))
			Expect(err.Error()).To(ContainSubstring("expected " + want))
			Expect(drives()).To(Equal(media{}))
			Expect(published(folder)).To(BeEmpty())
			Expect(glance.Downloads(isoID)).To(BeNumerically("==", 1))
		},
		Entry("os_hash_value (sha512)", glancetest.Image{HashValue: sha512Of("the deploy ISO Glance stored")},
			"sha512", sha512Of("the deploy ISO Glance stored")),
		Entry("checksum (md5), without multihash", glancetest.Image{NoMultihash: true, Checksum: "0123456789abcdef0123456789abcdef"},
			"md5", "0123456789abcdef0123456789abcdef"),
	)

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

// swiftAIOConfig is the [swift] section reaching the all-in-one of
// scripts/swift-aio.sh (started when it is not answering; the script is
// idempotent), with the account it creates.
func swiftAIOConfig(ctx context.Context) config.Swift {
	GinkgoHelper()
	var stderr bytes.Buffer
	// Specs run in their package's directory.
	cmd := exec.CommandContext(ctx, filepath.Join("..", "..", "..", "scripts", "swift-aio.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), stderr.String())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return config.Swift{AuthType: "tempauth", AuthURL: strings.TrimSpace(lines[len(lines)-1]), Username: "test:tester", Password: "testing"}
}

var _ = Describe("deploy ISOs in Swift (swift:<object>)", func() {
	It("inserts the object of the conductor's container behind a temporary URL, and keeps it at clean-up", func(ctx SpecContext) {
		container := "ferric-ilo-test-" + rand.Text()[:10]
		sw, err := publish.NewSwift(ctx, swiftAIOConfig(ctx), container)
		Expect(err).NotTo(HaveOccurred())
		content := []byte("deploy ISO kept in Swift " + rand.Text())
		const object = "ferric-deploy.iso"
		Expect(sw.Publish(ctx, object, bytes.NewReader(content), 0)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(sw.Delete(ctx, object)).To(Succeed()) })
		hw := ilo.New(ilo.OptionsFrom(fastConfig(), nil))
		b := hw.Boot(hw.ILO(), ilo.BootOptions{MediaLifetime: time.Minute, Downloads: loopbackDownloads,
			Publisher: func(context.Context) (publish.Publisher, error) { return sw, nil }})

		n, t, drives := isoNode("swift:" + object)
		Expect(b.Validate(ctx, t)).To(Succeed())
		Expect(b.PrepareRamdisk(ctx, t, map[string]any{"deployment_id": n.UUID})).To(Succeed())
		cd := drives().cd
		Expect(cd).To(ContainSubstring("/" + container + "/" + object + "?temp_url_sig="))
		resp, err := http.Get(cd)
		Expect(err).NotTo(HaveOccurred())
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(got).To(Equal(content))

		Expect(b.CleanUpRamdisk(ctx, t)).To(Succeed())
		Expect(drives()).To(Equal(media{}))
		fresh, err := sw.URL(ctx, object, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(httpStatus(fresh)).To(Equal(http.StatusOK), "the operator's object stays")
	})

	It("refuses swift:<object> on a conductor publishing on its web server, inserting nothing", func(ctx SpecContext) {
		web, _, folder := webPublisher(ctx)
		hw := ilo.New(ilo.OptionsFrom(fastConfig(), nil))
		b := hw.Boot(hw.ILO(), ilo.BootOptions{MediaLifetime: time.Minute, Downloads: loopbackDownloads,
			Publisher: func(context.Context) (publish.Publisher, error) { return web, nil }})
		n, t, drives := isoNode("swift:ferric-deploy.iso")
		err := b.PrepareRamdisk(ctx, t, map[string]any{"deployment_id": n.UUID})
		Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue))
		Expect(err.Error()).To(ContainSubstring("Deploy ISO swift:ferric-deploy.iso of node " + n.UUID +
			" is a Swift object, but this conductor publishes virtual media on its web server ([ilo] use_web_server_for_images)"))
		Expect(drives()).To(Equal(media{}))
		Expect(published(folder)).To(BeEmpty())
	})

	It("refuses swift: without an object name at validation", func(ctx SpecContext) {
		hw := ilo.New(ilo.OptionsFrom(fastConfig(), nil))
		b := hw.Boot(hw.ILO(), ilo.BootOptions{})
		_, t, _ := isoNode("swift: ")
		err := b.Validate(ctx, t)
		Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue))
		Expect(err.Error()).To(ContainSubstring(`names no Swift object after "swift:"`))
	})
})
