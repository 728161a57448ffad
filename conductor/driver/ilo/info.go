package ilo

import (
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/ferricbm/ferric/conductor/bmc"
	"github.com/ferricbm/ferric/conductor/bmc/transport"
	"github.com/ferricbm/ferric/conductor/driver/driverinfo"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// systemsPath is the collection Ironic's redfish_system_id names a member
// of, as a path.
const systemsPath = "/redfish/v1/Systems/"

// parseILO reads an iLO node's driver_info the way Ironic's iLO drivers
// do, with their messages. Unlike Ironic, the certificate is verified
// unless ilo_verify_ca is false: without a CA file, against the system
// roots.
func (h *Hardware) parseILO(node *model.Node) (bmc.Config, error) {
	info := node.DriverInfo
	vals, missing, err := driverinfo.Required(info, "ilo_address", "ilo_username", "ilo_password")
	if err != nil {
		return bmc.Config{}, err
	}
	if len(missing) > 0 {
		return bmc.Config{}, errs.New(errs.KindMissingParameterValue,
			"The following required iLO parameters are missing from the node's driver_info: %s", driverinfo.PyList(missing))
	}
	cfg := bmc.Config{
		Address:  strings.TrimSpace(vals["ilo_address"]),
		Username: vals["ilo_username"],
		Password: vals["ilo_password"],
		Port:     h.opts.ILO.ClientPort,
		Timeout:  time.Duration(h.opts.ILO.ClientTimeout) * time.Second,
		Poll:     h.poll(),
		TLS:      transport.TLS{CAFile: h.opts.ILO.CAFile},
	}
	if v, ok := info["client_port"]; ok && v != nil {
		port, err := driverinfo.Port(v, "client_port")
		if err != nil {
			return bmc.Config{}, err
		}
		cfg.Port = port
	}
	if v, ok := info["client_timeout"]; ok && v != nil {
		n, isInt := driverinfo.Int(v)
		if !isInt {
			return bmc.Config{}, errs.InvalidParameterValue(
				"The following iLO parameters from the node's driver_info should be integers: ['client_timeout']")
		}
		if n < 1 {
			return bmc.Config{}, errs.InvalidParameterValue("client_timeout \"%v\" must be a positive number of seconds.", v)
		}
		cfg.Timeout = time.Duration(n) * time.Second
	}
	caFile, err := driverinfo.String(info, "ca_file")
	if err != nil {
		return bmc.Config{}, err
	}
	if caFile != "" {
		if !isFile(caFile) {
			return bmc.Config{}, errs.InvalidParameterValue("ca_file \"%s\" is not found.", caFile)
		}
		cfg.TLS.CAFile = caFile
	}
	if err := verifyCA(node, info, "ilo_verify_ca", &cfg.TLS); err != nil {
		return bmc.Config{}, err
	}
	return cfg, nil
}

// parseRedfish reads a Redfish node's driver_info with the keys and
// messages of Ironic's redfish hardware type. The user name and password
// are required here: Ferric's client always authenticates.
func (h *Hardware) parseRedfish(node *model.Node) (bmc.Config, error) {
	info := node.DriverInfo
	vals, missing, err := driverinfo.Required(info, "redfish_address", "redfish_username", "redfish_password")
	if err != nil {
		return bmc.Config{}, err
	}
	if len(missing) > 0 {
		return bmc.Config{}, errs.New(errs.KindMissingParameterValue,
			"Missing the following Redfish properties in node %s driver_info: %s", node.UUID, driverinfo.PyList(missing))
	}
	address := strings.TrimSpace(vals["redfish_address"])
	if !strings.Contains(address, "://") {
		address = "https://" + address
	}
	u, err := url.Parse(address)
	if err != nil || u.Host == "" || u.Scheme != "https" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return bmc.Config{}, errs.InvalidParameterValue(
			"Invalid Redfish address %s set in driver_info/redfish_address on node %s (an https:// address with no path is required)", vals["redfish_address"], node.UUID)
	}
	cfg := bmc.Config{
		Address:  u.Host,
		Username: vals["redfish_username"],
		Password: vals["redfish_password"],
		Timeout:  time.Duration(h.opts.ILO.ClientTimeout) * time.Second,
		Poll:     h.poll(),
		Protocol: bmc.ProtocolRedfish,
	}
	system, err := driverinfo.String(info, "redfish_system_id")
	if err != nil {
		return bmc.Config{}, err
	}
	if system != "" {
		id := strings.TrimPrefix(strings.TrimRight(system, "/"), systemsPath)
		if id == "" || strings.ContainsAny(id, "/?#") {
			return bmc.Config{}, errs.InvalidParameterValue(
				"Invalid value \"%s\" set in driver_info/redfish_system_id on node %s: it must be a system's path, %s<id>", system, node.UUID, systemsPath)
		}
		cfg.SystemID = id
	}
	if err := verifyCA(node, info, "redfish_verify_ca", &cfg.TLS); err != nil {
		return bmc.Config{}, err
	}
	return cfg, nil
}

func (h *Hardware) poll() bmc.Poll {
	return bmc.Poll{Interval: time.Duration(h.opts.ILO.PowerWait) * time.Second, Retries: h.opts.ILO.PowerRetry}
}

// verifyCA applies a *_verify_ca value: a Boolean (false turns
// verification off) or the path of a CA bundle.
func verifyCA(node *model.Node, info model.JSONObject, key string, t *transport.TLS) error {
	v, ok := info[key]
	if !ok || v == nil {
		return nil
	}
	bad := errs.InvalidParameterValue(
		"Invalid value type set in driver_info/%s on node %s. The value should be a Boolean or the path to a file/directory, not \"%v\"", key, node.UUID, v)
	switch x := v.(type) {
	case bool:
		t.Insecure = !x
		return nil
	case string:
		// The words oslo's bool_from_string knows.
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "1", "t", "true", "on", "y", "yes":
			return nil
		case "0", "f", "false", "off", "n", "no":
			t.Insecure = true
			return nil
		}
		if isFile(x) {
			t.CAFile = x
			return nil
		}
	}
	return bad
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
