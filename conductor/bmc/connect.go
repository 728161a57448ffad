package bmc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"time"

	"github.com/ferricbm/ferric/conductor/bmc/redfish"
	"github.com/ferricbm/ferric/conductor/bmc/ribcl"
	"github.com/ferricbm/ferric/conductor/bmc/transport"
)

// Protocols Config.Protocol may force.
const (
	ProtocolRIBCL   = "ribcl"
	ProtocolRedfish = "redfish"
)

// Config is how to reach a BMC.
type Config struct {
	Address string
	// Port defaults to 443.
	Port     int
	Username string
	Password string
	TLS      transport.TLS
	// Timeout bounds each request; 0 is transport.DefaultTimeout.
	Timeout time.Duration
	Poll    Poll
	// Protocol forces ProtocolRIBCL or ProtocolRedfish; "" chooses from
	// the product name.
	Protocol string
	// SystemID picks the Redfish system (a member id of
	// /redfish/v1/Systems); "" takes the first.
	SystemID string
}

var generation = regexp.MustCompile(`\bGen(\d+)\b`)

// redfishModel reports whether a ProLiant model is Gen10 or later, whose
// iLO 5 serves everything the driver needs over Redfish.
func redfishModel(product string) bool {
	m := generation.FindStringSubmatch(product)
	if m == nil {
		return false
	}
	n, err := strconv.Atoi(m[1])
	return err == nil && n >= 10
}

// Connect asks the iLO its product name over RIBCL and picks the protocol
// as HPE's client does: Redfish for Gen10 and later, and when RIBCL is
// refused (iLO 5 can turn it off); RIBCL otherwise. Refused credentials,
// an untrusted certificate and timeouts are errors, not reasons to try
// Redfish.
func Connect(ctx context.Context, cfg Config) (*Controller, error) {
	switch cfg.Protocol {
	case ProtocolRedfish:
		return connectRedfish(ctx, cfg)
	case "", ProtocolRIBCL:
	default:
		return nil, fmt.Errorf("BMC protocol %q is not %s or %s", cfg.Protocol, ProtocolRIBCL, ProtocolRedfish)
	}
	rc, err := ribcl.New(ribcl.Config{Address: cfg.Address, Port: cfg.Port, Username: cfg.Username,
		Password: cfg.Password, TLS: cfg.TLS, Timeout: cfg.Timeout})
	if err != nil {
		return nil, err
	}
	product, err := rc.ProductName(ctx)
	if err == nil && (cfg.Protocol == ProtocolRIBCL || !redfishModel(product)) {
		return &Controller{Client: RIBCL{C: rc}, Poll: cfg.Poll, Product: product}, nil
	}
	if err == nil {
		return connectRedfish(ctx, cfg)
	}
	var cert *tls.CertificateVerificationError
	if cfg.Protocol == ProtocolRIBCL || errors.Is(err, ribcl.ErrLogin) || errors.Is(err, transport.ErrTimeout) ||
		errors.As(err, &cert) || ctx.Err() != nil {
		return nil, fmt.Errorf("read the product name: %w", err)
	}
	c, rerr := connectRedfish(ctx, cfg)
	if rerr != nil {
		return nil, fmt.Errorf("RIBCL failed (%w), and so did Redfish: %w", err, rerr)
	}
	return c, nil
}

func connectRedfish(ctx context.Context, cfg Config) (*Controller, error) {
	addr := cfg.Address
	if cfg.Port != 0 {
		addr = net.JoinHostPort(cfg.Address, strconv.Itoa(cfg.Port))
	}
	c, err := redfish.New(redfish.Config{Address: addr, Username: cfg.Username, Password: cfg.Password,
		TLS: cfg.TLS, Timeout: cfg.Timeout, SystemID: cfg.SystemID})
	if err != nil {
		return nil, err
	}
	sys, err := c.System(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the system: %w", err)
	}
	return &Controller{Client: Redfish{C: c}, Poll: cfg.Poll, Product: sys.Model}, nil
}
