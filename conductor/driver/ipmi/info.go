package ipmi

import (
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"

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
	if b.Username, err = stringField(info, "ipmi_username"); err != nil {
		return bmcInfo{}, err
	}
	if b.Password, err = stringField(info, "ipmi_password"); err != nil {
		return bmcInfo{}, err
	}
	if v, ok := info["ipmi_port"]; ok && v != nil {
		if b.Port, err = networkPort(v, "ipmi_port"); err != nil {
			return bmcInfo{}, err
		}
	}
	// No console here, but a bad terminal port fails validation as in
	// Ironic, rather than when a console interface appears.
	if v, ok := info["ipmi_terminal_port"]; ok && v != nil {
		if _, err = networkPort(v, "ipmi_terminal_port"); err != nil {
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
		n, ok := integer(v)
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

func stringField(info model.JSONObject, key string) (string, error) {
	switch v := info[key].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case float64, int, int64, bool:
		// A numeric password typed without quotes still means its digits.
		return fmt.Sprint(v), nil
	}
	return "", errs.InvalidParameterValue("%s must be a string.", key)
}

// networkPort follows Ironic's validate_network_port wording.
func networkPort(v any, name string) (int, error) {
	n, ok := integer(v)
	if !ok {
		return 0, errs.InvalidParameterValue("%s \"%v\" is not a valid integer.", name, v)
	}
	if n < 1 || n > 65535 {
		return 0, errs.InvalidParameterValue(
			"%s \"%v\" is out of range. Valid port numbers must be between 1 and 65535.", name, v)
	}
	return n, nil
}

// integer reads an integer given as a JSON number or a decimal string.
func integer(v any) (int, bool) {
	switch t := v.(type) {
	case float64:
		if t != math.Trunc(t) || math.Abs(t) > 1<<31 {
			return 0, false
		}
		return int(t), true
	case int:
		return t, true
	case int64:
		return int(t), true
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(t))
		return n, err == nil
	}
	return 0, false
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
