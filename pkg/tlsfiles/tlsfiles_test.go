package tlsfiles_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/ferricbm/ferric/pkg/tlsfiles"
	"github.com/ferricbm/ferric/pkg/tlsfiles/tlsfilestest"
)

// serve runs a TLS listener with cfg on a free local port that completes
// each handshake and closes the connection; it returns the address.
func serve(cfg *tls.Config) string {
	GinkgoHelper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(ln.Close)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_ = conn.(*tls.Conn).Handshake()
			}()
		}
	}()
	return ln.Addr().String()
}

// servedName is the subject of the certificate addr presents to a client
// trusting caFile.
func servedName(addr, caFile string) (string, error) {
	cfg, err := tlsfiles.Client(caFile, "", "")
	if err != nil {
		return "", err
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

// replace writes data to path through a new file renamed over it, as a
// certificate manager does.
func replace(path string, data []byte) {
	GinkgoHelper()
	tmp := path + ".new"
	Expect(os.WriteFile(tmp, data, 0o600)).To(Succeed())
	Expect(os.Rename(tmp, path)).To(Succeed())
}

var _ = Describe("ServerCert", func() {
	var (
		dir, caFile, certFile, keyFile string
		ca                             *tlsfilestest.CA
		log                            *logrus.Logger
		hook                           *test.Hook
	)

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		var err error
		ca, err = tlsfilestest.NewCA("Ferric test CA")
		Expect(err).NotTo(HaveOccurred())
		caFile = filepath.Join(dir, "ca.pem")
		certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		Expect(ca.WriteCA(caFile)).To(Succeed())
		Expect(ca.Issue(certFile, keyFile, "first", "127.0.0.1")).To(Succeed())
		log, hook = test.NewNullLogger()
	})

	It("serves the pair of its files to a client trusting their CA", func() {
		sc, err := tlsfiles.NewServerCert(certFile, keyFile, log)
		Expect(err).NotTo(HaveOccurred())
		Expect(servedName(serve(sc.Config()), caFile)).To(Equal("first"))
	})

	It("serves a new pair once the files are rewritten, without a restart", func() {
		sc, err := tlsfiles.NewServerCert(certFile, keyFile, log)
		Expect(err).NotTo(HaveOccurred())
		addr := serve(sc.Config())
		Expect(servedName(addr, caFile)).To(Equal("first"))

		Expect(ca.Issue(certFile, keyFile, "second", "127.0.0.1")).To(Succeed())
		Eventually(func() (string, error) { return servedName(addr, caFile) }).
			WithTimeout(10 * time.Second).Should(Equal("second"))
		Expect(hook.AllEntries()).To(ContainElement(HaveField("Message", "TLS certificate reloaded")))
	})

	It("follows files replaced by renaming, as mounted Secrets are", func() {
		sc, err := tlsfiles.NewServerCert(certFile, keyFile, log)
		Expect(err).NotTo(HaveOccurred())
		addr := serve(sc.Config())
		certPEM, keyPEM, err := ca.IssuePEM("renamed", "127.0.0.1")
		Expect(err).NotTo(HaveOccurred())
		replace(keyFile, keyPEM)
		replace(certFile, certPEM)
		Eventually(func() (string, error) { return servedName(addr, caFile) }).
			WithTimeout(10 * time.Second).Should(Equal("renamed"))
	})

	It("keeps serving the previous pair when the new files are not a pair, and logs it", func() {
		sc, err := tlsfiles.NewServerCert(certFile, keyFile, log)
		Expect(err).NotTo(HaveOccurred())
		addr := serve(sc.Config())
		// A certificate whose key is another's: a rotation gone wrong.
		otherCert, _, err := ca.IssuePEM("mismatched", "127.0.0.1")
		Expect(err).NotTo(HaveOccurred())
		replace(certFile, otherCert)

		Expect(servedName(addr, caFile)).To(Equal("first"))
		Expect(hook.AllEntries()).To(ContainElement(And(
			HaveField("Level", logrus.ErrorLevel),
			HaveField("Message", ContainSubstring("still serving the previous certificate")))))
		errorsLogged := len(hook.AllEntries())
		Expect(servedName(addr, caFile)).To(Equal("first"))
		Expect(hook.AllEntries()).To(HaveLen(errorsLogged), "the same bad pair is reported once")

		By("a later good pair is taken")
		Expect(ca.Issue(certFile, keyFile, "repaired", "127.0.0.1")).To(Succeed())
		Eventually(func() (string, error) { return servedName(addr, caFile) }).
			WithTimeout(10 * time.Second).Should(Equal("repaired"))
	})

	It("keeps serving the previous pair while the files are missing", func() {
		sc, err := tlsfiles.NewServerCert(certFile, keyFile, log)
		Expect(err).NotTo(HaveOccurred())
		addr := serve(sc.Config())
		Expect(os.Remove(keyFile)).To(Succeed())
		Expect(servedName(addr, caFile)).To(Equal("first"))
		Expect(hook.LastEntry().Message).To(ContainSubstring("unreadable"))
	})

	It("refuses to start without a valid pair", func() {
		_, err := tlsfiles.NewServerCert(certFile, "", log)
		Expect(err).To(MatchError(ContainSubstring("both required")))
		_, err = tlsfiles.NewServerCert(certFile, filepath.Join(dir, "missing.key"), log)
		Expect(err).To(MatchError(ContainSubstring("key file")))
		Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue())
		otherCert := filepath.Join(dir, "other.crt")
		Expect(ca.Issue(otherCert, filepath.Join(dir, "other.key"), "other")).To(Succeed())
		_, err = tlsfiles.NewServerCert(otherCert, keyFile, log)
		Expect(err).To(MatchError(ContainSubstring("private key does not match public key")))
	})
})

