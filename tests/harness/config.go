package harness

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ferricbm/ferric/rpc/rpctest"
)

// Config is a Ferric INI file: section -> option -> value.
type Config map[string]map[string]string

// Set sets one option and returns the config for chaining.
func (c Config) Set(section, option string, value any) Config {
	if c[section] == nil {
		c[section] = map[string]string{}
	}
	switch v := value.(type) {
	case time.Duration:
		c[section][option] = Seconds(v)
	case []string:
		c[section][option] = strings.Join(v, ",")
	default:
		c[section][option] = fmt.Sprint(v)
	}
	return c
}

// Seconds renders a duration the way Ironic's options are written: whole
// seconds.
func Seconds(d time.Duration) string {
	return fmt.Sprint(int64((d + time.Second - 1) / time.Second))
}

// Clone returns a deep copy, so a base config can be specialised per process.
func (c Config) Clone() Config {
	out := Config{}
	for s, opts := range c {
		out[s] = map[string]string{}
		for k, v := range opts {
			out[s][k] = v
		}
	}
	return out
}

// Write writes the config as an INI file, DEFAULT first.
func (c Config) Write(path string) error {
	sections := make([]string, 0, len(c))
	for s := range c {
		if s != "DEFAULT" {
			sections = append(sections, s)
		}
	}
	sort.Strings(sections)
	if _, ok := c["DEFAULT"]; ok {
		sections = append([]string{"DEFAULT"}, sections...)
	}
	var b strings.Builder
	for _, s := range sections {
		fmt.Fprintf(&b, "[%s]\n", s)
		keys := slices.Sorted(maps.Keys(c[s]))
		for _, k := range keys {
			fmt.Fprintf(&b, "%s = %s\n", k, c[s][k])
		}
		b.WriteString("\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// Timings are the intervals the suites shorten so failures and takeovers
// happen within seconds.
type Timings struct {
	HeartbeatInterval     time.Duration
	HeartbeatTimeout      time.Duration
	CheckInterval         time.Duration
	CallbackTimeout       time.Duration
	HashRingResetInterval time.Duration
	RPCResponseTimeout    time.Duration
}

// FastTimings suit every suite: a dead conductor is noticed within ~5 s.
var FastTimings = Timings{
	HeartbeatInterval:     time.Second,
	HeartbeatTimeout:      5 * time.Second,
	CheckInterval:         time.Second,
	CallbackTimeout:       20 * time.Second,
	HashRingResetInterval: time.Second,
	RPCResponseTimeout:    10 * time.Second,
}

// BaseConfig is the config shared by every process of one deployment.
func BaseConfig(connection, transport string, t Timings) Config {
	c := Config{}
	c.Set("DEFAULT", "debug", true).
		Set("DEFAULT", "hash_ring_reset_interval", t.HashRingResetInterval).
		Set("database", "connection", connection).
		Set("rpc", "transport", transport).
		Set("rpc", "response_timeout", t.RPCResponseTimeout).
		Set("conductor", "enabled_hardware_types", []string{"fake-hardware"}).
		Set("conductor", "heartbeat_interval", t.HeartbeatInterval).
		Set("conductor", "heartbeat_timeout", t.HeartbeatTimeout).
		Set("conductor", "check_provision_state_interval", t.CheckInterval).
		Set("conductor", "sync_power_state_interval", t.CheckInterval).
		Set("conductor", "sync_local_state_interval", t.CheckInterval).
		Set("conductor", "deploy_callback_timeout", t.CallbackTimeout).
		Set("conductor", "clean_callback_timeout", t.CallbackTimeout).
		Set("conductor", "node_locked_retry_interval", time.Second)
	if transport == "amqp" {
		c.Set("rpc", "amqp_url", AMQPURL())
	}
	return c
}

// AMQPURL is the broker the suites use (rpctest.EnvAMQP, shared with the
// rpc unit specs).
func AMQPURL() string { return rpctest.AMQPURL() }
