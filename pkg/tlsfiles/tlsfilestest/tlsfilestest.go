// Package tlsfilestest makes throw-away certificate authorities and the
// PEM files of the certificates they issue, for tests of TLS servers and
// clients.
package tlsfilestest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority that lives in memory.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// NewCA makes a CA whose subject is name.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// WriteCA writes the CA's certificate to path.
func (ca *CA) WriteCA(path string) error {
	return os.WriteFile(path, ca.pem, 0o644)
}

// Issue writes a certificate for the hosts (names or IP addresses), valid
// for servers and clients and signed by ca, to certFile, and its key to
// keyFile. The certificate's subject is commonName.
func (ca *CA) Issue(certFile, keyFile, commonName string, hosts ...string) error {
	certPEM, keyPEM, err := ca.IssuePEM(commonName, hosts...)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyFile, keyPEM, 0o600)
}

// IssuePEM is Issue returning the PEM blocks instead of writing them.
func (ca *CA) IssuePEM(commonName string, hosts ...string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("issue certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
}

// PKI is the set of files a spec of a TLS connection to a loopback server
// needs, all under one directory.
type PKI struct {
	// CAFile is the CA that issued both key pairs; OtherCAFile a CA that
	// issued neither, for the refusals.
	CAFile, OtherCAFile string
	// ServerCert and ServerKey are for 127.0.0.1.
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// NewPKI writes a CA, a server key pair for 127.0.0.1 named server, a
// client key pair named client and another CA into dir.
func NewPKI(dir, server, client string) (PKI, error) {
	ca, err := NewCA(server + " CA")
	if err != nil {
		return PKI{}, err
	}
	other, err := NewCA("another CA")
	if err != nil {
		return PKI{}, err
	}
	p := PKI{CAFile: filepath.Join(dir, "ca.pem"), OtherCAFile: filepath.Join(dir, "other-ca.pem"),
		ServerCert: filepath.Join(dir, "server.crt"), ServerKey: filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key")}
	for _, err := range []error{ca.WriteCA(p.CAFile), other.WriteCA(p.OtherCAFile),
		ca.Issue(p.ServerCert, p.ServerKey, server, "127.0.0.1"), ca.Issue(p.ClientCert, p.ClientKey, client)} {
		if err != nil {
			return PKI{}, fmt.Errorf("write test PKI in %s: %w", dir, err)
		}
	}
	return p, nil
}
