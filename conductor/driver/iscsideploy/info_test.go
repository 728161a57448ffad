package iscsideploy

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/deploy/image/glancetest"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

var _ = Describe("instance_info validation", func() {
	parse := func(ii model.JSONObject, mods ...func(*model.Node)) (*instanceInfo, error) {
		n := &model.Node{UUID: "u", InstanceInfo: ii, DriverInternalInfo: model.JSONObject{}, Properties: model.JSONObject{}}
		for _, m := range mods {
			m(n)
		}
		return parseInstanceInfo(n, "local", "ext4")
	}

	It("parses a partition image with sizes given as strings or numbers", func() {
		info, err := parse(model.JSONObject{"image_source": "https://img/x.qcow2", "kernel": "k", "ramdisk": "r",
			"root_gb": "10", "swap_mb": float64(512), "ephemeral_gb": 2, "capabilities": `{"boot_option": "netboot"}`})
		Expect(err).NotTo(HaveOccurred())
		Expect(info.wholeDisk).To(BeFalse())
		Expect(info.rootMB).To(Equal(int64(10240)))
		Expect(info.swapMB).To(Equal(int64(512)))
		Expect(info.ephemeralMB).To(Equal(int64(2048)))
		Expect(info.ephemeralFormat).To(Equal("ext4"))
		Expect(info.bootMode).To(Equal("bios"))
		Expect(info.bootOption).To(Equal("netboot"))
	})

	It("names what is missing", func() {
		_, err := parse(model.JSONObject{"kernel": "k", "ramdisk": "r"})
		Expect(errs.Is(err, errs.KindMissingParameterValue)).To(BeTrue())
		Expect(errs.Message(err)).To(Equal("Cannot validate driver deploy. Some parameters were missing in node's instance_info. Missing are: ['image_source', 'root_gb']"))
	})

	It("refuses swap or ephemeral with a whole-disk image", func() {
		_, err := parse(model.JSONObject{"image_source": "http://img/x", "swap_mb": 1})
		Expect(errs.Message(err)).To(Equal("Cannot deploy whole disk image with swap or ephemeral size set"))
	})

	It("refuses non-integer sizes, sources that are neither URLs nor Glance ids, and unknown capability values", func() {
		_, err := parse(model.JSONObject{"image_source": "http://img/x", "kernel": "k", "root_gb": "ten"})
		Expect(errs.Is(err, errs.KindInvalidParameterValue)).To(BeTrue())
		Expect(errs.Message(err)).To(ContainSubstring("root_gb"))
		_, err = parse(model.JSONObject{"image_source": "ftp://img/x"})
		Expect(errs.Message(err)).To(Equal("Image ftp://img/x is neither an http(s) or file URL nor a Glance image id."))
		_, err = parse(model.JSONObject{"image_source": "file:///img", "capabilities": map[string]any{"boot_mode": "bogus"}})
		Expect(errs.Message(err)).To(ContainSubstring("Invalid boot_mode parameter 'bogus'"))
	})

	It("keeps preserve_ephemeral to the layout of the previous deploy", func() {
		ii := model.JSONObject{"image_source": "http://img/x", "kernel": "k", "root_gb": 10, "ephemeral_gb": 1, "preserve_ephemeral": "true"}
		_, err := parse(ii, func(n *model.Node) {
			n.DriverInternalInfo["instance"] = map[string]any{"root_gb": float64(10), "swap_mb": float64(0), "ephemeral_gb": float64(2)}
		})
		Expect(errs.Message(err)).To(ContainSubstring("ephemeral_gb from 2 to 1"))
		_, err = parse(ii, func(n *model.Node) {
			n.DriverInternalInfo["instance"] = map[string]any{"root_gb": float64(10), "swap_mb": float64(0), "ephemeral_gb": float64(1)}
		})
		Expect(err).NotTo(HaveOccurred())
		ii["preserve_ephemeral"] = "maybe"
		_, err = parse(ii)
		Expect(errs.Message(err)).To(ContainSubstring("Unrecognized value 'maybe'"))
	})
})

