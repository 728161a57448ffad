package publish_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/vmedia/publish"
)

// clock is a settable time for the web server's expiries.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var _ = Describe("web server publisher", func() {
	var (
		ctx  = context.Background()
		root string
		dir  string
		srv  *httptest.Server
		pub  *publish.WebServer
		clk  *clock
	)

	// serve mounts the publisher the way the boot file server must: in
	// front of a plain file server of the whole HTTP root.
	serve := func() {
		var err error
		srv = httptest.NewUnstartedServer(nil)
		pub, err = publish.NewWebServer(dir, "http://"+srv.Listener.Addr().String()+"/")
		Expect(err).NotTo(HaveOccurred())
		clk = &clock{t: time.Now()}
		publish.SetClock(pub, clk.now)
		srv.Config.Handler = pub.Wrap(http.FileServer(http.Dir(root)))
		srv.Start()
		DeferCleanup(srv.Close)
	}

	BeforeEach(func() {
		root = GinkgoT().TempDir()
		dir = filepath.Join(root, "vmedia")
		Expect(os.WriteFile(filepath.Join(root, "boot.ipxe"), []byte("#!ipxe\n"), 0o644)).To(Succeed())
		serve()
	})

	It("serves the file to GET and HEAD with a signed URL, and keeps it 0600 in a 0700 folder", func() {
		content := randomBytes(1474560)
		Expect(pub.Publish(ctx, "image-a", bytes.NewReader(content), 15*time.Minute)).To(Succeed())
		u, err := pub.URL(ctx, "image-a", 15*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(u).To(HavePrefix(srv.URL + "/vmedia/image-a?expires="))

		code, body, _ := fetch(http.MethodGet, u)
		Expect(code).To(Equal(http.StatusOK))
		Expect(bytes.Equal(body, content)).To(BeTrue())
		code, body, h := fetch(http.MethodHead, u)
		Expect(code).To(Equal(http.StatusOK))
		Expect(body).To(BeEmpty())
		Expect(h.Get("Content-Length")).To(Equal("1474560"))

		st, err := os.Stat(dir)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Mode().Perm()).To(Equal(os.FileMode(0o700)))
		entries, err := os.ReadDir(dir)
		Expect(err).NotTo(HaveOccurred())
		for _, e := range entries {
			info, err := e.Info()
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), e.Name())
		}
		code, _, _ = fetch(http.MethodGet, srv.URL+"/boot.ipxe")
		Expect(code).To(Equal(http.StatusOK), "the rest of the HTTP root is still served")
	})

	It("answers 403 without a valid, unexpired signature", func() {
		Expect(pub.Publish(ctx, "image-a", strings.NewReader("deployment_key=secret"), 15*time.Minute)).To(Succeed())
		u, err := pub.URL(ctx, "image-a", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		for _, bad := range []string{
			tamper(u, "sig"),
			srv.URL + "/vmedia/image-a",
			strings.Replace(u, "expires=", "expires=9", 1),
			strings.Replace(u, "/image-a?", "/image-b?", 1),
		} {
			code, body, _ := fetch(http.MethodGet, bad)
			Expect(code).To(Equal(http.StatusForbidden), bad)
			Expect(string(body)).NotTo(ContainSubstring("secret"))
			code, _, _ = fetch(http.MethodHead, bad)
			Expect(code).To(Equal(http.StatusForbidden), bad)
		}
		clk.advance(61 * time.Second)
		code, _, _ := fetch(http.MethodGet, u)
		Expect(code).To(Equal(http.StatusForbidden), "expired URL")
	})

	It("never lets the plain file server reach the media folder", func() {
		Expect(pub.Publish(ctx, "image-a", strings.NewReader("deployment_key=secret"), 15*time.Minute)).To(Succeed())
		for _, p := range []string{"/vmedia/image-a", "//vmedia/image-a", "/x/../vmedia/image-a", "/./vmedia/image-a",
			"/vmedia/", "/vmedia", "/vmedia/.url-secret", "/%2e/vmedia/image-a"} {
			req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
			Expect(err).NotTo(HaveOccurred())
			req.URL.Opaque = p
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			Expect(resp.StatusCode).To(BeElementOf(http.StatusForbidden, http.StatusNotFound), p)
		}
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/vmedia/image-a", nil)
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed))
	})

	It("deletes idempotently; the URL then answers 404", func() {
		Expect(pub.Publish(ctx, "image-a", strings.NewReader("floppy"), 15*time.Minute)).To(Succeed())
		u, err := pub.URL(ctx, "image-a", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(pub.Delete(ctx, "image-a")).To(Succeed())
		code, _, _ := fetch(http.MethodGet, u)
		Expect(code).To(Equal(http.StatusNotFound))
		Expect(pub.Delete(ctx, "image-a")).To(Succeed())
		Expect(filepath.Join(dir, "image-a")).NotTo(BeAnExistingFile())
	})

	It("stops serving a file when its lifetime passes, and the reaper removes it", func() {
		Expect(pub.Publish(ctx, "image-a", strings.NewReader("floppy"), 2*time.Minute)).To(Succeed())
		Expect(pub.Publish(ctx, "boot-a", strings.NewReader("iso"), 0)).To(Succeed())
		u, err := pub.URL(ctx, "image-a", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		iso, err := pub.URL(ctx, "boot-a", time.Hour)
		Expect(err).NotTo(HaveOccurred())

		n, err := pub.Reap()
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(BeZero())
		clk.advance(3 * time.Minute)
		code, _, _ := fetch(http.MethodGet, u)
		Expect(code).To(Equal(http.StatusNotFound))
		n, err = pub.Reap()
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(1))
		Expect(filepath.Join(dir, "image-a")).NotTo(BeAnExistingFile())
		code, _, _ = fetch(http.MethodGet, iso)
		Expect(code).To(Equal(http.StatusOK), "a file published without a lifetime stays")
	})

	It("reaps periodically until stopped", func() {
		Expect(pub.Publish(ctx, "image-a", strings.NewReader("floppy"), time.Minute)).To(Succeed())
		clk.advance(2 * time.Minute)
		rctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			pub.RunReaper(rctx, 10*time.Millisecond, func(err error) { defer GinkgoRecover(); Fail(err.Error()) })
		}()
		Eventually(filepath.Join).WithArguments(dir, "image-a").ShouldNot(BeAnExistingFile())
		stop()
		Eventually(done).Should(BeClosed())
	})

	It("replaces a published file, and its URLs outlive a conductor restart", func() {
		Expect(pub.Publish(ctx, "image-a", strings.NewReader("first"), 15*time.Minute)).To(Succeed())
		Expect(pub.Publish(ctx, "image-a", strings.NewReader("second"), 15*time.Minute)).To(Succeed())
		u, err := pub.URL(ctx, "image-a", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		old := srv.URL

		srv.Close()
		serve()
		code, body, _ := fetch(http.MethodGet, strings.Replace(u, old, srv.URL, 1))
		Expect(code).To(Equal(http.StatusOK))
		Expect(string(body)).To(Equal("second"))
	})

	It("makes URLs nobody can predict", func() {
		other, err := publish.NewWebServer(filepath.Join(GinkgoT().TempDir(), "vmedia"), srv.URL)
		Expect(err).NotTo(HaveOccurred())
		a, err := pub.URL(ctx, "image-a", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		b, err := other.URL(ctx, "image-a", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(a).NotTo(Equal(b), "another conductor's secret signs differently")
	})

	It("refuses bad names, lifetimes and base URLs", func() {
		Expect(pub.Publish(ctx, "../boot.ipxe", strings.NewReader("x"), time.Minute)).To(MatchError(ContainSubstring("not a valid name")))
		Expect(pub.Publish(ctx, ".url-secret", strings.NewReader("x"), time.Minute)).To(MatchError(ContainSubstring("not a valid name")))
		_, err := pub.URL(ctx, "image-a", 0)
		Expect(err).To(MatchError(ContainSubstring("under a second")))
		_, err = publish.NewWebServer(dir, "127.0.0.1:8080")
		Expect(err).To(MatchError(ContainSubstring("not an http(s) URL")))
	})
})
