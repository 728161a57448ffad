// Package config holds Ferric's configuration: one struct, filled from
// defaults, then an INI file (Ironic-style sections and option names, so
// operators can carry their knowledge over), then FERRIC_<SECTION>_<OPTION>
// environment variables.
package config

import (
	"net/netip"
	"os"
	"strings"
	"time"
)

// Config is the whole configuration. Each section is a struct field; each
// option is a field tagged `ini:"section.option"` with a `help` text (and a
// `sample` when the default depends on the machine). Loading, the example
// file and validation all work from these tags, so adding an option is
// adding one field (plus its default and any validation rule).
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
	Host  string `ini:"DEFAULT.host" sample:"<hostname>" help:"Name of this process in the conductor registry and in node reservations; must be unique per conductor."`
	Debug bool   `ini:"DEFAULT.debug" help:"Log at debug level instead of info."`
	// LogFormat is "text" or "json".
	LogFormat string `ini:"DEFAULT.log_format" help:"Log line format: text or json."`
	// HashPartitionExponent: the ring places 2^N points per conductor.
	HashPartitionExponent int           `ini:"DEFAULT.hash_partition_exponent" help:"The hash ring places 2^N points per conductor; all services must agree."`
	HashRingResetInterval time.Duration `ini:"DEFAULT.hash_ring_reset_interval" help:"How long a cached hash ring is used before it is rebuilt from the conductor registry; it is rebuilt sooner when a member's heartbeat expires."`
	// AuthStrategy is "noauth", "http_basic" or "keystone"; Ironic keeps
	// it in [DEFAULT] too.
	AuthStrategy string `ini:"DEFAULT.auth_strategy" help:"noauth (everyone is an administrator), http_basic (every user of [api] http_basic_auth_user_file is an administrator) or keystone (X-Auth-Token checked against Keystone, roles and scope checked by the policy rules)."`
}

type API struct {
	HostIP string `ini:"api.host_ip" help:"Address the API listens on."`
	Port   int    `ini:"api.port" help:"Port the API listens on."`
	// PublicEndpoint is the base URL used in links; empty means the
	// request's own scheme and host.
	PublicEndpoint string `ini:"api.public_endpoint" help:"Base URL used in links; empty means the scheme and host of each request."`
	MaxLimit       int    `ini:"api.max_limit" help:"Largest number of items one list request returns."`
	// AuthStrategy is where Ferric first had [DEFAULT] auth_strategy;
	// Load copies it there, so nothing else reads it.
	AuthStrategy          string `ini:"api.auth_strategy" help:"Deprecated: use [DEFAULT] auth_strategy. Accepted when [DEFAULT] auth_strategy is unset or has the same value."`
	HTTPBasicAuthUserFile string `ini:"api.http_basic_auth_user_file" help:"Apache-style htpasswd file (bcrypt) used by http_basic."`
	MaxRequestBodySize    int64  `ini:"api.max_request_body_size" help:"Largest accepted request body, in bytes."`
	// MaxConcurrentLargeBodies bounds the provisioning requests whose body
	// exceeds MaxRequestBodySize (config drives of up to 64 MiB) that are
	// read at once; each spools its drive to a temporary file.
	MaxConcurrentLargeBodies int  `ini:"api.max_concurrent_large_bodies" help:"How many provisioning requests with a body larger than max_request_body_size (config drives, up to 64 MiB) are read at once; more get 503 and may retry."`
	RestrictLookup           bool `ini:"api.restrict_lookup" help:"Allow ramdisk lookups only for nodes in states where a ramdisk is expected."`
	RamdiskHeartbeatTimeout  int  `ini:"api.ramdisk_heartbeat_timeout" help:"Longest interval, in seconds, between ramdisk heartbeats; sent to the ramdisk in the lookup response."`
	// The server limits keep a slow or hostile client from holding a
	// connection (and its goroutine) for ever.
	ReadTimeout   time.Duration `ini:"api.read_timeout" help:"Longest time to read one request, headers and body; a client trickling its request is disconnected then. 0: no limit."`
	WriteTimeout  time.Duration `ini:"api.write_timeout" help:"Longest time from the end of a request's headers to the end of its response; must exceed [rpc] response_timeout, which a request may wait for a conductor. 0: no limit."`
	IdleTimeout   time.Duration `ini:"api.idle_timeout" help:"How long a kept-alive connection may wait for its next request. 0: the read_timeout."`
	MaxHeaderSize int           `ini:"api.max_header_size" help:"Largest accepted request line and headers, in bytes; larger ones are answered 431."`
	// PublicMetrics is the practice of Kubernetes scrapers, which carry no
	// credentials; the metrics hold no node names or secrets.
	PublicMetrics bool `ini:"api.public_metrics" help:"Serve /metrics (Prometheus) without authentication, as /healthz is; false: only to authenticated administrators."`
	EnableSSLAPI  bool `ini:"api.enable_ssl_api" help:"Serve the API over HTTPS with the certificate and key of [ssl] cert_file and key_file, which are read again whenever they change."`
}

