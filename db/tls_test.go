package db

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/tlsfiles/tlsfilestest"
)

// privateMariaDB is a MariaDB server of this test's own, with TLS: the
// machine's shared server has none and must not be reconfigured. It runs
// from a temporary data directory on a free loopback port and is stopped
// by its PID.
type privateMariaDB struct {
	dir, socket string
	port        int
	cmd         *exec.Cmd
}

func startPrivateMariaDB(ctx context.Context, dir, caFile, certFile, keyFile string) *privateMariaDB {
	GinkgoHelper()
	for _, bin := range []string{"mariadb-install-db", "mariadbd"} {
		_, err := exec.LookPath(bin)
		Expect(err).NotTo(HaveOccurred(), "the TLS specs run their own MariaDB server (package mariadb-server)")
	}
	data := filepath.Join(dir, "data")
	install := exec.CommandContext(ctx, "mariadb-install-db", "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db")
	out, err := install.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "mariadb-install-db: %s", out)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	m := &privateMariaDB{dir: dir, socket: filepath.Join(dir, "mysqld.sock"), port: l.Addr().(*net.TCPAddr).Port}
	Expect(l.Close()).To(Succeed())
	logFile := filepath.Join(dir, "error.log")
	m.cmd = exec.Command("mariadbd", "--no-defaults", "--user=root", "--datadir="+data,
		"--socket="+m.socket, "--port="+strconv.Itoa(m.port), "--bind-address=127.0.0.1",
		"--pid-file="+filepath.Join(dir, "mysqld.pid"), "--log-error="+logFile,
		"--skip-name-resolve", "--skip-log-bin", "--innodb-buffer-pool-size=16M",
		"--ssl-ca="+caFile, "--ssl-cert="+certFile, "--ssl-key="+keyFile)
	Expect(m.cmd.Start()).To(Succeed())
	DeferCleanup(m.stop)
	Eventually(func() error {
		db, err := m.admin()
		if err != nil {
			return err
		}
		defer db.Close()
		return db.Ping()
	}).WithTimeout(60*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), func() string {
		b, _ := os.ReadFile(logFile)
		return string(b)
	})
	return m
}

// admin connects as root over the server's Unix socket.
func (m *privateMariaDB) admin() (*sql.DB, error) {
	cfg := mysqldriver.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "unix", m.socket
	c, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

func (m *privateMariaDB) exec(stmts ...string) {
	GinkgoHelper()
	db, err := m.admin()
	Expect(err).NotTo(HaveOccurred())
	defer db.Close()
	for _, s := range stmts {
		_, err := db.Exec(s)
		Expect(err).NotTo(HaveOccurred(), s)
	}
}

func (m *privateMariaDB) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = m.cmd.Process.Kill()
		<-done
	}
}

// url is the connection URL of user to database ferric with query params.
func (m *privateMariaDB) url(user string, params url.Values) string {
	params.Set("timeout", "10s")
	return fmt.Sprintf("mysql://%s@127.0.0.1:%d/ferric?%s", user, m.port, params.Encode())
}

var _ = Describe("MySQL connections over TLS", Ordered, func() {
	var (
		server                                     *privateMariaDB
		caFile, otherCAFile, clientCert, clientKey string
	)

	BeforeAll(func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		ca, err := tlsfilestest.NewCA("database CA")
		Expect(err).NotTo(HaveOccurred())
		caFile = filepath.Join(dir, "ca.pem")
		Expect(ca.WriteCA(caFile)).To(Succeed())
		serverCert, serverKey := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
		Expect(ca.Issue(serverCert, serverKey, "mariadb", "127.0.0.1")).To(Succeed())
		clientCert, clientKey = filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
		Expect(ca.Issue(clientCert, clientKey, "ferric")).To(Succeed())
		other, err := tlsfilestest.NewCA("another CA")
		Expect(err).NotTo(HaveOccurred())
		otherCAFile = filepath.Join(dir, "other-ca.pem")
		Expect(other.WriteCA(otherCAFile)).To(Succeed())

		server = startPrivateMariaDB(ctx, dir, caFile, serverCert, serverKey)
		// Accounts that the server lets in only over TLS, and only with a
		// client certificate of its CA.
		server.exec("CREATE DATABASE ferric",
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
		s, err := Open(ctx, server.url("ferric", url.Values{"ssl_ca": {caFile}}))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Close)
		Expect(s.Upgrade(ctx)).To(Succeed())
		Expect(s.SchemaVersion(ctx)).To(Equal(LatestSchemaVersion()))
		Expect(cipher(s)).NotTo(BeEmpty())
	})

	It("is refused by the server, which requires TLS, without ssl_ca", func(ctx SpecContext) {
		_, err := Open(ctx, server.url("ferric", url.Values{}))
		Expect(err).To(MatchError(ContainSubstring("Access denied for user 'ferric'")))
	})

	It("refuses a server whose certificate its CA did not sign, saying so", func(ctx SpecContext) {
		_, err := Open(ctx, server.url("ferric", url.Values{"ssl_ca": {otherCAFile}}))
		Expect(err).To(MatchError(ContainSubstring("certificate signed by unknown authority")))
	})

	It("presents ssl_cert and ssl_key to a server that requires a client certificate", func(ctx SpecContext) {
		_, err := Open(ctx, server.url("ferricx509", url.Values{"ssl_ca": {caFile}}))
		Expect(err).To(MatchError(ContainSubstring("Access denied for user 'ferricx509'")))

		s, err := Open(ctx, server.url("ferricx509", url.Values{"ssl_ca": {caFile}, "ssl_cert": {clientCert}, "ssl_key": {clientKey}}))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Close)
		Expect(cipher(s)).NotTo(BeEmpty())
	})

	It("rejects half a client key pair before connecting", func(ctx SpecContext) {
		_, err := Open(ctx, server.url("ferric", url.Values{"ssl_ca": {caFile}, "ssl_cert": {clientCert}}))
		Expect(err).To(MatchError(ContainSubstring("needs both its certificate file and its key file")))
	})
})
