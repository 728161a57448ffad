// Package config holds Ferric's configuration: one struct, filled from
// defaults, then an INI file (Ironic-style sections and option names, so
// operators can carry their knowledge over), then FERRIC_<SECTION>_<OPTION>
// environment variables.
package config

import (
	"os"
	"time"
)

// Config is the whole configuration. The `ini` tag is "section.option".
type Config struct {
	Default   Default
	API       API
	Database  Database
	RPC       RPC
	Conductor Conductor
}

type Default struct {
	// Host is this process's name in the conductor registry and the value
	// it writes into nodes.reservation. Defaults to the hostname.
	Host  string `ini:"DEFAULT.host"`
	Debug bool   `ini:"DEFAULT.debug"`
	// LogFormat is "text" or "json".
	LogFormat string `ini:"DEFAULT.log_format"`
	// HashPartitionExponent: the ring places 2^N points per conductor.
	HashPartitionExponent int           `ini:"DEFAULT.hash_partition_exponent"`
	HashRingResetInterval time.Duration `ini:"DEFAULT.hash_ring_reset_interval"`
}

type API struct {
	HostIP string `ini:"api.host_ip"`
	Port   int    `ini:"api.port"`
	// PublicEndpoint is the base URL used in links; empty means the
	// request's own scheme and host.
	PublicEndpoint string `ini:"api.public_endpoint"`
	MaxLimit       int    `ini:"api.max_limit"`
	// AuthStrategy is "noauth" or "http_basic".
	AuthStrategy            string `ini:"api.auth_strategy"`
	HTTPBasicAuthUserFile   string `ini:"api.http_basic_auth_user_file"`
	MaxRequestBodySize      int64  `ini:"api.max_request_body_size"`
	RestrictLookup          bool   `ini:"api.restrict_lookup"`
	RamdiskHeartbeatTimeout int    `ini:"api.ramdisk_heartbeat_timeout"`
}

type Database struct {
	// Connection is "sqlite://<path>" or "mysql://user:pass@host:port/db".
	Connection string `ini:"database.connection"`
	// MaxOpenConns bounds the pool (MySQL); SQLite always uses one writer.
	MaxOpenConns int `ini:"database.max_open_conns"`
}

type RPC struct {
	// Transport is "inprocess" (single-process mode) or "amqp".
	Transport       string        `ini:"rpc.transport"`
	AMQPURL         string        `ini:"rpc.amqp_url"`
	ResponseTimeout time.Duration `ini:"rpc.response_timeout"`
}

type Conductor struct {
	ConductorGroup              string        `ini:"conductor.conductor_group"`
	EnabledHardwareTypes        []string      `ini:"conductor.enabled_hardware_types"`
	WorkersPoolSize             int           `ini:"conductor.workers_pool_size"`
	HeartbeatInterval           time.Duration `ini:"conductor.heartbeat_interval"`
	HeartbeatTimeout            time.Duration `ini:"conductor.heartbeat_timeout"`
	NodeLockedRetryAttempts     int           `ini:"conductor.node_locked_retry_attempts"`
	NodeLockedRetryInterval     time.Duration `ini:"conductor.node_locked_retry_interval"`
	CheckProvisionStateInterval time.Duration `ini:"conductor.check_provision_state_interval"`
	DeployCallbackTimeout       time.Duration `ini:"conductor.deploy_callback_timeout"`
	CleanCallbackTimeout        time.Duration `ini:"conductor.clean_callback_timeout"`
	SyncPowerStateInterval      time.Duration `ini:"conductor.sync_power_state_interval"`
	PowerStateSyncMaxRetries    int           `ini:"conductor.power_state_sync_max_retries"`
	SyncLocalStateInterval      time.Duration `ini:"conductor.sync_local_state_interval"`
	PeriodicMaxWorkers          int           `ini:"conductor.periodic_max_workers"`
	PowerStateChangeTimeout     time.Duration `ini:"conductor.power_state_change_timeout"`
	SoftPowerOffTimeout         time.Duration `ini:"conductor.soft_power_off_timeout"`
	ForcePowerStateDuringSync   bool          `ini:"conductor.force_power_state_during_sync"`
	AutomatedClean              bool          `ini:"conductor.automated_clean"`
	AllowDeletingAvailableNodes bool          `ini:"conductor.allow_deleting_available_nodes"`
}

// Defaults are the embedded single-process defaults: SQLite under ./var,
// in-process RPC, no authentication, listening on 127.0.0.1:6385.
func Defaults() Config {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return Config{
		Default: Default{
			Host:                  host,
			LogFormat:             "text",
			HashPartitionExponent: 5,
			HashRingResetInterval: 15 * time.Second,
		},
		API: API{
			HostIP:                  "127.0.0.1",
			Port:                    6385,
			MaxLimit:                1000,
			AuthStrategy:            "noauth",
			MaxRequestBodySize:      1 << 20,
			RestrictLookup:          true,
			RamdiskHeartbeatTimeout: 300,
		},
		Database: Database{
			Connection:   "sqlite://var/ferric.db",
			MaxOpenConns: 32,
		},
		RPC: RPC{
			Transport:       "inprocess",
			AMQPURL:         "amqp://guest:guest@127.0.0.1:5672/",
			ResponseTimeout: 60 * time.Second,
		},
		Conductor: Conductor{
			EnabledHardwareTypes:        []string{"fake-hardware"},
			WorkersPoolSize:             100,
			HeartbeatInterval:           10 * time.Second,
			HeartbeatTimeout:            60 * time.Second,
			NodeLockedRetryAttempts:     3,
			NodeLockedRetryInterval:     time.Second,
			CheckProvisionStateInterval: 60 * time.Second,
			DeployCallbackTimeout:       1800 * time.Second,
			CleanCallbackTimeout:        1800 * time.Second,
			SyncPowerStateInterval:      60 * time.Second,
			PowerStateSyncMaxRetries:    3,
			SyncLocalStateInterval:      180 * time.Second,
			PeriodicMaxWorkers:          8,
			PowerStateChangeTimeout:     60 * time.Second,
			SoftPowerOffTimeout:         600 * time.Second,
			ForcePowerStateDuringSync:   true,
			AutomatedClean:              true,
			AllowDeletingAvailableNodes: true,
		},
	}
}