var _ = Describe("Glance image sources", func() {
	const (
		wholeID = "4d6bc3a2-6c1a-4a8f-9d47-6f1a4b5e2c11"
		partID  = "8e1f2a3b-4c5d-4e6f-8a7b-9c0d1e2f3a4b"
	)
	var (
		srv *glancetest.Server
		d   *Deploy
	)
	node := func(ii model.JSONObject) *model.Node {
		return &model.Node{UUID: "u", InstanceInfo: ii, DriverInternalInfo: model.JSONObject{}, Properties: model.JSONObject{}}
	}

	BeforeEach(func() {
		srv = glancetest.NewServer()
		DeferCleanup(srv.Close)
		srv.Add(glancetest.Image{ID: wholeID, DiskFormat: "qcow2", Data: []byte("whole")})
		srv.Add(glancetest.Image{ID: partID, DiskFormat: "raw", Data: []byte("root"),
			Properties: map[string]string{"kernel_id": "k", "ramdisk_id": "r"}})
		d = New(Options{Glance: &image.GlanceOptions{AuthType: image.GlanceAuthNone, Endpoint: srv.URL}})
	})

	It("takes whole disk or partition and the hash from Glance's record", func(ctx SpecContext) {
		info, err := d.instanceInfo(ctx, node(model.JSONObject{"image_source": "glance://" + wholeID, "image_checksum": "ignored"}))
		Expect(err).NotTo(HaveOccurred())
		Expect(info.wholeDisk).To(BeTrue())
		Expect(info.hashAlgo).To(Equal("sha512"))
		Expect(info.hashValue).To(HaveLen(128))
		Expect(info.checksum).To(HaveLen(32))

		_, err = d.instanceInfo(ctx, node(model.JSONObject{"image_source": partID}))
		Expect(errs.Message(err)).To(ContainSubstring("Missing are: ['root_gb']"), "kernel_id and ramdisk_id make it a partition image")
		info, err = d.instanceInfo(ctx, node(model.JSONObject{"image_source": partID, "root_gb": 1}))
		Expect(err).NotTo(HaveOccurred())
		Expect(info.wholeDisk).To(BeFalse())
	})

	It("relies on the recorded kind of image where Glance is not asked", func() {
		n := node(model.JSONObject{"image_source": partID, "root_gb": 1})
		n.DriverInternalInfo[wholeDiskKey] = false
		info, err := parseInstanceInfo(n, "local", "ext4")
		Expect(err).NotTo(HaveOccurred())
		Expect(info.wholeDisk).To(BeFalse())
	})

	It("refuses images Glance does not have, inactive images and formats it cannot write", func(ctx SpecContext) {
		missing := "0f0e0d0c-0b0a-4909-8807-060504030201"
		_, err := d.instanceInfo(ctx, node(model.JSONObject{"image_source": missing}))
		Expect(errs.Is(err, errs.KindInvalidParameterValue)).To(BeTrue())
		Expect(errs.Message(err)).To(Equal("Image " + missing + " could not be found in Glance."))

		srv.Add(glancetest.Image{ID: wholeID, DiskFormat: "qcow2", Status: "queued"})
		_, err = d.instanceInfo(ctx, node(model.JSONObject{"image_source": wholeID}))
		Expect(errs.Message(err)).To(ContainSubstring("is not active in Glance (status queued)"))

		srv.Add(glancetest.Image{ID: wholeID, DiskFormat: "iso", Data: []byte("x")})
		_, err = d.instanceInfo(ctx, node(model.JSONObject{"image_source": wholeID}))
		Expect(errs.Message(err)).To(ContainSubstring(`disk_format "iso"`))
	})

	It("refuses a Glance id when no Glance is configured", func(ctx SpecContext) {
		_, err := New(Options{}).instanceInfo(ctx, node(model.JSONObject{"image_source": wholeID}))
		Expect(errs.Is(err, errs.KindInvalidParameterValue)).To(BeTrue())
		Expect(errs.Message(err)).To(ContainSubstring("no Glance is configured"))
	})
})

var _ = Describe("deploy key", func() {
	It("is 32 alphanumerics, different each time, compared exactly", func() {
		a, err := newDeployKey()
		Expect(err).NotTo(HaveOccurred())
		b, err := newDeployKey()
		Expect(err).NotTo(HaveOccurred())
		Expect(a).To(MatchRegexp(`^[A-Za-z0-9]{32}$`))
		Expect(a).NotTo(Equal(b))
		Expect(keyMatches(a, a)).To(BeTrue())
		Expect(keyMatches(a, b)).To(BeFalse())
		Expect(keyMatches("", "")).To(BeFalse())
	})
})

var _ = Describe("write slots", func() {
	It("are granted in arrival order, skipping waiters that gave up", func(ctx SpecContext) {
		f := newFIFO(1)
		Expect(f.acquire(ctx)).To(Succeed())
		order := make(chan int, 3)
		gaveUp, cancel := context.WithCancel(ctx)
		for i := range 3 {
			wctx := context.Context(ctx)
			if i == 1 {
				wctx = gaveUp
			}
			go func() {
				if f.acquire(wctx) == nil {
					order <- i
					f.release()
				}
			}()
			// Queue them one after the other.
			Eventually(func() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.waiters) }).Should(Equal(i + 1))
		}
		cancel()
		Eventually(func() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.waiters) }).Should(Equal(2))
		f.release()
		Eventually(order).Should(Receive(Equal(0)))
		Eventually(order).Should(Receive(Equal(2)))
		Consistently(order, 100*time.Millisecond).ShouldNot(Receive())
		f.mu.Lock()
		defer f.mu.Unlock()
		Expect(f.free).To(Equal(1))
	})
})

var _ = Describe("image size limit", func() {
	node := func(props model.JSONObject) *model.Node { return &model.Node{UUID: "u", Properties: props} }

	It("is the node's disk size unless [deploy] max_image_size is set", func() {
		d := &Deploy{}
		Expect(d.maxImageSize(node(model.JSONObject{"local_gb": float64(10)}))).To(Equal(int64(10 << 30)))
		Expect(d.maxImageSize(node(model.JSONObject{"local_gb": "2"}))).To(Equal(int64(2 << 30)))
		Expect(d.maxImageSize(node(model.JSONObject{}))).To(BeZero(), "no limit when the disk size is unknown")
		d.opts.MaxImageSize = 5 << 20
		Expect(d.maxImageSize(node(model.JSONObject{"local_gb": float64(10)}))).To(Equal(int64(5 << 20)))
	})
})
