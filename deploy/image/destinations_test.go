package image_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/image"
)

// loopback is what tests serving images from 127.0.0.1 allow, as the lab
// and the e2e harness configure it.
var loopback = image.Destinations{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

var _ = Describe("download destinations", func() {
	DescribeTable("refuses what a node's owner must not reach through the conductor, unless allowed",
		func(addr string, refused bool) {
			err := image.Destinations{}.Check(netip.MustParseAddr(addr))
			if refused {
				Expect(errors.Is(err, image.ErrDestinationRefused)).To(BeTrue(), "%v", err)
				a := netip.MustParseAddr(addr).Unmap()
				allowed := image.Destinations{Allowed: []netip.Prefix{netip.PrefixFrom(a, a.BitLen())}}
				Expect(allowed.Check(netip.MustParseAddr(addr))).To(Succeed(), "the operator's allow-list wins")
			} else {
				Expect(err).NotTo(HaveOccurred())
			}
		},
		Entry("the metadata service", "169.254.169.254", true),
		Entry("loopback", "127.0.0.1", true),
		Entry("IPv6 loopback", "::1", true),
		Entry("loopback mapped into IPv6", "::ffff:127.0.0.1", true),
		Entry("unspecified", "0.0.0.0", true),
		Entry("IPv6 link-local", "fe80::1", true),
		Entry("multicast", "224.0.0.1", true),
		Entry("private", "10.1.2.3", true),
		Entry("IPv6 unique local", "fd00::1", true),
		Entry("public", "198.51.100.7", false),
		Entry("public IPv6", "2001:db8::1", false),
	)

	get := func(c *http.Client, url string) error {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		Expect(err).NotTo(HaveOccurred())
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}

	It("checks the address dialed, after name resolution and on every redirect", func() {
		target := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("meta")) }))
		l, err := net.Listen("tcp", "127.0.0.2:0")
		Expect(err).NotTo(HaveOccurred())
		target.Listener = l
		target.Start()
		DeferCleanup(target.Close)
		redirect := httptest.NewServer(http.RedirectHandler(target.URL+"/latest/meta-data", http.StatusFound))
		DeferCleanup(redirect.Close)

		err = get(image.Destinations{}.Client(0), "http://localhost:"+strconv.Itoa(l.Addr().(*net.TCPAddr).Port)+"/")
		Expect(errors.Is(err, image.ErrDestinationRefused)).To(BeTrue(), "a name resolving to loopback: %v", err)

		only1 := image.Destinations{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
		err = get(only1.Client(0), redirect.URL)
		Expect(errors.Is(err, image.ErrDestinationRefused)).To(BeTrue(), "a redirect to a refused address: %v", err)
		Expect(err.Error()).To(ContainSubstring("127.0.0.2 is a loopback address"))

		Expect(get(loopback.Client(0), redirect.URL)).To(Succeed())
	})

	It("keeps a cache without an allow-list from downloading from loopback", func(ctx SpecContext) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("disk")) }))
		DeferCleanup(srv.Close)
		c, err := image.NewCache(image.CacheOptions{Dir: GinkgoT().TempDir()})
		Expect(err).NotTo(HaveOccurred())
		_, err = c.Acquire(ctx, "node", image.Source{URL: srv.URL + "/disk.img"})
		Expect(errors.Is(err, image.ErrDestinationRefused)).To(BeTrue(), "%v", err)
	})
})
