package config_test

import (
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/tlsfiles/tlsfilestest"
)

var _ = Describe("Validate TLS options", func() {
	var certFile, keyFile, otherKey, caFile string

	BeforeEach(func() {
		dir := GinkgoT().TempDir()
		ca, err := tlsfilestest.NewCA("test CA")
		Expect(err).NotTo(HaveOccurred())
		certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		Expect(ca.Issue(certFile, keyFile, "ferric", "127.0.0.1")).To(Succeed())
		otherKey = filepath.Join(dir, "other.key")
		Expect(ca.Issue(filepath.Join(dir, "other.crt"), otherKey, "other")).To(Succeed())
		caFile = filepath.Join(dir, "ca.pem")
		Expect(ca.WriteCA(caFile)).To(Succeed())
	})

	It("accepts TLS for the API, the boot file server and the broker with valid files", func() {
		c := config.Defaults()
		c.API.EnableSSLAPI = true
		c.SSL.CertFile, c.SSL.KeyFile = certFile, keyFile
		c.Deploy.HTTPURL = "https://127.0.0.1:8443/boot"
		c.Deploy.HTTPCertFile, c.Deploy.HTTPKeyFile = certFile, keyFile
		c.RPC.Transport = "amqp"
		c.OsloMessagingRabbit.SSL = true
		c.OsloMessagingRabbit.SSLCAFile = caFile
		c.OsloMessagingRabbit.SSLCertFile, c.OsloMessagingRabbit.SSLKeyFile = certFile, keyFile
		Expect(c.Validate()).To(Succeed())
		Expect(c.AMQPTLS()).To(BeTrue())
	})

	It("takes an amqps:// URL as TLS without the ssl option", func() {
		c := config.Defaults()
		c.RPC.Transport = "amqp"
		c.RPC.AMQPURL = "amqps://guest:guest@rabbit:5671/"
		c.OsloMessagingRabbit.SSLCAFile = caFile
		Expect(c.Validate()).To(Succeed())
		Expect(c.AMQPTLS()).To(BeTrue())
	})

	DescribeTable("reports files that cannot serve, by option",
		func(mutate func(*config.Config), want string) {
			c := config.Defaults()
			mutate(&c)
			Expect(c.Validate()).To(MatchError(ContainSubstring(want)))
		},
		Entry("API TLS without files", func(c *config.Config) { c.API.EnableSSLAPI = true },
			"[ssl] cert_file: cert_file and key_file are required when [api] enable_ssl_api is true"),
		Entry("certificate without key", func(c *config.Config) { c.SSL.CertFile = certFile },
			"[ssl] key_file: required when cert_file is set"),
		Entry("key of another certificate", func(c *config.Config) { c.SSL.CertFile, c.SSL.KeyFile = certFile, otherKey },
			"[ssl] cert_file: not a usable certificate and key"),
		Entry("unreadable certificate", func(c *config.Config) { c.SSL.CertFile, c.SSL.KeyFile = "/nonexistent/tls.crt", keyFile },
			"/nonexistent/tls.crt: no such file or directory"),
		Entry("https boot server without files", func(c *config.Config) { c.Deploy.HTTPURL = "https://10.0.0.1:8443" },
			"[deploy] http_cert_file: http_cert_file and http_key_file are required when http_url is https://"),
		Entry("boot server files for an http URL", func(c *config.Config) {
			c.Deploy.HTTPURL = "http://10.0.0.1:8080"
			c.Deploy.HTTPCertFile, c.Deploy.HTTPKeyFile = certFile, keyFile
		}, `[deploy] http_cert_file: http_cert_file and http_key_file are used only when http_url is https://, and it is "http://10.0.0.1:8080"`),
		Entry("boot server key of another certificate", func(c *config.Config) {
			c.Deploy.HTTPURL = "https://10.0.0.1:8443"
			c.Deploy.HTTPCertFile, c.Deploy.HTTPKeyFile = certFile, otherKey
		}, "[deploy] http_cert_file: not a usable certificate and key"),
		Entry("broker CA file without certificates", func(c *config.Config) {
			c.RPC.Transport = "amqp"
			c.OsloMessagingRabbit.SSL = true
			c.OsloMessagingRabbit.SSLCAFile = keyFile
		}, "[oslo_messaging_rabbit] ssl_ca_file: "),
		Entry("broker TLS files for a plain connection", func(c *config.Config) {
			c.RPC.Transport = "amqp"
			c.OsloMessagingRabbit.SSLCAFile = caFile
		}, "[oslo_messaging_rabbit] ssl: ssl_ca_file, ssl_cert_file and ssl_key_file need a TLS connection"),
		Entry("broker client key without its certificate", func(c *config.Config) {
			c.OsloMessagingRabbit.SSLKeyFile = keyFile
		}, "[oslo_messaging_rabbit] ssl_cert_file: required when ssl_key_file is set"),
	)
})
