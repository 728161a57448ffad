package db

import (
	"fmt"
	"net/url"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/db/dbtest"
	"github.com/ferricbm/ferric/pkg/tlsfiles/tlsfilestest"
)

// execAsRoot runs statements as root on a private server.
func execAsRoot(m *dbtest.MariaDB, stmts ...string) {
	GinkgoHelper()
	db, err := m.Admin()
	Expect(err).NotTo(HaveOccurred())
	defer db.Close()
	for _, s := range stmts {
		_, err := db.Exec(s)
		Expect(err).NotTo(HaveOccurred(), s)
	}
}

// mysqlURL is the connection URL of user to database ferric on a private
// server, with query params.
func mysqlURL(m *dbtest.MariaDB, user string, params url.Values) string {
	params.Set("timeout", "10s")
	return fmt.Sprintf("mysql://%s@127.0.0.1:%d/ferric?%s", user, m.Port, params.Encode())
}

var _ = Describe("MySQL connections over TLS", Ordered, func() {
	var (
		server                                     *dbtest.MariaDB
		caFile, otherCAFile, clientCert, clientKey string
	)

	BeforeAll(func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		pki, err := tlsfilestest.NewPKI(dir, "mariadb", "ferric")
		Expect(err).NotTo(HaveOccurred())
		caFile, clientCert, clientKey, otherCAFile = pki.CAFile, pki.ClientCert, pki.ClientKey, pki.OtherCAFile
		serverCert, serverKey := pki.ServerCert, pki.ServerKey

		// The machine's shared server has no TLS and must not be
		// reconfigured: these specs run their own.
		server, err = dbtest.StartMariaDB(ctx, dir, "--ssl-ca="+caFile, "--ssl-cert="+serverCert, "--ssl-key="+serverKey)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(server.Stop)
		// Accounts that the server lets in only over TLS, and only with a
		// client certificate of its CA.
		execAsRoot(server, "CREATE DATABASE ferric",
			"CREATE USER 'ferric'@'%' REQUIRE SSL", "GRANT ALL ON ferric.* TO 'ferric'@'%'",
			"CREATE USER 'ferricx509'@'%' REQUIRE X509", "GRANT ALL ON ferric.* TO 'ferricx509'@'%'")
	})

	// cipher is the TLS cipher of a connection of the store, empty for a
	// plain one, as the server reports it.
	cipher := func(s *Store) string {
		GinkgoHelper()
		var name, value string
		Expect(s.db.Raw("SHOW SESSION STATUS LIKE 'Ssl_cipher'").Row().Scan(&name, &value)).To(Succeed())
		return value
	}

	It("verifies the server against ssl_ca and keeps every connection encrypted", func(ctx SpecContext) {
		s, err := Open(ctx, mysqlURL(server, "ferric", url.Values{"ssl_ca": {caFile}}))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Close)
		Expect(s.Upgrade(ctx)).To(Succeed())
		Expect(s.SchemaVersion(ctx)).To(Equal(LatestSchemaVersion()))
		Expect(cipher(s)).NotTo(BeEmpty())
	})

	It("is refused by the server, which requires TLS, without ssl_ca", func(ctx SpecContext) {
		_, err := Open(ctx, mysqlURL(server, "ferric", url.Values{}))
		Expect(err).To(MatchError(ContainSubstring("Access denied for user 'ferric'")))
	})

	It("refuses a server whose certificate its CA did not sign, saying so", func(ctx SpecContext) {
		_, err := Open(ctx, mysqlURL(server, "ferric", url.Values{"ssl_ca": {otherCAFile}}))
		Expect(err).To(MatchError(ContainSubstring("certificate signed by unknown authority")))
	})

	It("presents ssl_cert and ssl_key to a server that requires a client certificate", func(ctx SpecContext) {
		_, err := Open(ctx, mysqlURL(server, "ferricx509", url.Values{"ssl_ca": {caFile}}))
		Expect(err).To(MatchError(ContainSubstring("Access denied for user 'ferricx509'")))

		s, err := Open(ctx, mysqlURL(server, "ferricx509", url.Values{"ssl_ca": {caFile}, "ssl_cert": {clientCert}, "ssl_key": {clientKey}}))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Close)
		Expect(cipher(s)).NotTo(BeEmpty())
	})

	It("rejects half a client key pair before connecting", func(ctx SpecContext) {
		_, err := Open(ctx, mysqlURL(server, "ferric", url.Values{"ssl_ca": {caFile}, "ssl_cert": {clientCert}}))
		Expect(err).To(MatchError(ContainSubstring("needs both its certificate file and its key file")))
	})
})
