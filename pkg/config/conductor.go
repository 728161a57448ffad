package config

import (
	"net/netip"
	"regexp"
	"time"
)

type Conductor struct {
	ConductorGroup              string        `ini:"conductor.conductor_group" help:"Group of conductors this conductor belongs to; nodes with the same conductor_group are managed by it."`
	EnabledHardwareTypes        []string      `ini:"conductor.enabled_hardware_types" default:"fake-hardware" required:"true" help:"Hardware types (drivers) this conductor serves: fake-hardware, ipmi, pxe_ipmitool, ilo, iscsi_ilo, redfish."`
	MetricsListen               string        `ini:"conductor.metrics_listen" help:"host:port where the conductor serves /metrics (Prometheus), unauthenticated; empty: not served."`
	WorkersPoolSize             int           `ini:"conductor.workers_pool_size" default:"100" range:">0" help:"Size of the worker pool for background tasks; work beyond it is refused with 503."`
	HeartbeatInterval           time.Duration `ini:"conductor.heartbeat_interval" default:"10" range:">0" help:"How often the conductor refreshes its registry entry."`
	HeartbeatTimeout            time.Duration `ini:"conductor.heartbeat_timeout" default:"60" range:">0" help:"A conductor whose entry is older than this is considered dead."`
	NodeLockedRetryAttempts     int           `ini:"conductor.node_locked_retry_attempts" default:"3" range:">=0" help:"Attempts to take a node lock held by someone else before answering 409."`
	NodeLockedRetryInterval     time.Duration `ini:"conductor.node_locked_retry_interval" default:"1" range:">=0" help:"Pause between node lock attempts."`
	CheckProvisionStateInterval time.Duration `ini:"conductor.check_provision_state_interval" default:"60" range:">0" help:"How often callback timeouts are checked."`
	DeployCallbackTimeout       time.Duration `ini:"conductor.deploy_callback_timeout" default:"1800" range:">=0" help:"How long a node may wait for the deploy ramdisk to call back; 0 disables."`
	CleanCallbackTimeout        time.Duration `ini:"conductor.clean_callback_timeout" default:"1800" range:">=0" help:"How long a node may wait for the cleaning ramdisk to call back; 0 disables."`
	InspectWaitTimeout          time.Duration `ini:"conductor.inspect_wait_timeout" default:"1800" range:">=0" help:"How long a node may stay in inspect wait; 0 disables."`
	RescueCallbackTimeout       time.Duration `ini:"conductor.rescue_callback_timeout" default:"1800" range:">=0" help:"How long a node may wait for the rescue ramdisk to call back; 0 disables."`
	SyncPowerStateInterval      time.Duration `ini:"conductor.sync_power_state_interval" default:"60" help:"How often power states are compared with the hardware; 0 or less disables."`
	PowerStateSyncTimeout       time.Duration `ini:"conductor.power_state_sync_timeout" default:"30" range:">0" help:"Longest a power state sync waits for one node's BMC to answer; a BMC that hangs counts as a failed read instead of holding a sync worker."`
	PowerStateSyncMaxRetries    int           `ini:"conductor.power_state_sync_max_retries" default:"3" range:">=0" help:"Failed power state reads in a row before a node is put into maintenance."`
	CheckAllocationsInterval    time.Duration `ini:"conductor.check_allocations_interval" default:"60" range:">=0" help:"How often allocations left allocating by a dead conductor are taken over; 0 disables, and such allocations then wait for their conductor to come back."`
	SyncLocalStateInterval      time.Duration `ini:"conductor.sync_local_state_interval" default:"180" help:"How often active nodes whose conductor went away are taken over; 0 or less disables."`
	PeriodicMaxWorkers          int           `ini:"conductor.periodic_max_workers" default:"8" range:">0" help:"Nodes one periodic task run may act on in parallel."`
	PowerStateChangeTimeout     time.Duration `ini:"conductor.power_state_change_timeout" default:"60" range:">0" help:"How long to wait for a node to reach the requested power state."`
	SoftPowerOffTimeout         time.Duration `ini:"conductor.soft_power_off_timeout" default:"600" range:">0" help:"Default timeout of soft power off and soft reboot."`
	ForcePowerStateDuringSync   bool          `ini:"conductor.force_power_state_during_sync" default:"true" help:"During power sync, force the hardware back to the recorded power state instead of recording the hardware state."`
	AutomatedClean              bool          `ini:"conductor.automated_clean" default:"true" help:"Clean nodes when they are provided and after they are undeployed."`
	AllowDeletingAvailableNodes bool          `ini:"conductor.allow_deleting_available_nodes" default:"true" help:"Allow deleting nodes in the available state."`
	AllowVolumeDeleteUnlessOff  bool          `ini:"conductor.allow_volume_delete_unless_powered_off" help:"Also allow deleting a volume connector or target of a node that is not powered off when the node is in manageable, enroll or adopt failed (the exemption of Ironic 37.0). Off: deletes, like updates, need the node powered off."`
	APIURL                      string        `ini:"conductor.api_url" format:"url" help:"Base URL of the Ferric API as deploy ramdisks reach it (ironic_api_url / ipa-api-url on their kernel command line); required by the iscsi deploy interface."`
	// FileURLAllowedPaths is empty by default: a conductor holds database
	// and AMQP credentials (in its configuration, in /proc/self/environ),
	// and a node's owner must not be able to name such a file as a kernel
	// or an image and have it copied where it can read it.
	// ImageDownloadAllowedNetworks is empty by default: a node's owner
	// names the URLs the conductor downloads, and must not reach the
	// conductor's own services, the metadata service or the management
	// network through it.
	ImageDownloadAllowedNetworks []string `ini:"conductor.image_download_allowed_networks" format:"cidr" help:"Networks (CIDR, e.g. 10.20.0.0/16) the conductor may download images, kernels, ramdisks and config drives from although they are loopback, link-local, unspecified, multicast or private (RFC 1918, fc00::/7) addresses. The check is made on the address each connection goes to, after name resolution and on every redirect; downloads use no HTTP proxy. Empty (the default): only public addresses. Production with an image server on the provisioning or management network must list that server's network, and only it."`
	FileURLAllowedPaths          []string `ini:"conductor.file_url_allowed_paths" format:"abspath" help:"Directories whose files image_source, kernel, ramdisk, deploy_kernel and deploy_ramdisk may name as absolute paths or file:// URLs; a path is allowed only if, after resolving symbolic links and .., it lies under one of them. Empty (the default): only http(s) URLs and Glance images, since Ferric has no directory of its own that holds nothing but boot images and every file the conductor can read would otherwise be copyable to the TFTP root or a node's disk."`
}

// conductorGroup is Ironic's rule for conductor group names.
var conductorGroup = regexp.MustCompile(`^[a-zA-Z0-9_.-]{0,255}$`)

func (c Conductor) validate(bad report) {
	if !conductorGroup.MatchString(c.ConductorGroup) {
		bad("conductor_group", "%q may only hold letters, digits, _, . and - (at most 255)", c.ConductorGroup)
	}
	// A timeout shorter than the heartbeat would declare live conductors
	// dead between two heartbeats, bouncing their nodes around the ring.
	if c.HeartbeatInterval > 0 && c.HeartbeatTimeout > 0 && c.HeartbeatTimeout <= c.HeartbeatInterval {
		bad("heartbeat_timeout", "%s must exceed heartbeat_interval %s", c.HeartbeatTimeout, c.HeartbeatInterval)
	}
}

// DownloadNetworks are image_download_allowed_networks parsed; Validate
// refuses a configuration with one that does not parse.
func (c Conductor) DownloadNetworks() []netip.Prefix {
	var out []netip.Prefix
	for _, n := range c.ImageDownloadAllowedNetworks {
		if p, err := netip.ParsePrefix(n); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}
