package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// conductorGroup is Ironic's rule for conductor group names.
var conductorGroup = regexp.MustCompile(`^[a-zA-Z0-9_.-]{0,255}$`)

// Validate reports every value that cannot work, each naming its option, so
// that a bad configuration fails at start-up rather than on first use:
// first each option's own rule (its check tag), then the rules between
// options.
func (c Config) Validate() error {
	var p problems
	checkTags(&c, &p)
	c.validateAuth(&p)
	c.validateServers(&p)
	c.Database.validate(&p)
	c.validateRPC(&p)
	c.Conductor.validate(&p)
	c.IPMI.validate(&p)
	c.Deploy.validate(&p)
	c.Glance.validate(&p)
	c.ILO.validate(&p)
	c.Swift.validate(&p)
	return errors.Join(p...)
}

// required reports each of the options that is empty, naming why it is
// needed.
func required(p *problems, section, why string, options ...[2]string) {
	for _, o := range options {
		if o[1] == "" {
			p.bad(section, o[0], "required when %s", why)
		}
	}
}

// validateAuth checks what the chosen auth_strategy needs.
func (c Config) validateAuth(p *problems) {
	switch c.Default.AuthStrategy {
	case "http_basic":
		file := c.API.HTTPBasicAuthUserFile
		if file == "" {
			p.bad("api", "http_basic_auth_user_file", "required when auth_strategy is http_basic")
		} else if _, err := os.Stat(file); err != nil {
			p.bad("api", "http_basic_auth_user_file", "%v", err)
		}
	case "keystone":
		ks := c.KeystoneAuthtoken
		required(p, "keystone_authtoken", "[DEFAULT] auth_strategy is keystone",
			[2]string{"auth_url", ks.AuthURL}, [2]string{"username", ks.Username}, [2]string{"password", ks.Password},
			[2]string{"project_name", ks.ProjectName}, [2]string{"user_domain_name", ks.UserDomainName},
			[2]string{"project_domain_name", ks.ProjectDomainName})
	}
}

// validateServers checks the API server's TLS and timeouts.
func (c Config) validateServers(p *problems) {
	// Cutting the response of a request still waiting for its conductor
	// would turn a slow answer into a dropped connection.
	if w := c.API.WriteTimeout; w > 0 && w <= c.RPC.ResponseTimeout {
		p.bad("api", "write_timeout", "%s must exceed [rpc] response_timeout %s", w, c.RPC.ResponseTimeout)
	}
	if c.API.EnableSSLAPI && (c.SSL.CertFile == "" || c.SSL.KeyFile == "") {
		p.bad("ssl", "cert_file", "cert_file and key_file are required when [api] enable_ssl_api is true")
	}
	checkPair(p, "ssl", "cert_file", "key_file", c.SSL.CertFile, c.SSL.KeyFile)
}

func (db Database) validate(p *problems) {
	if !strings.HasPrefix(db.Connection, "sqlite://") && !strings.HasPrefix(db.Connection, "mysql://") {
		p.bad("database", "connection", "must start with sqlite:// or mysql://")
	}
}

// validateRPC checks the broker URL and its TLS files.
func (c Config) validateRPC(p *problems) {
	r, om := c.RPC, c.OsloMessagingRabbit
	if r.Transport == "amqp" && !strings.HasPrefix(r.AMQPURL, "amqp://") && !strings.HasPrefix(r.AMQPURL, "amqps://") {
		p.bad("rpc", "amqp_url", "must start with amqp:// or amqps:// when transport is amqp")
	}
	checkPair(p, "oslo_messaging_rabbit", "ssl_cert_file", "ssl_key_file", om.SSLCertFile, om.SSLKeyFile)
	checkCA(p, "oslo_messaging_rabbit", "ssl_ca_file", om.SSLCAFile)
	// Files given for a plain connection would be ignored, leaving the
	// operator believing the broker traffic is encrypted.
	if r.Transport == "amqp" && !c.AMQPTLS() && om.SSLCAFile+om.SSLCertFile+om.SSLKeyFile != "" {
		p.bad("oslo_messaging_rabbit", "ssl", "ssl_ca_file, ssl_cert_file and ssl_key_file need a TLS connection: set ssl = true or use an amqps:// [rpc] amqp_url")
	}
}

