package pxe_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver/pxe"
	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/pkg/tlsfiles"
	"github.com/ferricbm/ferric/pkg/tlsfiles/tlsfilestest"
)

var _ = Describe("boot file server over TLS", func() {
	var (
		ca                                        *tlsfilestest.CA
		httpRoot, certFile, keyFile, caFile, base string
	)

	BeforeEach(func() {
		dir := GinkgoT().TempDir()
		var err error
		ca, err = tlsfilestest.NewCA("boot server CA")
		Expect(err).NotTo(HaveOccurred())
		certFile, keyFile, caFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.pem")
		Expect(ca.Issue(certFile, keyFile, "conductor-0", "127.0.0.1")).To(Succeed())
		Expect(ca.WriteCA(caFile)).To(Succeed())
		httpRoot = filepath.Join(dir, "http")
		Expect(os.MkdirAll(httpRoot, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(httpRoot, "hello"), []byte("hi"), 0o644)).To(Succeed())
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		base = "https://" + l.Addr().String() + "/boot"
		l.Close()
	})

	// client trusts the boot server's CA, as a BMC given it does.
	client := func() *http.Client {
		cfg, err := tlsfiles.Client(caFile, "", "")
		Expect(err).NotTo(HaveOccurred())
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
	}

	It("serves files and signed https media URLs with its key pair, and follows a renewed certificate", func(ctx SpecContext) {
		media, err := publish.NewWebServer(filepath.Join(httpRoot, "vmedia"), base)
		Expect(err).NotTo(HaveOccurred())
		srv := pxe.New(pxe.Options{TFTPRoot: GinkgoT().TempDir(), HTTPRoot: httpRoot, HTTPURL: base, Media: media,
			CertFile: certFile, KeyFile: keyFile})
		Expect(srv.StartService(ctx)).To(Succeed())
		DeferCleanup(srv.StopService)

		resp, err := client().Get(base + "/hello")
		Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(string(body)).To(Equal("hi"))
		Expect(resp.TLS.PeerCertificates[0].Subject.CommonName).To(Equal("conductor-0"))

		Expect(media.Publish(ctx, "image-a", strings.NewReader("floppy"), 0)).To(Succeed())
		u, err := media.URL(ctx, "image-a", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(u).To(HavePrefix(base + "/vmedia/image-a?"))
		resp, err = client().Get(u)
		Expect(err).NotTo(HaveOccurred())
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(string(body)).To(Equal("floppy"))

		resp, err = http.Get(strings.Replace(base, "https://", "http://", 1) + "/hello")
		Expect(err).NotTo(HaveOccurred())
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusBadRequest), "plain HTTP is not served")
		Expect(string(body)).NotTo(ContainSubstring("hi"))

		Expect(ca.Issue(certFile, keyFile, "conductor-0-renewed", "127.0.0.1")).To(Succeed())
		Eventually(func() (string, error) {
			resp, err := client().Get(base + "/hello")
			if err != nil {
				return "", err
			}
			resp.Body.Close()
			return resp.TLS.PeerCertificates[0].Subject.CommonName, nil
		}).WithTimeout(10 * time.Second).Should(Equal("conductor-0-renewed"))
	})

	It("is refused by a client that does not trust its CA", func(ctx SpecContext) {
		srv := pxe.New(pxe.Options{TFTPRoot: GinkgoT().TempDir(), HTTPRoot: httpRoot, HTTPURL: base, CertFile: certFile, KeyFile: keyFile})
		Expect(srv.StartService(ctx)).To(Succeed())
		DeferCleanup(srv.StopService)
		_, err := http.Get(base + "/hello")
		var unknown *tls.CertificateVerificationError
		Expect(errors.As(err, &unknown)).To(BeTrue(), "got %v", err)
	})

	It("does not start without a usable key pair", func(ctx SpecContext) {
		srv := pxe.New(pxe.Options{TFTPRoot: GinkgoT().TempDir(), HTTPRoot: httpRoot, HTTPURL: base, CertFile: certFile})
		Expect(srv.StartService(ctx)).To(MatchError(ContainSubstring("[deploy] http_cert_file, http_key_file")))
		srv = pxe.New(pxe.Options{TFTPRoot: GinkgoT().TempDir(), HTTPRoot: httpRoot, HTTPURL: base, CertFile: certFile, KeyFile: caFile})
		Expect(srv.StartService(ctx)).To(MatchError(ContainSubstring("tls:")))
	})
})
