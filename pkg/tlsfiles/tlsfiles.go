// Package tlsfiles builds TLS configurations from PEM files named in the
// configuration: a server's key pair that follows its files as they are
// replaced (certificates are rotated without a restart), and a client's CA
// bundle and optional key pair.
package tlsfiles

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// MinVersion is the oldest protocol Ferric's servers and clients speak.
const MinVersion = tls.VersionTLS12

// ServerCert serves the key pair in two files and loads them again when
// either file changes, so a renewed certificate is served from the next
// handshake on. A changed pair that does not load (a half-written
// rotation, a key that does not match) leaves the previous pair in service
// and is logged once; it is tried again when the files change again.
type ServerCert struct {
	certFile, keyFile string
	log               logrus.FieldLogger

	mu sync.Mutex
	// seen and seenPEM are the files' state and content last read, loaded
	// or not; cert is the pair last loaded.
	seen       stamp
	seenPEM    [2][]byte
	cert       *tls.Certificate
	unreadable bool
}

// settle is how long after a file's last change its timestamp is not
// trusted alone: file systems keep coarse modification times, and two
// writes of the same size within one tick leave the same stamp.
const settle = 2 * time.Second

// stamp is what os.Stat tells of both files; a rewrite, or a symbolic
// link moved to a new file (as Kubernetes updates a mounted Secret),
// changes it.
type stamp struct {
	certMod, keyMod   time.Time
	certSize, keySize int64
}

func (s stamp) settled() bool {
	return time.Since(s.certMod) > settle && time.Since(s.keyMod) > settle
}

// NewServerCert loads the pair in certFile and keyFile; it fails unless
// both files are readable and hold a certificate and its private key.
func NewServerCert(certFile, keyFile string, log logrus.FieldLogger) (*ServerCert, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("tls: a certificate file and a key file are both required")
	}
	c := &ServerCert{certFile: certFile, keyFile: keyFile, log: log}
	st, err := c.stat()
	if err != nil {
		return nil, err
	}
	if _, err := c.load(st); err != nil {
		return nil, err
	}
	return c, nil
}

// Config is a server configuration that presents the current pair.
func (c *ServerCert) Config() *tls.Config {
	return &tls.Config{MinVersion: MinVersion, GetCertificate: c.GetCertificate}
}

// GetCertificate returns the pair in service, loading the files first if
// they changed since they were last read. Two stats (and, for files
// changed in the last seconds, two small reads) cost little beside the
// handshake they precede, so no timer is needed.
func (c *ServerCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, err := c.stat()
	if err != nil {
		// A file missing for a moment mid-rotation: keep serving.
		if !c.unreadable {
			c.log.WithError(err).Warn("TLS certificate files unreadable; still serving the previous certificate")
		}
		c.unreadable = true
		return c.cert, nil
	}
	c.unreadable = false
	if st == c.seen && st.settled() {
		return c.cert, nil
	}
	if replaced, err := c.load(st); err != nil {
		c.log.WithError(err).Error("TLS certificate files changed but do not load; still serving the previous certificate")
	} else if replaced {
		c.log.WithField("cert_file", c.certFile).Info("TLS certificate reloaded")
	}
	return c.cert, nil
}

func (c *ServerCert) stat() (stamp, error) {
	ci, err := os.Stat(c.certFile)
	if err != nil {
		return stamp{}, fmt.Errorf("tls: certificate file: %w", err)
	}
	ki, err := os.Stat(c.keyFile)
	if err != nil {
		return stamp{}, fmt.Errorf("tls: key file: %w", err)
	}
	return stamp{certMod: ci.ModTime(), keyMod: ki.ModTime(), certSize: ci.Size(), keySize: ki.Size()}, nil
}

// load reads the files, found in state st, and replaces the pair if their
// content is new and a valid pair. Content already seen, valid or not, is
// not parsed (or reported) again.
func (c *ServerCert) load(st stamp) (replaced bool, err error) {
	c.seen = st
	certPEM, err := os.ReadFile(c.certFile)
	if err != nil {
		return false, fmt.Errorf("tls: certificate file: %w", err)
	}
	keyPEM, err := os.ReadFile(c.keyFile)
	if err != nil {
		return false, fmt.Errorf("tls: key file: %w", err)
	}
	if c.seenPEM[0] != nil && bytes.Equal(certPEM, c.seenPEM[0]) && bytes.Equal(keyPEM, c.seenPEM[1]) {
		return false, nil
	}
	c.seenPEM = [2][]byte{certPEM, keyPEM}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("tls: %s and %s: %w", c.certFile, c.keyFile, err)
	}
	c.cert = &pair
	return true, nil
}

// Client is the configuration of a client that verifies its server with
// the CA bundle in caFile (empty: the system's roots) and, when certFile
// and keyFile are given, presents that pair.
func Client(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: MinVersion}
	if caFile != "" {
		pool, err := CAPool(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	switch {
	case certFile != "" && keyFile != "":
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: client certificate %s and key %s: %w", certFile, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case certFile != "" || keyFile != "":
		return nil, errors.New("tls: a client certificate needs both its certificate file and its key file")
	}
	return cfg, nil
}

// CAPool reads a PEM bundle of CA certificates.
func CAPool(caFile string) (*x509.CertPool, error) {
	data, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("tls: CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("tls: CA file %s holds no PEM certificate", caFile)
	}
	return pool, nil
}