// SSL is the API server's certificate, in oslo.service's section.
type SSL struct {
	CertFile string `ini:"ssl.cert_file" help:"PEM certificate (chain) the API presents with [api] enable_ssl_api; replacing the file takes effect at the next connection, no restart needed."`
	KeyFile  string `ini:"ssl.key_file" help:"PEM private key of cert_file."`
}

type Database struct {
	// Connection is "sqlite://<path>" or "mysql://user:pass@host:port/db".
	Connection string `ini:"database.connection" help:"sqlite://<path> or mysql://user:pass@host:port/dbname[?timeout=10s]; query parameters max_open_conns, max_idle_conns and conn_max_lifetime override the pool options below; ssl_ca=<PEM CA file> (and ssl_cert, ssl_key for a client certificate) make every connection TLS, the server's certificate verified against the CA and the URL's host."`
	// Each process holds its own pool: replicas × (max_pool_size +
	// max_overflow) must stay below the server's max_connections
	// (docs/scale.md).
	MaxPoolSize           int           `ini:"database.max_pool_size" help:"MySQL connections a process keeps open between requests (each until connection_idle_time)."`
	MaxOverflow           int           `ini:"database.max_overflow" help:"MySQL connections a process may open beyond max_pool_size under load; not kept when idle. 0 (the default): requests beyond max_pool_size wait for a free connection. Every process of every service may hold max_pool_size + max_overflow: keep their sum below the server's max_connections."`
	ConnectionRecycleTime time.Duration `ini:"database.connection_recycle_time" help:"Seconds after which a MySQL connection is closed and replaced; keep it below the server's wait_timeout. 0: never."`
	ConnectionIdleTime    time.Duration `ini:"database.connection_idle_time" help:"Seconds a MySQL connection may stay idle before it is closed, so the pool shrinks after a burst. 0: never."`
}

type RPC struct {
	// Transport is "inprocess" (single-process mode) or "amqp".
	Transport       string        `ini:"rpc.transport" help:"inprocess (API and conductor in one process) or amqp."`
	AMQPURL         string        `ini:"rpc.amqp_url" help:"RabbitMQ URL used by the amqp transport."`
	ResponseTimeout time.Duration `ini:"rpc.response_timeout" help:"How long an RPC call waits for its reply."`
}

// OsloMessagingRabbit holds the TLS options of the RabbitMQ connection.
type OsloMessagingRabbit struct {
	SSL         bool   `ini:"oslo_messaging_rabbit.ssl" help:"Connect to RabbitMQ over TLS even though [rpc] amqp_url says amqp:// (same host and port); an amqps:// URL always does."`
	SSLCAFile   string `ini:"oslo_messaging_rabbit.ssl_ca_file" help:"PEM CA bundle that verifies the broker's certificate; empty: the system's roots."`
	SSLCertFile string `ini:"oslo_messaging_rabbit.ssl_cert_file" help:"PEM client certificate presented to a broker that asks for one; needs ssl_key_file."`
	SSLKeyFile  string `ini:"oslo_messaging_rabbit.ssl_key_file" help:"PEM private key of ssl_cert_file."`
}

