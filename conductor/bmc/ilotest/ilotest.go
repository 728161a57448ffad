// Package ilotest is a fake HPE iLO on one HTTPS address, as a lab node
// has: RIBCL at /ribcl and, for Gen10 and later models (iLO 5), Redfish
// under /redfish/v1. An iLO 5 fake keeps the server's state on the
// Redfish side, which is what a client uses for those models; its RIBCL
// side answers the product name and keeps separate state.
package ilotest

import (
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/ferricbm/ferric/conductor/bmc/bmctest"
	"github.com/ferricbm/ferric/conductor/bmc/redfish/redfishtest"
	"github.com/ferricbm/ferric/conductor/bmc/ribcl/ribcltest"
)

// Options configure a fake iLO.
type Options struct {
	Username string
	Password string
	// Model defaults to "ProLiant DL360 Gen9".
	Model      string
	PowerDelay time.Duration
	// UEFI starts the RIBCL side in UEFI boot mode.
	UEFI bool
	// RIBCLDisabled makes /ribcl answer 404, standing in for an iLO 5
	// whose RIBCL is turned off.
	RIBCLDisabled bool
	// AsyncMedia and TaskDelay are the Redfish side's (redfishtest).
	AsyncMedia bool
	TaskDelay  time.Duration
	// OnPower is given to the side that holds the server's state
	// (ribcltest.Options.OnPower, redfishtest.Options.OnPower); the
	// device is RIBCL's (CDROM, HDD) or Redfish's (Cd, Hdd).
	OnPower func(on bool, device string)
}

// Server is a running fake iLO. Redfish is nil for models before Gen10.
type Server struct {
	*bmctest.Server
	Host    string
	Port    int
	RIBCL   *ribcltest.ILO
	Redfish *redfishtest.BMC
}

var generation = regexp.MustCompile(`\bGen(\d+)\b`)

// Start serves a fake iLO on addr ("127.0.0.1:0" for any free port).
func Start(addr string, opts Options) (*Server, error) {
	if opts.Model == "" {
		opts.Model = "ProLiant DL360 Gen9"
	}
	var redfishSide bool
	if m := generation.FindStringSubmatch(opts.Model); m != nil {
		n, _ := strconv.Atoi(m[1])
		redfishSide = n >= 10
	}
	ribclOpts := ribcltest.Options{Username: opts.Username, Password: opts.Password,
		ProductName: opts.Model, PowerDelay: opts.PowerDelay, UEFI: opts.UEFI}
	if !redfishSide {
		ribclOpts.OnPower = opts.OnPower
	}
	s := &Server{RIBCL: ribcltest.New(ribclOpts)}
	if redfishSide {
		s.Redfish = redfishtest.New(redfishtest.Options{Username: opts.Username, Password: opts.Password,
			Model: opts.Model, PowerDelay: opts.PowerDelay, AsyncMedia: opts.AsyncMedia, TaskDelay: opts.TaskDelay,
			OnPower: opts.OnPower})
	}
	mux := http.NewServeMux()
	if !opts.RIBCLDisabled {
		mux.Handle("/ribcl", s.RIBCL)
	}
	if s.Redfish != nil {
		mux.Handle("/redfish/", s.Redfish)
	}
	srv, err := bmctest.Serve(addr, mux)
	if err != nil {
		return nil, err
	}
	s.Server, s.Host, s.Port = srv, srv.Host, srv.Port()
	return s, nil
}
