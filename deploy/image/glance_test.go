package image_test

import (
	"context"
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/deploy/image/glancetest"
)

var _ = Describe("Glance images", func() {
	const (
		wholeID = "5b9cf1f4-1a8e-4a59-9a6e-3c5f8d1e2a01"
		partID  = "0c2d7a3e-7f1b-4a8c-b0d4-6e9a1f3c5b02"
	)
	var (
		srv    *glancetest.Server
		glance *image.Glance
		data   []byte
		ctx    context.Context
	)

	BeforeEach(func() {
		ctx = context.Background()
		srv = glancetest.NewServer()
		DeferCleanup(srv.Close)
		data = randomBytes(2 << 20)
		srv.Add(glancetest.Image{ID: wholeID, DiskFormat: "raw", Data: data})
		srv.Add(glancetest.Image{ID: partID, DiskFormat: "qcow2", Data: data,
			Properties: map[string]string{"kernel_id": "k", "ramdisk_id": "r"}})
		var err error
		glance, err = image.NewGlance(image.GlanceOptions{AuthType: image.GlanceAuthNone, Endpoint: srv.URL})
		Expect(err).NotTo(HaveOccurred())
	})

	It("tells Glance references from URLs", func() {
		for _, ref := range []string{wholeID, "glance://" + wholeID, strings.ReplaceAll(wholeID, "-", "")} {
			id, ok := image.GlanceRef(ref)
			Expect(ok).To(BeTrue(), ref)
			Expect(strings.ReplaceAll(id, "-", "")).To(Equal(strings.ReplaceAll(wholeID, "-", "")))
		}
		for _, ref := range []string{"http://images/" + wholeID, "file:///" + wholeID, "glance://not-a-uuid", ""} {
			_, ok := image.GlanceRef(ref)
			Expect(ok).To(BeFalse(), ref)
		}
	})

	It("reads an image's record: format, size, hashes, whole disk or partition", func() {
		img, err := glance.Image(ctx, wholeID)
		Expect(err).NotTo(HaveOccurred())
		Expect(img.Status).To(Equal("active"))
		Expect(img.DiskFormat).To(Equal("raw"))
		Expect(img.Size).To(BeEquivalentTo(len(data)))
		Expect(img.HashAlgo).To(Equal("sha512"))
		Expect(img.HashValue).To(HaveLen(128))
		Expect(img.Checksum).To(HaveLen(32))
		Expect(img.WholeDisk()).To(BeTrue())

		part, err := glance.Image(ctx, partID)
		Expect(err).NotTo(HaveOccurred())
		Expect(part.WholeDisk()).To(BeFalse(), "kernel_id and ramdisk_id mark a partition image")
	})

	It("reports a missing image as not found", func() {
		_, err := glance.Image(ctx, "9d1c0e2b-3f4a-4b5c-8d6e-7f8091a2b3c4")
		Expect(err).To(MatchError(image.ErrNotFound))
	})

	It("caches an image's data once for several nodes, checked against its os_hash_value", func() {
		cache, err := image.NewCache(image.CacheOptions{Dir: GinkgoT().TempDir()})
		Expect(err).NotTo(HaveOccurred())
		img, err := glance.Image(ctx, wholeID)
		Expect(err).NotTo(HaveOccurred())
		for _, node := range []string{"n1", "n2", "n3"} {
			e, err := cache.Acquire(ctx, node, glance.Source(img))
			Expect(err).NotTo(HaveOccurred())
			got, err := os.ReadFile(e.Path)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(data))
		}
		Expect(srv.Downloads(wholeID)).To(BeEquivalentTo(1))
	})

	It("rejects data that does not match os_hash_value", func() {
		srv.Add(glancetest.Image{ID: wholeID, DiskFormat: "raw", Data: data, HashValue: strings.Repeat("0", 128)})
		cache, err := image.NewCache(image.CacheOptions{Dir: GinkgoT().TempDir()})
		Expect(err).NotTo(HaveOccurred())
		img, err := glance.Image(ctx, wholeID)
		Expect(err).NotTo(HaveOccurred())
		_, err = cache.Acquire(ctx, "n1", glance.Source(img))
		Expect(err).To(MatchError(image.ErrChecksumMismatch))
		Expect(err).To(MatchError(ContainSubstring("sha512 of glance://" + wholeID)))
	})

	It("checks its options", func() {
		_, err := image.NewGlance(image.GlanceOptions{AuthType: image.GlanceAuthNone})
		Expect(err).To(MatchError(ContainSubstring("endpoint is required")))
		_, err = image.NewGlance(image.GlanceOptions{AuthType: image.GlanceAuthPassword, AuthURL: "http://127.0.0.1:5000/v3"})
		Expect(err).To(MatchError(ContainSubstring("needs auth_url, username, password, project_name, user_domain_name and project_domain_name")))
	})
})