var _ = Describe("Client", func() {
	var dir, certFile, keyFile string
	var ca *tlsfilestest.CA

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		var err error
		ca, err = tlsfilestest.NewCA("Ferric test CA")
		Expect(err).NotTo(HaveOccurred())
		certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		Expect(ca.Issue(certFile, keyFile, "server", "127.0.0.1")).To(Succeed())
	})

	It("refuses a server whose certificate an unknown CA signed", func() {
		sc, err := tlsfiles.NewServerCert(certFile, keyFile, logrus.New())
		Expect(err).NotTo(HaveOccurred())
		addr := serve(sc.Config())
		other, err := tlsfilestest.NewCA("Another CA")
		Expect(err).NotTo(HaveOccurred())
		otherFile := filepath.Join(dir, "other-ca.pem")
		Expect(other.WriteCA(otherFile)).To(Succeed())

		_, err = servedName(addr, otherFile)
		var unknown x509.UnknownAuthorityError
		Expect(errors.As(err, &unknown)).To(BeTrue(), "got %v", err)
		Expect(err).To(MatchError(ContainSubstring("certificate signed by unknown authority")))
	})

	It("presents its own pair when given one", func() {
		caFile := filepath.Join(dir, "ca.pem")
		Expect(ca.WriteCA(caFile)).To(Succeed())
		cfg, err := tlsfiles.Client(caFile, certFile, keyFile)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Certificates).To(HaveLen(1))
		Expect(cfg.RootCAs).NotTo(BeNil())
	})

	It("rejects half a client pair and a CA file without certificates", func() {
		_, err := tlsfiles.Client("", certFile, "")
		Expect(err).To(MatchError(ContainSubstring("needs both")))
		_, err = tlsfiles.Client(keyFile, "", "")
		Expect(err).To(MatchError(ContainSubstring("holds no PEM certificate")))
		_, err = tlsfiles.Client(filepath.Join(dir, "none.pem"), "", "")
		Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue())
	})
})
