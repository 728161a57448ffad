// Package bmctest serves a fake BMC over HTTPS with a self-signed
// certificate, as a factory-fresh BMC does, for tests and the lab.
package bmctest

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ferricbm/ferric/deploy/agent"
)

// Server is a running HTTPS server.
type Server struct {
	// URL is https://host:port.
	URL string
	// Host is the host of the address Serve was given, which the
	// certificate names.
	Host string
	// Addr is host:port.
	Addr string
	// CertPEM is the server's self-signed certificate, which a client
	// trusts as its CA file.
	CertPEM string
	srv     *http.Server
}

// Serve listens on addr ("127.0.0.1:0" picks a free port) and serves h
// with a certificate made for addr's host.
func Serve(addr string, h http.Handler) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("fake BMC address: %w", err)
	}
	cert, certPEM, err := agent.NewSelfSignedCert(host)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s := &Server{
		Host:    host,
		Addr:    ln.Addr().String(),
		CertPEM: certPEM,
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
			// Clients that refuse the self-signed certificate, as they
			// should without a CA file, would fill the output with
			// handshake errors.
			ErrorLog: log.New(io.Discard, "", 0),
		},
	}
	s.URL = "https://" + s.Addr
	go func() {
		if err := s.srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "bmctest: serve %s: %v\n", s.Addr, err)
		}
	}()
	return s, nil
}

// Port is the port the server listens on.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

// WriteCAFile writes the certificate into dir and returns the file's path.
func (s *Server) WriteCAFile(dir string) (string, error) {
	p := filepath.Join(dir, "bmc-ca.pem")
	if err := os.WriteFile(p, []byte(s.CertPEM), 0o600); err != nil {
		return "", fmt.Errorf("write BMC CA file: %w", err)
	}
	return p, nil
}

// Close stops the server at once, dropping open connections as a BMC that
// loses power does.
func (s *Server) Close() error { return s.srv.Close() }

// headClient is how a fake BMC checks an image before inserting it. Image
// servers in tests and labs use self-signed certificates, which BMCs
// accept too.
var headClient = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
}

// ImageReachable reports whether url answers HEAD with a 2xx, as a BMC
// finds out when it starts to fetch a virtual media image.
func ImageReachable(url string) bool {
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return false
	}
	resp, err := headClient.Head(url)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode/100 == 2
}
