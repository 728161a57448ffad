package agent

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"time"
)

// NewSelfSignedCert makes the certificate an agent with auto-TLS serves its
// API with: ECDSA P-256, for host (an IP address SAN, or a DNS name). Its
// PEM goes to the conductor in the heartbeat's agent_verify_ca, and the
// conductor trusts exactly this certificate for this run of the agent, so
// no CA is involved and the key never leaves the ramdisk's memory.
func NewSelfSignedCert(host string) (tls.Certificate, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("generate TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("generate certificate serial: %w", err)
	}
	// A ramdisk's clock is often wrong before NTP (if ever) sets it: the
	// validity is wide, since the certificate is pinned to one agent run
	// anyway and expiry protects nothing here.
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: host},
		NotBefore:             now.Add(-7 * 24 * time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("create TLS certificate: %w", err)
	}
	certPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, certPEM, nil
}

// VerifyCAPool is the pool holding only the certificate an agent reported
// in agent_verify_ca: one PEM CERTIFICATE block and nothing else.
func VerifyCAPool(certPEM string) (*x509.CertPool, error) {
	block, rest := pem.Decode([]byte(certPEM))
	if block == nil || block.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) > 0 {
		return nil, errors.New("agent_verify_ca is not one PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("agent_verify_ca: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool, nil
}

// PinnedClient is base (its timeout) trusting only the certificate in
// certPEM. It keeps no idle connections: a client is made for each call to
// an agent, and its transport would otherwise hold them until they time out.
func PinnedClient(base *http.Client, certPEM string) (*http.Client, error) {
	pool, err := VerifyCAPool(certPEM)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	tr.DisableKeepAlives = true
	c := *base
	c.Transport = tr
	return &c, nil
}
