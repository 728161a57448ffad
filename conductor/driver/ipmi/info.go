package ipmi

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/ferricbm/ferric/conductor/driver/driverinfo"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// DefaultPort is the RMCP port BMCs listen on.
const DefaultPort = 623

var (
	privLevels       = []string{"ADMINISTRATOR", "CALLBACK", "OPERATOR", "USER"}
	protocolVersions = []string{"1.5", "2.0"}
)

// bmcInfo is what ipmitool needs to reach one node's BMC, read from its
// driver_info.
type bmcInfo struct {
	Address  string
	Port     int
	Username string
	Password string
	// Protocol is "2.0" (lanplus, RMCP+) or "1.5" (lan).
	Protocol  string
	PrivLevel string
	// CipherSuite is the -C value, or -1 for the [ipmi] default.
	CipherSuite int
	// DisableBootTimeout is nil unless driver_info overrides [ipmi]
	// disable_boot_timeout.
	DisableBootTimeout *bool
}

// target names the BMC in messages and keys the per-BMC command pacing.
func (b bmcInfo) target() string {
	return net.JoinHostPort(b.Address, strconv.Itoa(b.Port))
}

// parseDriverInfo checks a node's driver_info the way Ironic's ipmitool
// driver does, with its messages. Bridging is not supported: only
// ipmi_bridging "no" (the default) is accepted.
func parseDriverInfo(node *model.Node) (bmcInfo, error) {
	info := node.DriverInfo
	if s, _ := info["ipmi_address"].(string); strings.TrimSpace(s) == "" {
		return bmcInfo{}, errs.New(errs.KindMissingParameterValue,
			"Missing the following IPMI credentials in node's driver_info: ['ipmi_address'].")
	}
	b := bmcInfo{
		Address:     strings.TrimSpace(info["ipmi_address"].(string)),
		Port:        DefaultPort,
		Protocol:    "2.0",
		PrivLevel:   "ADMINISTRATOR",
		CipherSuite: -1,
	}
	var err error
	if b.Username, err = driverinfo.String(info, "ipmi_username"); err != nil {
		return bmcInfo{}, err
	}
	if b.Password, err = driverinfo.String(info, "ipmi_password"); err != nil {
		return bmcInfo{}, err
	}
	if v, ok := info["ipmi_port"]; ok && v != nil {
		if b.Port, err = driverinfo.Port(v, "ipmi_port"); err != nil {
			return bmcInfo{}, err
		}
	}
	// No console here, but a bad terminal port fails validation as in
	// Ironic, rather than when a console interface appears.
	if v, ok := info["ipmi_terminal_port"]; ok && v != nil {
		if _, err = driverinfo.Port(v, "ipmi_terminal_port"); err != nil {
			return bmcInfo{}, err
		}
	}
	if v, ok := info["ipmi_protocol_version"]; ok && v != nil {
		b.Protocol = fmt.Sprint(v)
		if b.Protocol == "2" {
			b.Protocol = "2.0"
		}
		if !slices.Contains(protocolVersions, b.Protocol) {
			return bmcInfo{}, errs.InvalidParameterValue(
				"Invalid IPMI protocol version value %s, the valid value can be one of %s",
				b.Protocol, strings.Join(protocolVersions, ", "))
		}
	}
	switch bridging := fmt.Sprint(orDefault(info["ipmi_bridging"], "no")); bridging {
	case "no":
	case "single", "dual":
		return bmcInfo{}, errs.InvalidParameterValue(
			"Value for ipmi_bridging is provided as %s, but IPMI bridging is not supported by this conductor; use \"no\".", bridging)
	default:
		return bmcInfo{}, errs.InvalidParameterValue(
			"Invalid value for ipmi_bridging: %s, the valid value can be one of: ['single', 'dual', 'no']", bridging)
	}
	if v, ok := info["ipmi_priv_level"]; ok && v != nil {
		b.PrivLevel = fmt.Sprint(v)
	}
	if !slices.Contains(privLevels, b.PrivLevel) {
		return bmcInfo{}, errs.InvalidParameterValue(
			"Invalid privilege level value:%s, the valid value can be one of %s", b.PrivLevel, strings.Join(privLevels, ", "))
	}
	if v, ok := info["ipmi_cipher_suite"]; ok && v != nil {
		n, ok := driverinfo.Int(v)
		if !ok || n < 0 || n > 17 {
			return bmcInfo{}, errs.InvalidParameterValue(
				"ipmi_cipher_suite \"%v\" is not a valid IPMI cipher suite: expected an integer from 0 to 17.", v)
		}
		b.CipherSuite = n
	}
	if v, ok := info["ipmi_disable_boot_timeout"]; ok && v != nil {
		d, ok := boolean(v)
		if !ok {
			return bmcInfo{}, errs.InvalidParameterValue(
				"ipmi_disable_boot_timeout \"%v\" is not a boolean.", v)
		}
		b.DisableBootTimeout = &d
	}
	return b, nil
}

// boolean reads Ironic's strict boolean strings or a JSON boolean.
func boolean(v any) (bool, bool) {
	switch t := v.(type) {
	case bool:
		return t, true
	case string:
		switch strings.ToLower(strings.TrimSpace(t)) {
		case "true", "yes", "on", "1", "y", "t":
			return true, true
		case "false", "no", "off", "0", "n", "f":
			return false, true
		}
	}
	return false, false
}

func orDefault(v any, def string) any {
	if v == nil {
		return def
	}
	return v
}
