package config

import (
	"strings"
	"time"
)

// IPMI configures the ipmi hardware type, which drives BMCs with ipmitool.
type IPMI struct {
	CommandRetryTimeout time.Duration `ini:"ipmi.command_retry_timeout" default:"60" range:">0" help:"Longest time one IPMI command may take, retries of transient failures included; an ipmitool still running then is killed."`
	MinCommandInterval  time.Duration `ini:"ipmi.min_command_interval" default:"5" range:">=0" help:"Shortest pause between two commands sent to the same BMC; many BMCs fail under faster traffic."`
	// ConnectTimeout is ipmitool's -N: it has whole-second resolution.
	ConnectTimeout     time.Duration `ini:"ipmi.connect_timeout" default:"5" help:"How long ipmitool waits for each answer of the BMC before it resends or gives up (ipmitool -N, whole seconds)."`
	UseIpmitoolRetries bool          `ini:"ipmi.use_ipmitool_retries" help:"Let ipmitool resend unanswered requests for up to command_retry_timeout (ipmitool -R); otherwise it tries once and Ferric retries transient failures itself."`
	CipherSuite        int           `ini:"ipmi.cipher_suite" default:"3" range:"0..17" help:"IPMI 2.0 cipher suite (ipmitool -C) used unless a node's driver_info sets ipmi_cipher_suite."`
	// PowerStatePollInterval paces the reads while waiting for a power
	// change; min_command_interval still applies on top.
	PowerStatePollInterval        time.Duration `ini:"ipmi.power_state_poll_interval" default:"1" range:">0" help:"How often the power state is read while waiting for a power change to take effect."`
	DisableBootTimeout            bool          `ini:"ipmi.disable_boot_timeout" default:"true" help:"Before setting a boot device, ask the BMC to keep it beyond the 60 seconds the IPMI specification allows; a BMC that refuses only causes a warning."`
	AdditionalRetryableIPMIErrors []string      `ini:"ipmi.additional_retryable_ipmi_errors" help:"More ipmitool error texts (substrings) that mark a failed command as transient, to be retried."`
}

func (i IPMI) validate(bad report) {
	if i.ConnectTimeout < time.Second || i.ConnectTimeout%time.Second != 0 {
		bad("connect_timeout", "%s is not a whole number of seconds of at least 1", i.ConnectTimeout)
	}
}

// ILO holds the iLO drivers' options: how the iLO is reached and how a
// power change is confirmed (Ironic's names and units: whole seconds), and
// where virtual media (the parameter floppy, boot ISOs) are published for
// the BMC to fetch.
type ILO struct {
	ClientTimeout     int    `ini:"ilo.client_timeout" default:"60" range:">0" help:"Seconds each request to an iLO may take; driver_info client_timeout overrides it."`
	ClientPort        int    `ini:"ilo.client_port" default:"443" range:"1..65535" help:"HTTPS port of the iLO; driver_info client_port overrides it."`
	CAFile            string `ini:"ilo.ca_file" help:"CA bundle that verifies iLO certificates; empty: the system's roots. driver_info ca_file overrides it. Verification is off only for nodes whose driver_info sets ilo_verify_ca to false."`
	PowerWait         int    `ini:"ilo.power_wait" default:"2" range:">0" help:"Seconds between reads of the power state after a power action (iLO and Redfish nodes)."`
	PowerRetry        int    `ini:"ilo.power_retry" default:"6" range:">0" help:"Reads of the power state after a power action before it counts as failed (iLO and Redfish nodes)."`
	SwiftILOContainer string `ini:"ilo.swift_ilo_container" default:"ironic_ilo_container" help:"Swift container that holds the virtual media objects (image-<node uuid> floppies, boot-<node uuid> ISOs); created when missing."`
	// SwiftObjectExpiryTimeout is Ironic's option, in whole seconds.
	SwiftObjectExpiryTimeout int  `ini:"ilo.swift_object_expiry_timeout" default:"900" range:">0" help:"Seconds a published floppy lives (Swift X-Delete-After, or the web server's expiry) and every temporary URL handed to a BMC stays valid."`
	UseWebServerForImages    bool `ini:"ilo.use_web_server_for_images" default:"true" help:"Publish virtual media on the conductor's boot file server ([deploy] http_url, files under [deploy] http_root/vmedia, URLs signed with a per-conductor secret) instead of Swift."`
}

func (i ILO) validate(bad report) {
	if i.SwiftILOContainer == "" || strings.Contains(i.SwiftILOContainer, "/") {
		bad("swift_ilo_container", "%q is not a container name", i.SwiftILOContainer)
	}
}

// Swift is how the conductor reaches the Object Storage service that
// publishes virtual media when [ilo] use_web_server_for_images is off.
type Swift struct {
	// AuthType tempauth is Swift's own v1 authentication (tempauth,
	// swauth); password is Keystone v3, whose catalog gives the endpoint.
	AuthType          string `ini:"swift.auth_type" choices:",tempauth,password" help:"How to authenticate to Swift: tempauth (Swift v1 auth: auth_url is the proxy's /auth/v1.0, username is account:user, password its key) or password (Keystone v3, the object-store endpoint from the catalog). Empty: no Swift."`
	AuthURL           string `ini:"swift.auth_url" format:"url" required:"auth_type=tempauth,password" help:"Swift v1 auth URL (tempauth) or Keystone v3 URL (password)."`
	Username          string `ini:"swift.username" required:"auth_type=tempauth,password" help:"User: account:user for tempauth, the Keystone user for password."`
	Password          string `ini:"swift.password" required:"auth_type=tempauth,password" help:"The user's key (tempauth) or password (Keystone)."`
	ProjectName       string `ini:"swift.project_name" required:"auth_type=password" help:"Project the token is scoped to (auth_type password)."`
	UserDomainName    string `ini:"swift.user_domain_name" default:"Default" required:"auth_type=password" help:"Domain of the user (auth_type password)."`
	ProjectDomainName string `ini:"swift.project_domain_name" default:"Default" required:"auth_type=password" help:"Domain of the project (auth_type password)."`
	RegionName        string `ini:"swift.region_name" help:"Region whose object-store endpoint is taken from the catalog (auth_type password)."`
}
