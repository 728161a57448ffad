// Package ribcl is a client for RIBCL, the XML-over-HTTPS scripting
// interface of HPE iLO 2 to 4 (docs/ilo.md §RIBCL). Every call is one POST
// of a document that logs in and runs one command; the iLO keeps no
// session.
package ribcl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ferricbm/ferric/conductor/bmc/transport"
	"github.com/ferricbm/ferric/pkg/secrets"
)

// Errors a caller tells apart with errors.Is. A *StatusError is in the
// chain of both login and not-supported failures, with the iLO's code.
var (
	ErrLogin        = errors.New("iLO login failed")
	ErrNotSupported = errors.New("not supported on this platform")
)

// StatusError is a non-zero STATUS in the iLO's answer.
type StatusError struct {
	Op      string
	Code    int
	Message string
	kind    error
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("iLO %s failed: status 0x%04X: %s", e.Op, e.Code, e.Message)
}

// Is makes errors.Is(err, ErrLogin) and ErrNotSupported match.
func (e *StatusError) Is(target error) bool { return e.kind != nil && e.kind == target }

// Config is how to reach one iLO.
type Config struct {
	// Address is the iLO's host name or IP address.
	Address string
	// Port defaults to 443.
	Port     int
	Username string
	Password string
	// TLS verification is on unless TLS.Insecure.
	TLS transport.TLS
	// Timeout bounds each request; 0 is transport.DefaultTimeout.
	Timeout time.Duration
}

// Client talks to one iLO. It is safe for concurrent use.
type Client struct {
	url     string
	user    string
	pass    string
	timeout time.Duration
	http    *http.Client
}

// New checks cfg and builds a client; it does not contact the iLO.
func New(cfg Config) (*Client, error) {
	if cfg.Address == "" {
		return nil, errors.New("iLO address is empty")
	}
	if cfg.Username == "" {
		return nil, errors.New("iLO username is empty")
	}
	port := cfg.Port
	if port == 0 {
		port = 443
	}
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("iLO port %d is out of range", port)
	}
	hc, err := transport.NewHTTPClient(cfg.TLS)
	if err != nil {
		return nil, err
	}
	return &Client{
		url:     "https://" + net.JoinHostPort(cfg.Address, strconv.Itoa(port)) + "/ribcl",
		user:    cfg.Username,
		pass:    cfg.Password,
		timeout: cfg.Timeout,
		http:    hc,
	}, nil
}

// block is the RIBCL section a command lives in, with its access mode.
type block struct{ name, mode string }

var (
	serverRead  = block{"SERVER_INFO", "read"}
	serverWrite = block{"SERVER_INFO", "write"}
	ribRead     = block{"RIB_INFO", "read"}
	ribWrite    = block{"RIB_INFO", "write"}
)

// run sends one command and returns the first data element of the answer
// (nil for commands that answer with a status only).
func (c *Client) run(ctx context.Context, op string, b block, command string) (*Element, error) {
	body := c.document(b, command)
	req, err := transport.NewRequest(ctx, http.MethodPost, c.url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/xml")
	resp, err := transport.Do(ctx, c.http, req, c.timeout, "iLO "+op)
	if err != nil {
		return nil, err
	}
	if resp.Status != http.StatusOK {
		return nil, fmt.Errorf("iLO %s: HTTP status %d", op, resp.Status)
	}
	e, err := parseResponse(op, resp.Body)
	var se *StatusError
	if errors.As(err, &se) {
		se.Message = c.scrub(se.Message)
	}
	return e, err
}

// scrub hides the password in a message from the iLO: its syntax errors
// quote the offending line, which may be the LOGIN element.
func (c *Client) scrub(msg string) string {
	if c.pass != "" {
		msg = strings.ReplaceAll(msg, escape(c.pass), secrets.Masked)
		msg = strings.ReplaceAll(msg, c.pass, secrets.Masked)
	}
	return secrets.MaskString(msg)
}

func (c *Client) document(b block, command string) []byte {
	var sb strings.Builder
	sb.WriteString(`<?xml version="1.0"?>` + "\r\n")
	sb.WriteString(`<RIBCL VERSION="2.0">` + "\r\n")
	sb.WriteString(`<LOGIN USER_LOGIN="` + escape(c.user) + `" PASSWORD="` + escape(c.pass) + `">` + "\r\n")
	sb.WriteString(`<` + b.name + ` MODE="` + b.mode + `">` + "\r\n")
	sb.WriteString(command + "\r\n")
	sb.WriteString(`</` + b.name + `>` + "\r\n")
	sb.WriteString("</LOGIN>\r\n</RIBCL>\r\n")
	return []byte(sb.String())
}
