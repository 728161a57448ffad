package image_test

import (
	"context"
	"encoding/hex"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/deploy/image/glancetest"
	"github.com/ferricbm/ferric/deploy/image/keystonetest"
)

var _ = Describe("Glance behind Keystone (auth_type password)", func() {
	const imageID = "3e7a9c1b-5d2f-4e8a-9b6c-1f3d5a7e9c02"
	var (
		ctx      context.Context
		password string
		keystone *keystonetest.Server
		cache    *image.Cache
	)

	// glanceServer starts a Glance that holds the image with data of its
	// own and takes only the stand-in Keystone's tokens.
	glanceServer := func() (*glancetest.Server, []byte) {
		srv := glancetest.NewServer()
		DeferCleanup(srv.Close)
		srv.RequireTokens(keystone)
		data := randomBytes(64 << 10)
		srv.Add(glancetest.Image{ID: imageID, DiskFormat: "raw", Data: data})
		return srv, data
	}
	// catalogGlance starts a Glance that the catalog lists as RegionOne's
	// public image endpoint.
	catalogGlance := func() (*glancetest.Server, []byte) {
		srv, data := glanceServer()
		keystone.AddImageEndpoint(keystonetest.Endpoint{Region: "RegionOne", Interface: "public", URL: srv.URL})
		return srv, data
	}
	options := func() image.GlanceOptions {
		return image.GlanceOptions{AuthType: image.GlanceAuthPassword, AuthURL: keystone.URL + "/v3",
			Username: "ferric", Password: password, UserDomainName: "Default",
			ProjectName: "service", ProjectDomainName: "Default"}
	}
	newGlance := func(opts image.GlanceOptions) *image.Glance {
		GinkgoHelper()
		g, err := image.NewGlance(opts)
		Expect(err).NotTo(HaveOccurred())
		return g
	}
	// fetch looks the image up and downloads it for a node, as a deploy
	// does, returning the bytes the cache holds.
	fetch := func(g *image.Glance, node string) ([]byte, error) {
		img, err := g.Image(ctx, imageID)
		if err != nil {
			return nil, err
		}
		e, err := cache.Acquire(ctx, node, g.Source(img))
		if err != nil {
			return nil, err
		}
		return os.ReadFile(e.Path)
	}

	BeforeEach(func() {
		ctx = context.Background()
		password = "pw-" + hex.EncodeToString(randomBytes(12))
		keystone = keystonetest.NewServer(keystonetest.User{Name: "ferric", Domain: "Default", Password: password,
			Project: "service", ProjectDomain: "Default"})
		DeferCleanup(keystone.Close)
		var err error
		cache, err = image.NewCache(image.CacheOptions{Dir: GinkgoT().TempDir()})
		Expect(err).NotTo(HaveOccurred())
	})

	It("finds and downloads an image through the catalog's image endpoint with one token", func() {
		glance, data := catalogGlance()

		got, err := fetch(newGlance(options()), "n1")
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(data))
		Expect(glance.Downloads(imageID)).To(BeEquivalentTo(1))
		Expect(keystone.Issued()).To(Equal(1))
		Expect(glance.Refused()).To(BeZero())
	})

	It("finds Keystone v3 from an unversioned auth_url, and a catalog endpoint that names v2", func() {
		glance, data := glanceServer()
		keystone.AddImageEndpoint(keystonetest.Endpoint{Region: "RegionOne", Interface: "public", URL: glance.URL + "/v2"})
		opts := options()
		opts.AuthURL = keystone.URL

		got, err := fetch(newGlance(opts), "n1")
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(data))
	})

	It("prefers the catalog's internal endpoint to the public one, as Ironic does", func() {
		public, _ := glanceServer()
		internal, internalData := glanceServer()
		keystone.AddImageEndpoint(keystonetest.Endpoint{Region: "RegionOne", Interface: "public", URL: public.URL})
		keystone.AddImageEndpoint(keystonetest.Endpoint{Region: "RegionOne", Interface: "internal", URL: internal.URL})

		got, err := fetch(newGlance(options()), "n1")
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(internalData))
		Expect(public.Downloads(imageID)).To(BeZero())
	})

	It("takes region_name's endpoint when the catalog has two regions", func() {
		one, oneData := glanceServer()
		two, twoData := glanceServer()
		for _, e := range []keystonetest.Endpoint{
			{Region: "RegionOne", Interface: "public", URL: one.URL}, {Region: "RegionOne", Interface: "internal", URL: one.URL},
			{Region: "RegionTwo", Interface: "public", URL: two.URL}, {Region: "RegionTwo", Interface: "internal", URL: two.URL},
		} {
			keystone.AddImageEndpoint(e)
		}
		for region, want := range map[string][]byte{"RegionTwo": twoData, "RegionOne": oneData} {
			opts := options()
			opts.Region = region
			got, err := fetch(newGlance(opts), "node-in-"+region)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(want), region)
		}
		Expect(one.Downloads(imageID)).To(BeEquivalentTo(1))
		Expect(two.Downloads(imageID)).To(BeEquivalentTo(1))

		opts := options()
		opts.Region = "RegionThree"
		_, err := fetch(newGlance(opts), "n1")
		Expect(err).To(MatchError(ContainSubstring(`no internal or public image endpoint in region "RegionThree"`)))
	})

	It("sends the token to endpoint_override rather than the catalog's endpoint", func() {
		catalog, _ := glanceServer()
		override, overrideData := glanceServer()
		keystone.AddImageEndpoint(keystonetest.Endpoint{Region: "RegionOne", Interface: "internal", URL: catalog.URL})
		opts := options()
		opts.Endpoint = override.URL

		got, err := fetch(newGlance(opts), "n1")
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(overrideData))
		Expect(catalog.Downloads(imageID)).To(BeZero())
		Expect(override.Refused()).To(BeZero())
	})

	It("fails on a wrong password with Keystone's refusal, without the password", func() {
		catalogGlance()
		opts := options()
		opts.Password = "wrong-" + password

		_, err := newGlance(opts).Image(ctx, imageID)
		Expect(err).To(MatchError(ContainSubstring("authenticate to keystone " + keystone.URL + "/v3 as ferric")))
		Expect(err).To(MatchError(ContainSubstring("401")))
		Expect(err).To(MatchError(ContainSubstring("requires authentication")))
		Expect(err.Error()).NotTo(ContainSubstring(password))
		Expect(keystone.Issued()).To(BeZero())
	})

	It("renews a token revoked between two calls without the caller noticing", func() {
		glance, data := catalogGlance()
		g := newGlance(options())
		img, err := g.Image(ctx, imageID)
		Expect(err).NotTo(HaveOccurred())

		keystone.RevokeAll()
		e, err := cache.Acquire(ctx, "n1", g.Source(img))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.ReadFile(e.Path)).To(Equal(data))
		Expect(glance.Refused()).To(Equal(1), "the revoked token was refused once")
		Expect(keystone.Issued()).To(Equal(2))
	})

	It("renews an expired token: a conductor outlives many tokens", func() {
		catalogGlance()
		const lifetime = 500 * time.Millisecond
		keystone.SetTokenLifetime(lifetime)
		g := newGlance(options())
		for i := range 3 {
			_, err := g.Image(ctx, imageID)
			Expect(err).NotTo(HaveOccurred(), "call %d", i)
			time.Sleep(lifetime + 50*time.Millisecond)
		}
		Expect(keystone.Issued()).To(Equal(3))
	})

	It("reports a failed renewal clearly, without the password", func() {
		catalogGlance()
		g := newGlance(options())
		img, err := g.Image(ctx, imageID)
		Expect(err).NotTo(HaveOccurred())

		keystone.SetPassword("rotated-" + password)
		keystone.RevokeAll()
		_, err = cache.Acquire(ctx, "n1", g.Source(img))
		Expect(err).To(MatchError(ContainSubstring("glance: download image " + imageID)))
		Expect(err).To(MatchError(ContainSubstring("requires authentication")))
		Expect(err.Error()).NotTo(ContainSubstring(password))
	})

	It("needs the user's and the project's domains", func() {
		for _, clear := range []func(*image.GlanceOptions){
			func(o *image.GlanceOptions) { o.UserDomainName = "" },
			func(o *image.GlanceOptions) { o.ProjectDomainName = "" },
			func(o *image.GlanceOptions) { o.Password = "" },
		} {
			opts := options()
			clear(&opts)
			_, err := image.NewGlance(opts)
			Expect(err).To(MatchError(ContainSubstring("user_domain_name and project_domain_name")))
		}
	})
})
