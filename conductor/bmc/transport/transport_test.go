package transport_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/bmc/transport"
)

var _ = Describe("BMC HTTPS transport", func() {
	var srv *httptest.Server
	var hits atomic.Int32

	BeforeEach(func() {
		hits.Store(0)
		srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			switch r.URL.Path {
			case "/moved":
				http.Redirect(w, r, "https://elsewhere.example/login", http.StatusFound)
			case "/slow":
				select {
				case <-time.After(2 * time.Second):
				case <-r.Context().Done():
					// A client that gave up gets no answer: a plain return
					// would send 200, which can race the client's deadline
					// and arrive as if the BMC had answered in time.
					panic(http.ErrAbortHandler)
				}
			default:
				_, _ = w.Write([]byte("ok"))
			}
		}))
		DeferCleanup(srv.Close)
	})

	get := func(ctx context.Context, c *http.Client, path string, timeout time.Duration) (*transport.Response, error) {
		req, err := transport.NewRequest(ctx, http.MethodGet, srv.URL+path, nil)
		Expect(err).NotTo(HaveOccurred())
		req.SetBasicAuth("admin", "hunter2")
		return transport.Do(ctx, c, req, timeout, "read")
	}

	It("refuses a CA file without a certificate", func() {
		p := filepath.Join(GinkgoT().TempDir(), "ca.pem")
		Expect(os.WriteFile(p, []byte("not a certificate"), 0o600)).To(Succeed())
		_, err := transport.NewHTTPClient(transport.TLS{CAFile: p})
		Expect(err).To(MatchError(ContainSubstring("holds no PEM certificate")))
	})

	It("verifies the server against the system roots by default", func() {
		c, err := transport.NewHTTPClient(transport.TLS{})
		Expect(err).NotTo(HaveOccurred())
		_, err = get(context.Background(), c, "/", time.Second)
		Expect(err).To(MatchError(ContainSubstring("certificate")))
		Expect(hits.Load()).To(BeZero())
	})

	Context("with verification off", func() {
		var c *http.Client
		BeforeEach(func() {
			var err error
			c, err = transport.NewHTTPClient(transport.TLS{Insecure: true})
			Expect(err).NotTo(HaveOccurred())
		})

		It("reads the whole answer", func() {
			resp, err := get(context.Background(), c, "/", time.Second)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Status).To(Equal(http.StatusOK))
			Expect(string(resp.Body)).To(Equal("ok"))
		})

		It("does not follow a redirect, which would carry the credentials elsewhere", func() {
			resp, err := get(context.Background(), c, "/moved", time.Second)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Status).To(Equal(http.StatusFound))
			Expect(hits.Load()).To(Equal(int32(1)))
		})

		It("reports a cancelled call as cancelled, not as a timeout", func() {
			ctx, cancel := context.WithCancel(context.Background())
			go func() { time.Sleep(50 * time.Millisecond); cancel() }()
			_, err := get(ctx, c, "/slow", 5*time.Second)
			Expect(errors.Is(err, context.Canceled)).To(BeTrue())
			Expect(errors.Is(err, transport.ErrTimeout)).To(BeFalse())
		})

		It("tells a per-request timeout from the caller's deadline", func() {
			_, err := get(context.Background(), c, "/slow", 50*time.Millisecond)
			Expect(err).To(MatchError(transport.ErrTimeout))
			Expect(err).To(MatchError("read: BMC request timed out: no answer within 50ms"))

			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_, err = get(ctx, c, "/slow", 5*time.Second)
			Expect(err).To(MatchError(transport.ErrTimeout))
			Expect(err).To(MatchError("read: BMC request timed out: the operation's deadline passed"))
			Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
		})
	})
})
