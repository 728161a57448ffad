package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// conductorGroup is Ironic's rule for conductor group names.
var conductorGroup = regexp.MustCompile(`^[a-zA-Z0-9_.-]{0,255}$`)

// Validate reports every value that cannot work, each naming its option, so
// that a bad configuration fails at start-up rather than on first use.
func (c Config) Validate() error {
	var problems []error
	bad := func(section, option, format string, args ...any) {
		problems = append(problems, fmt.Errorf("[%s] %s: %s", section, option, fmt.Sprintf(format, args...)))
	}

	d := c.Default
	if strings.TrimSpace(d.Host) == "" {
		bad("DEFAULT", "host", "must not be empty")
	}
	if d.LogFormat != "text" && d.LogFormat != "json" {
		bad("DEFAULT", "log_format", "%q is not one of text, json", d.LogFormat)
	}
	if d.HashPartitionExponent < 0 || d.HashPartitionExponent > 16 {
		bad("DEFAULT", "hash_partition_exponent", "%d is outside 0..16", d.HashPartitionExponent)
	}
	if d.HashRingResetInterval <= 0 {
		bad("DEFAULT", "hash_ring_reset_interval", "must be positive")
	}

	a := c.API
	if a.Port < 1 || a.Port > 65535 {
		bad("api", "port", "%d is outside 1..65535", a.Port)
	}
	if a.PublicEndpoint != "" {
		if u, err := url.Parse(a.PublicEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("api", "public_endpoint", "%q is not an http(s) URL", a.PublicEndpoint)
		}
	}
	if a.MaxLimit < 1 {
		bad("api", "max_limit", "must be positive")
	}
	switch d.AuthStrategy {
	case "noauth":
	case "http_basic":
		if a.HTTPBasicAuthUserFile == "" {
			bad("api", "http_basic_auth_user_file", "required when auth_strategy is http_basic")
		} else if _, err := os.Stat(a.HTTPBasicAuthUserFile); err != nil {
			bad("api", "http_basic_auth_user_file", "%v", err)
		}
	case "keystone":
		ks := c.KeystoneAuthtoken
		for _, o := range []struct{ option, value string }{
			{"auth_url", ks.AuthURL}, {"username", ks.Username}, {"password", ks.Password}, {"project_name", ks.ProjectName},
			{"user_domain_name", ks.UserDomainName}, {"project_domain_name", ks.ProjectDomainName},
		} {
			if o.value == "" {
				bad("keystone_authtoken", o.option, "required when [DEFAULT] auth_strategy is keystone")
			}
		}
	default:
		bad("DEFAULT", "auth_strategy", "%q is not one of noauth, http_basic, keystone", d.AuthStrategy)
	}
	ks := c.KeystoneAuthtoken
	for _, u := range []struct{ option, value string }{{"auth_url", ks.AuthURL}, {"www_authenticate_uri", ks.WWWAuthenticateURI}} {
		if u.value == "" {
			continue
		}
		if p, err := url.Parse(u.value); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			bad("keystone_authtoken", u.option, "%q is not an http(s) URL", u.value)
		}
	}
	if ks.TokenCacheTime < 0 {
		bad("keystone_authtoken", "token_cache_time", "must not be negative")
	}
	if ks.TokenCacheSize < 1 {
		bad("keystone_authtoken", "token_cache_size", "must be positive")
	}
	if ks.HTTPTimeout <= 0 {
		bad("keystone_authtoken", "http_request_timeout", "must be positive")
	}
	if c.OsloPolicy.PolicyFile != "" {
		if _, err := os.Stat(c.OsloPolicy.PolicyFile); err != nil {
			bad("oslo_policy", "policy_file", "%v", err)
		}
	}
	if a.MaxRequestBodySize < 1 {
		bad("api", "max_request_body_size", "must be positive")
	}
	if a.MaxConcurrentLargeBodies < 1 {
		bad("api", "max_concurrent_large_bodies", "must be positive")
	}
	if a.RamdiskHeartbeatTimeout < 1 {
		bad("api", "ramdisk_heartbeat_timeout", "must be positive")
	}
	for _, p := range []struct {
		section, option string
		value           time.Duration
	}{
		{"api", "read_timeout", a.ReadTimeout}, {"api", "write_timeout", a.WriteTimeout}, {"api", "idle_timeout", a.IdleTimeout},
		{"deploy", "http_read_timeout", c.Deploy.HTTPReadTimeout}, {"deploy", "http_write_timeout", c.Deploy.HTTPWriteTimeout},
		{"deploy", "http_idle_timeout", c.Deploy.HTTPIdleTimeout},
	} {
		if p.value < 0 {
			bad(p.section, p.option, "must not be negative")
		}
	}
	// Cutting the response of a request still waiting for its conductor
	// would turn a slow answer into a dropped connection.
	if a.WriteTimeout > 0 && a.WriteTimeout <= c.RPC.ResponseTimeout {
		bad("api", "write_timeout", "%s must exceed [rpc] response_timeout %s", a.WriteTimeout, c.RPC.ResponseTimeout)
	}
	if a.MaxHeaderSize < 1 {
		bad("api", "max_header_size", "must be positive")
	}
	if c.Deploy.HTTPMaxHeaderSize < 1 {
		bad("deploy", "http_max_header_size", "must be positive")
	}

	if a.EnableSSLAPI && (c.SSL.CertFile == "" || c.SSL.KeyFile == "") {
		bad("ssl", "cert_file", "cert_file and key_file are required when [api] enable_ssl_api is true")
	}
	checkPair(bad, "ssl", "cert_file", "key_file", c.SSL.CertFile, c.SSL.KeyFile)

	db := c.Database
	if !strings.HasPrefix(db.Connection, "sqlite://") && !strings.HasPrefix(db.Connection, "mysql://") {
		bad("database", "connection", "must start with sqlite:// or mysql://")
	}
	if db.MaxPoolSize < 1 {
		bad("database", "max_pool_size", "must be positive")
	}
	if db.MaxOverflow < 0 {
		bad("database", "max_overflow", "must not be negative")
	}
	if db.ConnectionRecycleTime < 0 {
		bad("database", "connection_recycle_time", "must not be negative")
	}
	if db.ConnectionIdleTime < 0 {
		bad("database", "connection_idle_time", "must not be negative")
	}

	r := c.RPC
	switch r.Transport {
	case "inprocess":
	case "amqp":
		if !strings.HasPrefix(r.AMQPURL, "amqp://") && !strings.HasPrefix(r.AMQPURL, "amqps://") {
			bad("rpc", "amqp_url", "must start with amqp:// or amqps:// when transport is amqp")
		}
	default:
		bad("rpc", "transport", "%q is not one of inprocess, amqp", r.Transport)
	}
	if r.ResponseTimeout <= 0 {
		bad("rpc", "response_timeout", "must be positive")
	}
	om := c.OsloMessagingRabbit
	checkPair(bad, "oslo_messaging_rabbit", "ssl_cert_file", "ssl_key_file", om.SSLCertFile, om.SSLKeyFile)
	checkCA(bad, "oslo_messaging_rabbit", "ssl_ca_file", om.SSLCAFile)
	// Files given for a plain connection would be ignored, leaving the
	// operator believing the broker traffic is encrypted.
	if r.Transport == "amqp" && !c.AMQPTLS() && om.SSLCAFile+om.SSLCertFile+om.SSLKeyFile != "" {
		bad("oslo_messaging_rabbit", "ssl", "ssl_ca_file, ssl_cert_file and ssl_key_file need a TLS connection: set ssl = true or use an amqps:// [rpc] amqp_url")
	}

	k := c.Conductor
	if !conductorGroup.MatchString(k.ConductorGroup) {
		bad("conductor", "conductor_group", "%q may only hold letters, digits, _, . and - (at most 255)", k.ConductorGroup)
	}
	if len(k.EnabledHardwareTypes) == 0 {
		bad("conductor", "enabled_hardware_types", "must name at least one hardware type")
	}
	if k.WorkersPoolSize < 1 {
		bad("conductor", "workers_pool_size", "must be positive")
	}
	if k.PowerStateSyncTimeout <= 0 {
		bad("conductor", "power_state_sync_timeout", "must be positive")
	}
	if k.PeriodicMaxWorkers < 1 {
		bad("conductor", "periodic_max_workers", "must be positive")
	}
	if k.NodeLockedRetryAttempts < 0 {
		bad("conductor", "node_locked_retry_attempts", "must not be negative")
	}
	if k.PowerStateSyncMaxRetries < 0 {
		bad("conductor", "power_state_sync_max_retries", "must not be negative")
	}
	for _, p := range []struct {
		option   string
		positive bool
		value    int64
	}{
		{"heartbeat_interval", true, int64(k.HeartbeatInterval)},
		{"heartbeat_timeout", true, int64(k.HeartbeatTimeout)},
		{"check_provision_state_interval", true, int64(k.CheckProvisionStateInterval)},
		{"power_state_change_timeout", true, int64(k.PowerStateChangeTimeout)},
		{"soft_power_off_timeout", true, int64(k.SoftPowerOffTimeout)},
		{"node_locked_retry_interval", false, int64(k.NodeLockedRetryInterval)},
		{"deploy_callback_timeout", false, int64(k.DeployCallbackTimeout)},
		{"clean_callback_timeout", false, int64(k.CleanCallbackTimeout)},
		{"inspect_wait_timeout", false, int64(k.InspectWaitTimeout)},
		{"rescue_callback_timeout", false, int64(k.RescueCallbackTimeout)},
	} {
		switch {
		case p.positive && p.value <= 0:
			bad("conductor", p.option, "must be positive")
		case !p.positive && p.value < 0:
			bad("conductor", p.option, "must not be negative")
		}
	}
	// A timeout shorter than the heartbeat would declare live conductors
	// dead between two heartbeats, bouncing their nodes around the ring.
	if k.HeartbeatInterval > 0 && k.HeartbeatTimeout > 0 && k.HeartbeatTimeout <= k.HeartbeatInterval {
		bad("conductor", "heartbeat_timeout", "%s must exceed heartbeat_interval %s", k.HeartbeatTimeout, k.HeartbeatInterval)
	}

	i := c.IPMI
	if i.CommandRetryTimeout <= 0 {
		bad("ipmi", "command_retry_timeout", "must be positive")
	}
	if i.MinCommandInterval < 0 {
		bad("ipmi", "min_command_interval", "must not be negative")
	}
	if i.ConnectTimeout < time.Second || i.ConnectTimeout%time.Second != 0 {
		bad("ipmi", "connect_timeout", "%s is not a whole number of seconds of at least 1", i.ConnectTimeout)
	}
	if i.CipherSuite < 0 || i.CipherSuite > 17 {
		bad("ipmi", "cipher_suite", "%d is outside 0..17", i.CipherSuite)
	}
	if i.PowerStatePollInterval <= 0 {
		bad("ipmi", "power_state_poll_interval", "must be positive")
	}

	dp := c.Deploy
	if dp.HTTPURL != "" {
		if u, err := url.Parse(dp.HTTPURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("deploy", "http_url", "%q is not an http(s) URL", dp.HTTPURL)
		}
	}
	httpsURL := strings.HasPrefix(dp.HTTPURL, "https://")
	switch {
	case httpsURL && (dp.HTTPCertFile == "" || dp.HTTPKeyFile == ""):
		bad("deploy", "http_cert_file", "http_cert_file and http_key_file are required when http_url is https://")
	case !httpsURL && (dp.HTTPCertFile != "" || dp.HTTPKeyFile != ""):
		bad("deploy", "http_cert_file", "http_cert_file and http_key_file are used only when http_url is https://, and it is %q", dp.HTTPURL)
	}
	checkPair(bad, "deploy", "http_cert_file", "http_key_file", dp.HTTPCertFile, dp.HTTPKeyFile)
	if dp.DefaultBootOption != "local" && dp.DefaultBootOption != "netboot" {
		bad("deploy", "default_boot_option", "%q is not one of local, netboot", dp.DefaultBootOption)
	}
	for _, p := range []struct {
		section, option string
		value           *int
	}{
		{"deploy", "erase_devices_priority", dp.EraseDevicesPriority},
		{"deploy", "erase_devices_metadata_priority", dp.EraseDevicesMetadataPriority},
		{"agent", "agent_erase_devices_priority", c.Agent.AgentEraseDevicesPriority},
	} {
		if p.value != nil && *p.value < 0 {
			bad(p.section, p.option, "must not be negative")
		}
	}
	if dp.ShredRandomOverwriteIterations < 0 {
		bad("deploy", "shred_random_overwrite_iterations", "must not be negative")
	}
	if dp.ShredRandomOverwriteIterations == 0 && !dp.ShredFinalOverwriteWithZeros {
		bad("deploy", "shred_random_overwrite_iterations", "0 with shred_final_overwrite_with_zeros false would make erase_devices write nothing")
	}
	for _, n := range c.Conductor.ImageDownloadAllowedNetworks {
		if _, err := netip.ParsePrefix(n); err != nil {
			bad("conductor", "image_download_allowed_networks", "%q is not a network in CIDR notation (such as 10.20.0.0/16)", n)
		}
	}
	for _, p := range c.Conductor.FileURLAllowedPaths {
		if !filepath.IsAbs(p) {
			bad("conductor", "file_url_allowed_paths", "%q is not an absolute path", p)
		}
	}
	if dp.MaxImageSize < 0 {
		bad("deploy", "max_image_size", "must not be negative")
	}
	if c.PXE.MaxBootFileSize < 1 {
		bad("pxe", "max_boot_file_size", "must be positive")
	}
	if c.Conductor.APIURL != "" {
		if u, err := url.Parse(c.Conductor.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("conductor", "api_url", "%q is not an http(s) URL", c.Conductor.APIURL)
		}
	}
	if c.PXE.ImageCacheSize < 0 {
		bad("pxe", "image_cache_size", "must not be negative")
	}
	is := c.ISCSI
	if is.PortalPort < 1 || is.PortalPort > 65535 {
		bad("iscsi", "portal_port", "%d is outside 1..65535", is.PortalPort)
	}
	if is.MaxConcurrentWrites < 1 {
		bad("iscsi", "max_concurrent_writes", "must be positive")
	}
	if is.WriteWorkers < 1 {
		bad("iscsi", "write_workers", "must be positive")
	}
	g := c.Glance
	if g.EndpointOverride != "" {
		if u, err := url.Parse(g.EndpointOverride); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("glance", "endpoint_override", "%q is not an http(s) URL", g.EndpointOverride)
		}
	}
	switch g.AuthType {
	case "":
	case "none":
		if g.EndpointOverride == "" {
			bad("glance", "endpoint_override", "required when auth_type is none")
		}
	case "password":
		for _, o := range []struct{ option, value string }{
			{"auth_url", g.AuthURL}, {"username", g.Username}, {"password", g.Password}, {"project_name", g.ProjectName},
			{"user_domain_name", g.UserDomainName}, {"project_domain_name", g.ProjectDomainName},
		} {
			if o.value == "" {
				bad("glance", o.option, "required when auth_type is password")
			}
		}
	default:
		bad("glance", "auth_type", "%q is not one of none, password (or empty)", g.AuthType)
	}
	il := c.ILO
	if il.SwiftObjectExpiryTimeout < 1 {
		bad("ilo", "swift_object_expiry_timeout", "must be positive")
	}
	if il.ClientTimeout < 1 {
		bad("ilo", "client_timeout", "must be positive")
	}
	if il.ClientPort < 1 || il.ClientPort > 65535 {
		bad("ilo", "client_port", "%d is not a port number", il.ClientPort)
	}
	if il.PowerWait < 1 {
		bad("ilo", "power_wait", "must be positive")
	}
	if il.PowerRetry < 1 {
		bad("ilo", "power_retry", "must be positive")
	}
	if il.SwiftILOContainer == "" || strings.Contains(il.SwiftILOContainer, "/") {
		bad("ilo", "swift_ilo_container", "%q is not a container name", il.SwiftILOContainer)
	}
	sw := c.Swift
	required := []struct{ option, value string }{{"auth_url", sw.AuthURL}, {"username", sw.Username}, {"password", sw.Password}}
	switch sw.AuthType {
	case "":
	case "tempauth":
	case "password":
		required = append(required, []struct{ option, value string }{{"project_name", sw.ProjectName},
			{"user_domain_name", sw.UserDomainName}, {"project_domain_name", sw.ProjectDomainName}}...)
	default:
		bad("swift", "auth_type", "%q is not one of tempauth, password (or empty)", sw.AuthType)
	}
	if sw.AuthType == "tempauth" || sw.AuthType == "password" {
		for _, o := range required {
			if o.value == "" {
				bad("swift", o.option, "required when auth_type is %s", sw.AuthType)
			}
		}
	}
	if sw.AuthURL != "" {
		if u, err := url.Parse(sw.AuthURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("swift", "auth_url", "%q is not an http(s) URL", sw.AuthURL)
		}
	}
	return errors.Join(problems...)
}

// checkPair reports a certificate given without its key or the other way
// round, and files that are not a readable, matching pair.
func checkPair(bad func(section, option, format string, args ...any), section, certOption, keyOption, certFile, keyFile string) {
	switch {
	case certFile == "" && keyFile == "":
	case certFile == "":
		bad(section, certOption, "required when %s is set", keyOption)
	case keyFile == "":
		bad(section, keyOption, "required when %s is set", certOption)
	default:
		if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			bad(section, certOption, "not a usable certificate and key (%s, %s): %v", certFile, keyFile, err)
		}
	}
}

// checkCA reports a CA file that is unreadable or holds no certificate.
func checkCA(bad func(section, option, format string, args ...any), section, option, caFile string) {
	if caFile == "" {
		return
	}
	data, err := os.ReadFile(caFile)
	if err != nil {
		bad(section, option, "%v", err)
		return
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		bad(section, option, "%s holds no PEM certificate", caFile)
	}
}