type Conductor struct {
	ConductorGroup              string        `ini:"conductor.conductor_group" help:"Group of conductors this conductor belongs to; nodes with the same conductor_group are managed by it."`
	EnabledHardwareTypes        []string      `ini:"conductor.enabled_hardware_types" help:"Hardware types (drivers) this conductor serves: fake-hardware, ipmi, pxe_ipmitool, ilo, iscsi_ilo, redfish."`
	MetricsListen               string        `ini:"conductor.metrics_listen" help:"host:port where the conductor serves /metrics (Prometheus), unauthenticated; empty: not served."`
	WorkersPoolSize             int           `ini:"conductor.workers_pool_size" help:"Size of the worker pool for background tasks; work beyond it is refused with 503."`
	HeartbeatInterval           time.Duration `ini:"conductor.heartbeat_interval" help:"How often the conductor refreshes its registry entry."`
	HeartbeatTimeout            time.Duration `ini:"conductor.heartbeat_timeout" help:"A conductor whose entry is older than this is considered dead."`
	NodeLockedRetryAttempts     int           `ini:"conductor.node_locked_retry_attempts" help:"Attempts to take a node lock held by someone else before answering 409."`
	NodeLockedRetryInterval     time.Duration `ini:"conductor.node_locked_retry_interval" help:"Pause between node lock attempts."`
	CheckProvisionStateInterval time.Duration `ini:"conductor.check_provision_state_interval" help:"How often callback timeouts are checked."`
	DeployCallbackTimeout       time.Duration `ini:"conductor.deploy_callback_timeout" help:"How long a node may wait for the deploy ramdisk to call back; 0 disables."`
	CleanCallbackTimeout        time.Duration `ini:"conductor.clean_callback_timeout" help:"How long a node may wait for the cleaning ramdisk to call back; 0 disables."`
	InspectWaitTimeout          time.Duration `ini:"conductor.inspect_wait_timeout" help:"How long a node may stay in inspect wait; 0 disables."`
	RescueCallbackTimeout       time.Duration `ini:"conductor.rescue_callback_timeout" help:"How long a node may wait for the rescue ramdisk to call back; 0 disables."`
	SyncPowerStateInterval      time.Duration `ini:"conductor.sync_power_state_interval" help:"How often power states are compared with the hardware; 0 or less disables."`
	PowerStateSyncTimeout       time.Duration `ini:"conductor.power_state_sync_timeout" help:"Longest a power state sync waits for one node's BMC to answer; a BMC that hangs counts as a failed read instead of holding a sync worker."`
	PowerStateSyncMaxRetries    int           `ini:"conductor.power_state_sync_max_retries" help:"Failed power state reads in a row before a node is put into maintenance."`
	SyncLocalStateInterval      time.Duration `ini:"conductor.sync_local_state_interval" help:"How often active nodes whose conductor went away are taken over; 0 or less disables."`
	PeriodicMaxWorkers          int           `ini:"conductor.periodic_max_workers" help:"Nodes one periodic task run may act on in parallel."`
	PowerStateChangeTimeout     time.Duration `ini:"conductor.power_state_change_timeout" help:"How long to wait for a node to reach the requested power state."`
	SoftPowerOffTimeout         time.Duration `ini:"conductor.soft_power_off_timeout" help:"Default timeout of soft power off and soft reboot."`
	ForcePowerStateDuringSync   bool          `ini:"conductor.force_power_state_during_sync" help:"During power sync, force the hardware back to the recorded power state instead of recording the hardware state."`
	AutomatedClean              bool          `ini:"conductor.automated_clean" help:"Clean nodes when they are provided and after they are undeployed."`
	AllowDeletingAvailableNodes bool          `ini:"conductor.allow_deleting_available_nodes" help:"Allow deleting nodes in the available state."`
	AllowVolumeDeleteUnlessOff  bool          `ini:"conductor.allow_volume_delete_unless_powered_off" help:"Also allow deleting a volume connector or target of a node that is not powered off when the node is in manageable, enroll or adopt failed (the exemption of Ironic 37.0). Off: deletes, like updates, need the node powered off."`
	APIURL                      string        `ini:"conductor.api_url" help:"Base URL of the Ferric API as deploy ramdisks reach it (ironic_api_url / ipa-api-url on their kernel command line); required by the iscsi deploy interface."`
	// FileURLAllowedPaths is empty by default: a conductor holds database
	// and AMQP credentials (in its configuration, in /proc/self/environ),
	// and a node's owner must not be able to name such a file as a kernel
	// or an image and have it copied where it can read it.
	// ImageDownloadAllowedNetworks is empty by default: a node's owner
	// names the URLs the conductor downloads, and must not reach the
	// conductor's own services, the metadata service or the management
	// network through it.
	ImageDownloadAllowedNetworks []string `ini:"conductor.image_download_allowed_networks" help:"Networks (CIDR, e.g. 10.20.0.0/16) the conductor may download images, kernels, ramdisks and config drives from although they are loopback, link-local, unspecified, multicast or private (RFC 1918, fc00::/7) addresses. The check is made on the address each connection goes to, after name resolution and on every redirect; downloads use no HTTP proxy. Empty (the default): only public addresses. Production with an image server on the provisioning or management network must list that server's network, and only it."`
	FileURLAllowedPaths          []string `ini:"conductor.file_url_allowed_paths" help:"Directories whose files image_source, kernel, ramdisk, deploy_kernel and deploy_ramdisk may name as absolute paths or file:// URLs; a path is allowed only if, after resolving symbolic links and .., it lies under one of them. Empty (the default): only http(s) URLs and Glance images, since Ferric has no directory of its own that holds nothing but boot images and every file the conductor can read would otherwise be copyable to the TFTP root or a node's disk."`
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

// IPMI configures the ipmi hardware type, which drives BMCs with ipmitool.
type IPMI struct {
	CommandRetryTimeout time.Duration `ini:"ipmi.command_retry_timeout" help:"Longest time one IPMI command may take, retries of transient failures included; an ipmitool still running then is killed."`
	MinCommandInterval  time.Duration `ini:"ipmi.min_command_interval" help:"Shortest pause between two commands sent to the same BMC; many BMCs fail under faster traffic."`
	// ConnectTimeout is ipmitool's -N: it has whole-second resolution.
	ConnectTimeout     time.Duration `ini:"ipmi.connect_timeout" help:"How long ipmitool waits for each answer of the BMC before it resends or gives up (ipmitool -N, whole seconds)."`
	UseIpmitoolRetries bool          `ini:"ipmi.use_ipmitool_retries" help:"Let ipmitool resend unanswered requests for up to command_retry_timeout (ipmitool -R); otherwise it tries once and Ferric retries transient failures itself."`
	CipherSuite        int           `ini:"ipmi.cipher_suite" help:"IPMI 2.0 cipher suite (ipmitool -C) used unless a node's driver_info sets ipmi_cipher_suite."`
	// PowerStatePollInterval paces the reads while waiting for a power
	// change; min_command_interval still applies on top.
	PowerStatePollInterval        time.Duration `ini:"ipmi.power_state_poll_interval" help:"How often the power state is read while waiting for a power change to take effect."`
	DisableBootTimeout            bool          `ini:"ipmi.disable_boot_timeout" help:"Before setting a boot device, ask the BMC to keep it beyond the 60 seconds the IPMI specification allows; a BMC that refuses only causes a warning."`
	AdditionalRetryableIPMIErrors []string      `ini:"ipmi.additional_retryable_ipmi_errors" help:"More ipmitool error texts (substrings) that mark a failed command as transient, to be retried."`
}

// Deploy configures deploying images and the conductor's boot file server.
type Deploy struct {
	HTTPURL                    string `ini:"deploy.http_url" help:"Base URL of the conductor's boot file server (iPXE scripts, kernels, ramdisks); the server listens on its host and port. Empty: no server."`
	HTTPRoot                   string `ini:"deploy.http_root" help:"Directory the boot file server serves and iPXE files are written to."`
	PowerOffAfterDeployFailure bool   `ini:"deploy.power_off_after_deploy_failure" help:"Power a node off when its deploy fails."`
	DefaultBootOption          string `ini:"deploy.default_boot_option" help:"How deployed partition images boot when instance_info capabilities do not say: local or netboot."`
	// The erase priorities are nil when unset: the ramdisk's own priority
	// applies (erase_devices 10, erase_devices_metadata 99).
	EraseDevicesPriority           *int  `ini:"deploy.erase_devices_priority" help:"Priority of the erase_devices clean step (overwrite every disk); empty keeps the ramdisk's (10), 0 leaves it out of automated cleaning."`
	EraseDevicesMetadataPriority   *int  `ini:"deploy.erase_devices_metadata_priority" help:"Priority of the erase_devices_metadata clean step (partition tables and signatures at both ends of every disk); empty keeps the ramdisk's (99), 0 leaves it out of automated cleaning."`
	ShredRandomOverwriteIterations int   `ini:"deploy.shred_random_overwrite_iterations" help:"Passes of random data erase_devices writes over every disk."`
	ShredFinalOverwriteWithZeros   bool  `ini:"deploy.shred_final_overwrite_with_zeros" help:"Let erase_devices end with a pass of zeros."`
	ContinueIfDiskSecureEraseFails bool  `ini:"deploy.continue_if_disk_secure_erase_fails" help:"When an ATA/NVMe secure erase fails, overwrite the disk instead of failing the clean step."`
	EnableATASecureErase           bool  `ini:"deploy.enable_ata_secure_erase" help:"Let erase_devices use the disk's ATA/NVMe secure erase where it has one."`
	MaxImageSize                   int64 `ini:"deploy.max_image_size" help:"Largest instance image the conductor downloads into its cache, in MiB; a larger one fails the deploy and leaves nothing cached. 0: the size of the node's disk (properties local_gb), no limit when the node does not give it."`
	// The boot file server's write limit is per write, not per response:
	// an image or ramdisk of several GiB to a slow node must not be cut
	// off while it makes progress, but a client that stops reading must.
	HTTPReadTimeout   time.Duration `ini:"deploy.http_read_timeout" help:"Longest time the boot file server takes to read one request. 0: no limit."`
	HTTPWriteTimeout  time.Duration `ini:"deploy.http_write_timeout" help:"Longest time the boot file server waits for a client to take each piece of a response; a download making progress is never cut, however long it takes. 0: no limit."`
	HTTPIdleTimeout   time.Duration `ini:"deploy.http_idle_timeout" help:"How long the boot file server keeps an idle kept-alive connection. 0: the http_read_timeout."`
	HTTPMaxHeaderSize int           `ini:"deploy.http_max_header_size" help:"Largest request line and headers the boot file server accepts, in bytes; larger ones are answered 431."`
	// The boot file server speaks TLS exactly when http_url is https://,
	// so the URLs it hands out always match what it serves.
	HTTPCertFile string `ini:"deploy.http_cert_file" help:"PEM certificate (chain) of the boot file server, required when http_url is https://; replacing the file takes effect at the next connection. BMCs fetching virtual media and ramdisks fetching images must trust its CA."`
	HTTPKeyFile  string `ini:"deploy.http_key_file" help:"PEM private key of http_cert_file."`
}

// Agent holds options of the agent ramdisk.
type Agent struct {
	// RequireTLS is off by default: the callback-only ramdisk, and agents
	// without auto-TLS, serve plain HTTP.
	RequireTLS bool `ini:"agent.require_tls" help:"Refuse heartbeats whose callback_url is http://: only agents serving their API over TLS (ferric-agent with ipa-enable-auto-tls=1) may drive a node."`
	// BindTokenToSource is on by default; off where the API sees agents
	// through a proxy that rewrites their addresses from several ones.
	BindTokenToSource bool `ini:"agent.bind_token_to_source" help:"Accept heartbeats only from the address whose lookup was handed the agent token (as the API sees the connection). Turn off when agents reach the API through a proxy or load balancer that gives one agent's connections different source addresses."`
	// AgentEraseDevicesPriority is honoured only while [deploy]
	// erase_devices_priority is unset.
	AgentEraseDevicesPriority *int `ini:"agent.agent_erase_devices_priority" help:"Deprecated: use [deploy] erase_devices_priority, which wins when both are set."`
}

// PXE configures the pxe boot interface and the conductor's image cache.
type PXE struct {
	TFTPRoot               string `ini:"pxe.tftp_root" help:"Directory the TFTP server serves; PXELINUX configurations (pxelinux.cfg/01-<mac>) and deploy kernels and ramdisks are written under it."`
	IPXEEnabled            bool   `ini:"pxe.ipxe_enabled" help:"Also write iPXE scripts (under [deploy] http_root) next to the PXELINUX configurations."`
	ImagesPath             string `ini:"pxe.instance_master_path" help:"Directory of the conductor's content-addressed instance image cache."`
	ImageCacheSize         int64  `ini:"pxe.image_cache_size" help:"Size bound of unreferenced cached images, in MiB; 0 disables the bound."`
	DefaultEphemeralFormat string `ini:"pxe.default_ephemeral_format" help:"Filesystem made on the ephemeral partition when instance_info has no ephemeral_format."`
	PXEAppendParams        string `ini:"pxe.pxe_append_params" help:"Extra kernel command line arguments for the deploy ramdisk and netbooted instances."`
	MaxBootFileSize        int64  `ini:"pxe.max_boot_file_size" help:"Largest kernel or ramdisk the conductor fetches for PXE and iPXE boot, in MiB; a larger one fails and is not written."`
}

// ISCSI configures the iscsi deploy interface, where the conductor writes
// images onto the node's disk exported by the ramdisk as an iSCSI target.
type ISCSI struct {
	PortalPort          int `ini:"iscsi.portal_port" help:"iSCSI portal port the ramdisk exports the disk on, unless it reports another."`
	MaxConcurrentWrites int `ini:"iscsi.max_concurrent_writes" help:"Images this conductor writes at the same time; further deploys queue in arrival order."`
	WriteWorkers        int `ini:"iscsi.write_workers" help:"Parallel writers (SCSI commands in flight) per image written."`
	// AllowExportWithoutCHAP relaxes the one-time CHAP account every
	// export requires, for ramdisks that cannot set one.
	AllowExportWithoutCHAP bool `ini:"iscsi.allow_export_without_chap" help:"Deploy and clean with a ramdisk that exports the disk without CHAP (ironic-python-agent refusing the CHAP parameters, a callback-only ramdisk sending no CHAP account) instead of failing. Risk: while the export is open, anyone on the provisioning network can log in to the node's disk, read it and write it."`
}

// Glance configures the Image service through which an instance_info
// image_source given as a Glance image id (a UUID, or glance://<uuid>) is
// resolved and downloaded.
type Glance struct {
	// AuthType empty means no Glance: image sources must be URLs.
	AuthType          string `ini:"glance.auth_type" help:"How to reach Glance: empty (no Glance; image_source must be an http(s) or file URL), none (no authentication, endpoint_override required) or password (Keystone v3)."`
	EndpointOverride  string `ini:"glance.endpoint_override" help:"Glance endpoint URL; with auth_type password, empty means the image endpoint of the Keystone catalog."`
	AuthURL           string `ini:"glance.auth_url" help:"Keystone v3 URL (auth_type password)."`
	Username          string `ini:"glance.username" help:"Keystone user (auth_type password)."`
	Password          string `ini:"glance.password" help:"Keystone user's password (auth_type password)."`
	ProjectName       string `ini:"glance.project_name" help:"Project the token is scoped to (auth_type password)."`
	UserDomainName    string `ini:"glance.user_domain_name" help:"Domain of the user (auth_type password)."`
	ProjectDomainName string `ini:"glance.project_domain_name" help:"Domain of the project (auth_type password)."`
	RegionName        string `ini:"glance.region_name" help:"Region whose image endpoint is taken from the catalog."`
}

// ILO holds the iLO drivers' options: how the iLO is reached and how a
// power change is confirmed (Ironic's names and units: whole seconds), and
// where virtual media (the parameter floppy, boot ISOs) are published for
// the BMC to fetch.
type ILO struct {
	ClientTimeout     int    `ini:"ilo.client_timeout" help:"Seconds each request to an iLO may take; driver_info client_timeout overrides it."`
	ClientPort        int    `ini:"ilo.client_port" help:"HTTPS port of the iLO; driver_info client_port overrides it."`
	CAFile            string `ini:"ilo.ca_file" help:"CA bundle that verifies iLO certificates; empty: the system's roots. driver_info ca_file overrides it. Verification is off only for nodes whose driver_info sets ilo_verify_ca to false."`
	PowerWait         int    `ini:"ilo.power_wait" help:"Seconds between reads of the power state after a power action (iLO and Redfish nodes)."`
	PowerRetry        int    `ini:"ilo.power_retry" help:"Reads of the power state after a power action before it counts as failed (iLO and Redfish nodes)."`
	SwiftILOContainer string `ini:"ilo.swift_ilo_container" help:"Swift container that holds the virtual media objects (image-<node uuid> floppies, boot-<node uuid> ISOs); created when missing."`
	// SwiftObjectExpiryTimeout is Ironic's option, in whole seconds.
	SwiftObjectExpiryTimeout int  `ini:"ilo.swift_object_expiry_timeout" help:"Seconds a published floppy lives (Swift X-Delete-After, or the web server's expiry) and every temporary URL handed to a BMC stays valid."`
	UseWebServerForImages    bool `ini:"ilo.use_web_server_for_images" help:"Publish virtual media on the conductor's boot file server ([deploy] http_url, files under [deploy] http_root/vmedia, URLs signed with a per-conductor secret) instead of Swift."`
}

// Swift is how the conductor reaches the Object Storage service that
// publishes virtual media when [ilo] use_web_server_for_images is off.
type Swift struct {
	// AuthType tempauth is Swift's own v1 authentication (tempauth,
	// swauth); password is Keystone v3, whose catalog gives the endpoint.
	AuthType          string `ini:"swift.auth_type" help:"How to authenticate to Swift: tempauth (Swift v1 auth: auth_url is the proxy's /auth/v1.0, username is account:user, password its key) or password (Keystone v3, the object-store endpoint from the catalog). Empty: no Swift."`
	AuthURL           string `ini:"swift.auth_url" help:"Swift v1 auth URL (tempauth) or Keystone v3 URL (password)."`
	Username          string `ini:"swift.username" help:"User: account:user for tempauth, the Keystone user for password."`
	Password          string `ini:"swift.password" help:"The user's key (tempauth) or password (Keystone)."`
	ProjectName       string `ini:"swift.project_name" help:"Project the token is scoped to (auth_type password)."`
	UserDomainName    string `ini:"swift.user_domain_name" help:"Domain of the user (auth_type password)."`
	ProjectDomainName string `ini:"swift.project_domain_name" help:"Domain of the project (auth_type password)."`
	RegionName        string `ini:"swift.region_name" help:"Region whose object-store endpoint is taken from the catalog (auth_type password)."`
}

// KeystoneAuthtoken is how the API checks tokens with auth_strategy
// keystone: the options of keystonemiddleware's auth_token that apply.
type KeystoneAuthtoken struct {
	WWWAuthenticateURI string `ini:"keystone_authtoken.www_authenticate_uri" help:"Keystone URL named in the WWW-Authenticate header of 401 answers, where clients get tokens; empty: auth_url."`
	AuthURL            string `ini:"keystone_authtoken.auth_url" help:"Keystone URL the API authenticates to and validates tokens with (the v3 API is under <auth_url>/v3)."`
	Username           string `ini:"keystone_authtoken.username" help:"The API's own Keystone user, which validates the clients' tokens."`
	Password           string `ini:"keystone_authtoken.password" help:"That user's password."`
	UserDomainName     string `ini:"keystone_authtoken.user_domain_name" help:"Domain of the user."`
	ProjectName        string `ini:"keystone_authtoken.project_name" help:"Project the API's own token is scoped to."`
	ProjectDomainName  string `ini:"keystone_authtoken.project_domain_name" help:"Domain of the project."`
	// TokenCacheTime bounds how long a revoked token stays accepted.
	TokenCacheTime time.Duration `ini:"keystone_authtoken.token_cache_time" help:"How long a validated token is remembered before Keystone is asked again (never past its expiry); a token revoked in Keystone is refused at the latest this long after. 0: ask Keystone on every request."`
	TokenCacheSize int           `ini:"keystone_authtoken.token_cache_size" help:"Most validated tokens remembered per API process; past it the oldest are forgotten."`
	HTTPTimeout    time.Duration `ini:"keystone_authtoken.http_request_timeout" help:"Longest time one request to Keystone may take; past it the client's request is answered 503."`
	// ServiceTokenRoles: a service token holding none of them is refused.
	ServiceTokenRoles []string `ini:"keystone_authtoken.service_token_roles" help:"Roles of which an X-Service-Token must hold one; a valid service token lets the user token with it be past its expiry (a long-running operation started by a service), never revoked."`
}

// OsloPolicy names the file that overrides policy rules and whether the
// pre-RBAC admin rule still passes.
type OsloPolicy struct {
	PolicyFile string `ini:"oslo_policy.policy_file" help:"YAML or JSON file of policy rules (rule name: check string) that override the defaults, for example baremetal:node:delete: role:admin and system_scope:all. Empty: the defaults (system-scoped admin, member and reader roles)."`
	// EnforceNewDefaults false is oslo.policy's upgrade mode: a rule not
	// overridden also passes its deprecated check (is_admin).
	EnforceNewDefaults bool `ini:"oslo_policy.enforce_new_defaults" help:"false: every default rule that the policy file does not override also passes the pre-RBAC rule is_admin (the admin or administrator role, whatever the token's scope), so a project-scoped admin token may do what a system admin may, as in Ironic without enforce_new_defaults."`
	// EnforceScope is read so that Ironic's configuration files load:
	// Ferric's rules say their scope in their check strings, there are no
	// scope types to enforce apart.
	EnforceScope bool `ini:"oslo_policy.enforce_scope" help:"Accepted for Ironic's configuration files; Ferric's rules carry their scope in their check strings (system_scope:all, project_id:...), so false changes nothing by itself: set enforce_new_defaults = false for project-scoped admin tokens."`
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
			AuthStrategy:          "noauth",
		},
		API: API{
			HostIP:                   "127.0.0.1",
			Port:                     6385,
			MaxLimit:                 1000,
			MaxRequestBodySize:       1 << 20,
			MaxConcurrentLargeBodies: 4,
			RestrictLookup:           true,
			RamdiskHeartbeatTimeout:  300,
			ReadTimeout:              60 * time.Second,
			WriteTimeout:             120 * time.Second,
			IdleTimeout:              120 * time.Second,
			MaxHeaderSize:            64 << 10,
			PublicMetrics:            true,
		},
		Database: Database{
			Connection:            "sqlite://var/ferric.db",
			MaxPoolSize:           10,
			MaxOverflow:           0,
			ConnectionRecycleTime: 30 * time.Minute,
			ConnectionIdleTime:    5 * time.Minute,
		},
		RPC: RPC{
			Transport:       "inprocess",
			AMQPURL:         "amqp://guest:guest@127.0.0.1:5672/",
			ResponseTimeout: 60 * time.Second,
		},
		Conductor: Conductor{
			EnabledHardwareTypes:         []string{"fake-hardware"},
			WorkersPoolSize:              100,
			HeartbeatInterval:            10 * time.Second,
			HeartbeatTimeout:             60 * time.Second,
			NodeLockedRetryAttempts:      3,
			NodeLockedRetryInterval:      time.Second,
			CheckProvisionStateInterval:  60 * time.Second,
			DeployCallbackTimeout:        1800 * time.Second,
			CleanCallbackTimeout:         1800 * time.Second,
			InspectWaitTimeout:           1800 * time.Second,
			RescueCallbackTimeout:        1800 * time.Second,
			SyncPowerStateInterval:       60 * time.Second,
			PowerStateSyncMaxRetries:     3,
			SyncLocalStateInterval:       180 * time.Second,
			PeriodicMaxWorkers:           8,
			PowerStateChangeTimeout:      60 * time.Second,
			PowerStateSyncTimeout:        30 * time.Second,
			SoftPowerOffTimeout:          600 * time.Second,
			ForcePowerStateDuringSync:    true,
			AutomatedClean:               true,
			AllowDeletingAvailableNodes:  true,
			FileURLAllowedPaths:          []string{},
			ImageDownloadAllowedNetworks: []string{},
		},
		Agent: Agent{BindTokenToSource: true},
		IPMI: IPMI{
			CommandRetryTimeout:           60 * time.Second,
			MinCommandInterval:            5 * time.Second,
			ConnectTimeout:                5 * time.Second,
			CipherSuite:                   3,
			PowerStatePollInterval:        time.Second,
			DisableBootTimeout:            true,
			AdditionalRetryableIPMIErrors: []string{},
		},
		Deploy: Deploy{
			HTTPRoot:                       "/httpboot",
			PowerOffAfterDeployFailure:     true,
			DefaultBootOption:              "local",
			ShredRandomOverwriteIterations: 1,
			ShredFinalOverwriteWithZeros:   true,
			EnableATASecureErase:           true,
			HTTPReadTimeout:                30 * time.Second,
			HTTPWriteTimeout:               60 * time.Second,
			HTTPIdleTimeout:                120 * time.Second,
			HTTPMaxHeaderSize:              16 << 10,
		},
		PXE: PXE{
			TFTPRoot:               "/tftpboot",
			ImagesPath:             "/var/lib/ferric/master_images",
			ImageCacheSize:         20480,
			DefaultEphemeralFormat: "ext4",
			PXEAppendParams:        "nofb nomodeset vga=normal",
			MaxBootFileSize:        2048,
		},
		ISCSI: ISCSI{
			PortalPort:          3260,
			MaxConcurrentWrites: 4,
			WriteWorkers:        4,
		},
		Glance: Glance{
			UserDomainName:    "Default",
			ProjectDomainName: "Default",
		},
		ILO: ILO{
			ClientTimeout:            60,
			ClientPort:               443,
			PowerWait:                2,
			PowerRetry:               6,
			SwiftILOContainer:        "ironic_ilo_container",
			SwiftObjectExpiryTimeout: 900,
			UseWebServerForImages:    true,
		},
		Swift: Swift{
			UserDomainName:    "Default",
			ProjectDomainName: "Default",
		},
		KeystoneAuthtoken: KeystoneAuthtoken{
			UserDomainName:    "Default",
			ProjectDomainName: "Default",
			TokenCacheTime:    300 * time.Second,
			TokenCacheSize:    10000,
			HTTPTimeout:       10 * time.Second,
			ServiceTokenRoles: []string{"service"},
		},
		OsloPolicy: OsloPolicy{EnforceNewDefaults: true, EnforceScope: true},
	}
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
