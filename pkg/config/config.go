// Package config holds Ferric's configuration: one struct, filled from
// defaults, then an INI file (Ironic-style sections and option names, so
// operators can carry their knowledge over), then FERRIC_<SECTION>_<OPTION>
// environment variables.
package config

import (
	"strings"
	"time"
)

// Config is the whole configuration. Each section is a struct field; each
// option is one field, and its tags are all there is to say about it:
//
//   - ini:"section.option" names it in the file and the environment;
//   - help is its line of documentation;
//   - default is its default, written as in the file (none: the zero
//     value); sample stands in for a default that depends on the machine;
//   - range is ">0", ">=0" or "lo..hi" (numbers and durations);
//   - choices lists the values a string may take (a leading comma admits
//     the empty string);
//   - format is url (http or https), cidr or abspath (each item of a list);
//   - required is "true", or "option=v1,v2" (or "section.option=...") for
//     an option needed only while another holds one of those values.
//
// Loading, Defaults, Validate, the example file and the documentation's
// option table all work from these tags. A rule between options that tags
// cannot say is a validate method beside the section's struct (or, across
// sections, Config.validate).
type Config struct {
	Default  Default
	API      API
	SSL      SSL
	Database Database
	RPC      RPC
	// OsloMessagingRabbit carries oslo.messaging's section name for the
	// broker connection's TLS options.
	OsloMessagingRabbit OsloMessagingRabbit
	Conductor           Conductor
	IPMI                IPMI
	Deploy              Deploy
	PXE                 PXE
	ISCSI               ISCSI
	Agent               Agent
	Glance              Glance
	ILO                 ILO
	Swift               Swift
	// KeystoneAuthtoken and OsloPolicy carry Ironic's section names
	// (keystonemiddleware's and oslo.policy's).
	KeystoneAuthtoken KeystoneAuthtoken
	OsloPolicy        OsloPolicy
}

type Default struct {
	// Host is this process's name in the conductor registry and the value
	// it writes into nodes.reservation. Defaults to the hostname.
	Host                  string        `ini:"DEFAULT.host" required:"true" sample:"<hostname>" help:"Name of this process in the conductor registry and in node reservations; must be unique per conductor."`
	Debug                 bool          `ini:"DEFAULT.debug" help:"Log at debug level instead of info."`
	LogFormat             string        `ini:"DEFAULT.log_format" default:"text" choices:"text,json" help:"Log line format: text or json."`
	HashPartitionExponent int           `ini:"DEFAULT.hash_partition_exponent" default:"5" range:"0..16" help:"The hash ring places 2^N points per conductor; all services must agree."`
	HashRingResetInterval time.Duration `ini:"DEFAULT.hash_ring_reset_interval" default:"15" range:">0" help:"How long a cached hash ring is used before it is rebuilt from the conductor registry; it is rebuilt sooner when a member's heartbeat expires."`
	// AuthStrategy is in [DEFAULT] because Ironic keeps it there (Ferric
	// first had it in [api]).
	AuthStrategy string `ini:"DEFAULT.auth_strategy" default:"noauth" choices:"noauth,http_basic,keystone" help:"noauth (everyone is an administrator), http_basic (every user of [api] http_basic_auth_user_file is an administrator) or keystone (X-Auth-Token checked against Keystone, roles and scope checked by the policy rules)."`
}

// EraseDevicesPriority is the erase_devices priority in force: [deploy]
// erase_devices_priority, else the deprecated [agent]
// agent_erase_devices_priority, in which case deprecated says so, for the
// caller to warn. nil keeps the ramdisk's priority.
func (c Config) EraseDevicesPriority() (priority *int, deprecated string) {
	if c.Deploy.EraseDevicesPriority != nil || c.Agent.AgentEraseDevicesPriority == nil {
		return c.Deploy.EraseDevicesPriority, ""
	}
	return c.Agent.AgentEraseDevicesPriority,
		"[agent] agent_erase_devices_priority is deprecated: set [deploy] erase_devices_priority instead"
}

// AMQPTLS reports whether the broker connection is to use TLS: an
// amqps:// [rpc] amqp_url, or [oslo_messaging_rabbit] ssl.
func (c Config) AMQPTLS() bool {
	return c.OsloMessagingRabbit.SSL || strings.HasPrefix(c.RPC.AMQPURL, "amqps://")
}
