// Package ilo holds the hardware types that drive a server through an HTTPS
// BMC with conductor/bmc: "ilo" (HPE iLO, RIBCL or Redfish chosen from the
// model, driver_info ilo_*) and "redfish" (any Redfish BMC, driver_info
// redfish_*). Both provide power and management interfaces on
// bmc.Controller; the boot and deploy interfaces are passed in by whoever
// assembles the hardware type.
//
// Passwords go only to the BMC: they are masked in API responses (their
// keys name a password) and never written to a log or an error.
package ilo

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/bmc"
	"github.com/ferricbm/ferric/conductor/bmc/redfish"
	"github.com/ferricbm/ferric/conductor/bmc/ribcl"
	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
)

// Hardware type names; each names its power and management interfaces too.
// ClassicName is Ironic's classic driver for iLO virtual-media iSCSI
// deploys, kept as a hardware type.
const (
	Name        = "ilo"
	RedfishName = "redfish"
	ClassicName = "iscsi_ilo"
)

// Options configure the hardware types.
type Options struct {
	// ILO is the [ilo] section: ports, timeouts, CA file, power polling.
	ILO config.ILO
	Log logrus.FieldLogger
}

// OptionsFrom takes the options from a configuration.
func OptionsFrom(cfg config.Config, log logrus.FieldLogger) Options {
	return Options{ILO: cfg.ILO, Log: log}
}

// Hardware builds the interfaces of both hardware types.
type Hardware struct {
	opts Options
	log  logrus.FieldLogger
}

// New builds the hardware types' shared state.
func New(opts Options) *Hardware {
	if opts.Log == nil {
		opts.Log = logging.Discard()
	}
	return &Hardware{opts: opts, log: opts.Log.WithField("driver", Name)}
}

// Flavor is one hardware type's way of reading a node's driver_info.
type Flavor struct {
	name string
	// credentials names the driver_info keys of the user and password.
	credentials string
	parse       func(*model.Node) (bmc.Config, error)
	properties  map[string]string
}

// ILO is the flavor of iLO nodes (driver_info ilo_*).
func (h *Hardware) ILO() Flavor {
	return Flavor{name: Name, credentials: "ilo_username/ilo_password", parse: h.parseILO, properties: iloProperties}
}

// Redfish is the flavor of Redfish nodes (driver_info redfish_*).
func (h *Hardware) Redfish() Flavor {
	return Flavor{name: RedfishName, credentials: "redfish_username/redfish_password", parse: h.parseRedfish, properties: redfishProperties}
}

// Controller connects to the node's BMC.
func (h *Hardware) Controller(ctx context.Context, f Flavor, node *model.Node) (*bmc.Controller, error) {
	cfg, err := f.parse(node)
	if err != nil {
		return nil, err
	}
	c, err := bmc.Connect(ctx, cfg)
	if errors.Is(err, ribcl.ErrLogin) || errors.Is(err, redfish.ErrUnauthorized) {
		// Not "...password: <cause>": log and last_error masking would
		// take the cause's first word for the password.
		return nil, fmt.Errorf("%s BMC %s of node %s refused the user name and password of driver_info %s (%w)",
			f.name, cfg.Address, node.UUID, f.credentials, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s BMC %s of node %s: %w", f.name, cfg.Address, node.UUID, err)
	}
	return c, nil
}

// Power is the flavor's power interface.
func (h *Hardware) Power(f Flavor) *Power { return &Power{h: h, f: f} }

// Management is the flavor's management interface.
func (h *Hardware) Management(f Flavor) *Management { return &Management{h: h, f: f} }

// HardwareType describes the flavor's hardware type, named name, with its
// power and management interfaces and the given implementations of the
// other interface types, the first of each the default. Optional
// interface types left out get their no-op implementation.
func (h *Hardware) HardwareType(name string, f Flavor, others map[hwcatalog.InterfaceType][]driver.Implementation) driver.HardwareType {
	ifaces := driver.WithNoOps(others)
	power := h.Power(f)
	power.boots = map[string]*Boot{}
	for _, impl := range others[hwcatalog.Boot] {
		if b, ok := impl.Impl.(*Boot); ok {
			power.boots[impl.Name] = b
		}
	}
	ifaces[hwcatalog.Power] = driver.One(f.name, power)
	ifaces[hwcatalog.Management] = driver.One(f.name, h.Management(f))
	return driver.HardwareType{Name: name, Interfaces: ifaces}
}

var iloProperties = map[string]string{
	"ilo_address":    "IP address or host name of the iLO. Required.",
	"ilo_username":   "iLO user with administrator rights. Required.",
	"ilo_password":   "Password of the iLO user. Required.",
	"client_port":    "HTTPS port of the iLO; default [ilo] client_port (443). Optional.",
	"client_timeout": "Seconds each iLO request may take; default [ilo] client_timeout (60). Optional.",
	"ca_file":        "CA bundle that verifies the iLO's certificate; default [ilo] ca_file, else the system's roots. Optional.",
	"ilo_verify_ca":  "false turns certificate verification off; a path is a CA bundle. Default true. Optional.",
}

var redfishProperties = map[string]string{
	"redfish_address":   "The Redfish service's https:// address (https is assumed without a scheme). Required.",
	"redfish_username":  "User of the Redfish service. Required.",
	"redfish_password":  "Password of the Redfish user. Required.",
	"redfish_system_id": "Path of the system to manage, /redfish/v1/Systems/<id>; default the service's first system. Optional.",
	"redfish_verify_ca": "false turns certificate verification off; a path is a CA bundle. Default true (the system's roots). Optional.",
}
