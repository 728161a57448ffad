package service_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/ferricbm/ferric/cmd/internal/service"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/tlsfiles"
	"github.com/ferricbm/ferric/pkg/tlsfiles/tlsfilestest"
)

var _ = Describe("API over TLS", func() {
	It("serves the API over HTTPS with [ssl] cert_file and key_file, and follows a renewed certificate", func() {
		dir := GinkgoT().TempDir()
		ca, err := tlsfilestest.NewCA("API CA")
		Expect(err).NotTo(HaveOccurred())
		caFile, certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		Expect(ca.WriteCA(caFile)).To(Succeed())
		Expect(ca.Issue(certFile, keyFile, "api-1", "127.0.0.1")).To(Succeed())

		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		port := l.Addr().(*net.TCPAddr).Port
		Expect(l.Close()).To(Succeed())
		cfg := config.Defaults()
		cfg.Database.Connection = "sqlite://" + filepath.Join(dir, "ferric.db")
		cfg.API.Port = port
		cfg.API.EnableSSLAPI = true
		cfg.SSL.CertFile, cfg.SSL.KeyFile = certFile, keyFile
		Expect(cfg.Validate()).To(Succeed())

		log, hook := test.NewNullLogger()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- service.RunUntil(ctx, service.Single, cfg, log) }()
		DeferCleanup(func() {
			cancel()
			Eventually(done).WithTimeout(time.Minute).Should(Receive(BeNil()))
		})

		tc, err := tlsfiles.Client(caFile, "", "")
		Expect(err).NotTo(HaveOccurred())
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}
		base := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		served := func() (string, error) {
			resp, err := client.Get(base + "/v1")
			if err != nil {
				return "", err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return "", errors.New(resp.Status)
			}
			return resp.TLS.PeerCertificates[0].Subject.CommonName, nil
		}
		Eventually(served).WithTimeout(time.Minute).Should(Equal("api-1"))
		Expect(hook.AllEntries()).To(ContainElement(HaveField("Message", "API listening on "+base)))

		_, err = http.Get(base + "/v1")
		var unknown *tls.CertificateVerificationError
		Expect(errors.As(err, &unknown)).To(BeTrue(), "a client without the CA refuses the API: %v", err)

		Expect(ca.Issue(certFile, keyFile, "api-1-renewed", "127.0.0.1")).To(Succeed())
		Eventually(served).WithTimeout(10 * time.Second).Should(Equal("api-1-renewed"))
	})
})
