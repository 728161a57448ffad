// Package ipmi is the ipmi hardware type: nodes whose BMC speaks IPMI over
// the LAN, driven with ipmitool. It provides the "ipmitool" power and
// management interfaces; the other interface types (boot, deploy, ...) are
// passed in by whoever assembles the hardware type.
//
// The BMC password never appears on a command line, in a log line or in an
// error: ipmitool reads it from a file only this user can read, created
// for one command and removed right after it.
package ipmi

import (
	"maps"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/logging"
)

// Name is the hardware type's name; InterfaceName names its power and
// management implementations.
const (
	Name          = "ipmi"
	InterfaceName = "ipmitool"
)

// Options configures the hardware type.
type Options struct {
	// IPMI is the [ipmi] section.
	IPMI config.IPMI
	// PowerStateChangeTimeout bounds the wait for a power change when the
	// caller gives no timeout ([conductor] power_state_change_timeout).
	PowerStateChangeTimeout time.Duration
	// SoftPowerOffTimeout is the default wait for a soft power off
	// ([conductor] soft_power_off_timeout).
	SoftPowerOffTimeout time.Duration
	// Ipmitool is the ipmitool binary; default "ipmitool" from PATH.
	Ipmitool string
	// Log receives warnings about retries and failures; nil discards
	// them.
	Log logrus.FieldLogger
}

// OptionsFrom takes the options from a configuration.
func OptionsFrom(cfg config.Config, log logrus.FieldLogger) Options {
	return Options{
		IPMI:                    cfg.IPMI,
		PowerStateChangeTimeout: cfg.Conductor.PowerStateChangeTimeout,
		SoftPowerOffTimeout:     cfg.Conductor.SoftPowerOffTimeout,
		Log:                     log,
	}
}

// Hardware holds what the ipmi interfaces share: the ipmitool runner that
// paces the commands sent to each BMC.
type Hardware struct {
	opts Options
	tool *ipmitool
}

// New builds the hardware type's shared state.
func New(opts Options) *Hardware {
	if opts.Ipmitool == "" {
		opts.Ipmitool = "ipmitool"
	}
	if opts.Log == nil {
		opts.Log = logging.Discard()
	}
	log := opts.Log.WithField("driver", Name)
	return &Hardware{opts: opts, tool: newIPMItool(opts.IPMI, opts.Ipmitool, log)}
}

// Power is the ipmitool power interface.
func (h *Hardware) Power() *Power { return &Power{h: h} }

// Management is the ipmitool management interface.
func (h *Hardware) Management() *Management { return &Management{h: h} }

// HardwareType describes the ipmi hardware type with ipmitool power and
// management and the given implementations of the other interface types,
// the first of each the default. Optional interface types left out get
// their no-op implementation; boot and deploy must be given for the
// registry to accept the type.
func (h *Hardware) HardwareType(others map[hwcatalog.InterfaceType][]driver.Implementation) driver.HardwareType {
	ifaces := driver.WithNoOps(others)
	ifaces[hwcatalog.Power] = driver.One(InterfaceName, h.Power())
	ifaces[hwcatalog.Management] = driver.One(InterfaceName, h.Management())
	return driver.HardwareType{Name: Name, Interfaces: ifaces}
}

// properties are the driver_info keys the power and management
// interfaces read (GET /v1/drivers/ipmi/properties).
var properties = map[string]string{
	"ipmi_address":              "IP address or host name of the node's BMC. Required.",
	"ipmi_port":                 "UDP port of the BMC's IPMI (RMCP) service; default 623. Optional.",
	"ipmi_username":             "BMC user name; default the null user. Optional.",
	"ipmi_password":             "BMC password; default empty. Optional.",
	"ipmi_priv_level":           "Privilege level of the IPMI session: ADMINISTRATOR (default), CALLBACK, OPERATOR or USER. Optional.",
	"ipmi_protocol_version":     "IPMI protocol version: \"2.0\" (default, RMCP+) or \"1.5\". Optional.",
	"ipmi_cipher_suite":         "IPMI 2.0 cipher suite (0-17); default [ipmi] cipher_suite. Optional.",
	"ipmi_bridging":             "IPMI bridging; only \"no\" (the default) is supported. Optional.",
	"ipmi_disable_boot_timeout": "Whether to ask the BMC to keep a boot device beyond 60 seconds before setting it; default [ipmi] disable_boot_timeout. Optional.",
	"ipmi_terminal_port":        "UDP port of the serial-over-LAN console; checked, but no console interface uses it yet. Optional.",
}

// Properties describes the driver_info keys the ipmitool interfaces use.
func Properties() map[string]string { return maps.Clone(properties) }