func (k Conductor) validate(p *problems) {
	if !conductorGroup.MatchString(k.ConductorGroup) {
		p.bad("conductor", "conductor_group", "%q may only hold letters, digits, _, . and - (at most 255)", k.ConductorGroup)
	}
	if len(k.EnabledHardwareTypes) == 0 {
		p.bad("conductor", "enabled_hardware_types", "must name at least one hardware type")
	}
	// A timeout shorter than the heartbeat would declare live conductors
	// dead between two heartbeats, bouncing their nodes around the ring.
	if k.HeartbeatInterval > 0 && k.HeartbeatTimeout > 0 && k.HeartbeatTimeout <= k.HeartbeatInterval {
		p.bad("conductor", "heartbeat_timeout", "%s must exceed heartbeat_interval %s", k.HeartbeatTimeout, k.HeartbeatInterval)
	}
	for _, n := range k.ImageDownloadAllowedNetworks {
		if _, err := netip.ParsePrefix(n); err != nil {
			p.bad("conductor", "image_download_allowed_networks", "%q is not a network in CIDR notation (such as 10.20.0.0/16)", n)
		}
	}
	for _, path := range k.FileURLAllowedPaths {
		if !filepath.IsAbs(path) {
			p.bad("conductor", "file_url_allowed_paths", "%q is not an absolute path", path)
		}
	}
}

func (i IPMI) validate(p *problems) {
	if i.ConnectTimeout < time.Second || i.ConnectTimeout%time.Second != 0 {
		p.bad("ipmi", "connect_timeout", "%s is not a whole number of seconds of at least 1", i.ConnectTimeout)
	}
}

func (dp Deploy) validate(p *problems) {
	httpsURL := strings.HasPrefix(dp.HTTPURL, "https://")
	switch {
	case httpsURL && (dp.HTTPCertFile == "" || dp.HTTPKeyFile == ""):
		p.bad("deploy", "http_cert_file", "http_cert_file and http_key_file are required when http_url is https://")
	case !httpsURL && (dp.HTTPCertFile != "" || dp.HTTPKeyFile != ""):
		p.bad("deploy", "http_cert_file", "http_cert_file and http_key_file are used only when http_url is https://, and it is %q", dp.HTTPURL)
	}
	checkPair(p, "deploy", "http_cert_file", "http_key_file", dp.HTTPCertFile, dp.HTTPKeyFile)
	if dp.ShredRandomOverwriteIterations == 0 && !dp.ShredFinalOverwriteWithZeros {
		p.bad("deploy", "shred_random_overwrite_iterations", "0 with shred_final_overwrite_with_zeros false would make erase_devices write nothing")
	}
}

func (g Glance) validate(p *problems) {
	switch g.AuthType {
	case "none":
		if g.EndpointOverride == "" {
			p.bad("glance", "endpoint_override", "required when auth_type is none")
		}
	case "password":
		required(p, "glance", "auth_type is password",
			[2]string{"auth_url", g.AuthURL}, [2]string{"username", g.Username}, [2]string{"password", g.Password},
			[2]string{"project_name", g.ProjectName}, [2]string{"user_domain_name", g.UserDomainName},
			[2]string{"project_domain_name", g.ProjectDomainName})
	}
}

func (il ILO) validate(p *problems) {
	if il.SwiftILOContainer == "" || strings.Contains(il.SwiftILOContainer, "/") {
		p.bad("ilo", "swift_ilo_container", "%q is not a container name", il.SwiftILOContainer)
	}
}

func (sw Swift) validate(p *problems) {
	if sw.AuthType != "tempauth" && sw.AuthType != "password" {
		return
	}
	why := "auth_type is " + sw.AuthType
	required(p, "swift", why, [2]string{"auth_url", sw.AuthURL}, [2]string{"username", sw.Username}, [2]string{"password", sw.Password})
	if sw.AuthType == "password" {
		required(p, "swift", why, [2]string{"project_name", sw.ProjectName},
			[2]string{"user_domain_name", sw.UserDomainName}, [2]string{"project_domain_name", sw.ProjectDomainName})
	}
}

func checkPair(p *problems, section, certOption, keyOption, certFile, keyFile string) {
	switch {
	case certFile == "" && keyFile == "":
	case certFile == "":
		p.bad(section, certOption, "required when %s is set", keyOption)
	case keyFile == "":
		p.bad(section, keyOption, "required when %s is set", certOption)
	default:
		if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			p.bad(section, certOption, "not a usable certificate and key (%s, %s): %v", certFile, keyFile, err)
		}
	}
}

// checkCA reports a CA file that is unreadable or holds no certificate.
func checkCA(p *problems, section, option, caFile string) {
	if caFile == "" {
		return
	}
	data, err := os.ReadFile(caFile)
	if err != nil {
		p.bad(section, option, "%v", err)
		return
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		p.bad(section, option, "%s holds no PEM certificate", caFile)
	}
}
