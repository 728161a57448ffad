package config

import (
	"strings"
	"time"
)

// Deploy configures deploying images and the conductor's boot file server.
type Deploy struct {
	HTTPURL                    string `ini:"deploy.http_url" format:"url" help:"Base URL of the conductor's boot file server (iPXE scripts, kernels, ramdisks); the server listens on its host and port. Empty: no server."`
	HTTPRoot                   string `ini:"deploy.http_root" default:"/httpboot" help:"Directory the boot file server serves and iPXE files are written to."`
	PowerOffAfterDeployFailure bool   `ini:"deploy.power_off_after_deploy_failure" default:"true" help:"Power a node off when its deploy fails."`
	DefaultBootOption          string `ini:"deploy.default_boot_option" default:"local" choices:"local,netboot" help:"How deployed partition images boot when instance_info capabilities do not say: local or netboot."`
	// The erase priorities are nil when unset: the ramdisk's own priority
	// applies (erase_devices 10, erase_devices_metadata 99).
	EraseDevicesPriority           *int  `ini:"deploy.erase_devices_priority" range:">=0" help:"Priority of the erase_devices clean step (overwrite every disk); empty keeps the ramdisk's (10), 0 leaves it out of automated cleaning."`
	EraseDevicesMetadataPriority   *int  `ini:"deploy.erase_devices_metadata_priority" range:">=0" help:"Priority of the erase_devices_metadata clean step (partition tables and signatures at both ends of every disk); empty keeps the ramdisk's (99), 0 leaves it out of automated cleaning."`
	ShredRandomOverwriteIterations int   `ini:"deploy.shred_random_overwrite_iterations" default:"1" range:">=0" help:"Passes of random data erase_devices writes over every disk."`
	ShredFinalOverwriteWithZeros   bool  `ini:"deploy.shred_final_overwrite_with_zeros" default:"true" help:"Let erase_devices end with a pass of zeros."`
	ContinueIfDiskSecureEraseFails bool  `ini:"deploy.continue_if_disk_secure_erase_fails" help:"When an ATA/NVMe secure erase fails, overwrite the disk instead of failing the clean step."`
	EnableATASecureErase           bool  `ini:"deploy.enable_ata_secure_erase" default:"true" help:"Let erase_devices use the disk's ATA/NVMe secure erase where it has one."`
	MaxImageSize                   int64 `ini:"deploy.max_image_size" range:">=0" help:"Largest instance image the conductor downloads into its cache, in MiB; a larger one fails the deploy and leaves nothing cached. 0: the size of the node's disk (properties local_gb), no limit when the node does not give it."`
	// The boot file server's write limit is per write, not per response:
	// an image or ramdisk of several GiB to a slow node must not be cut
	// off while it makes progress, but a client that stops reading must.
	HTTPReadTimeout   time.Duration `ini:"deploy.http_read_timeout" default:"30" range:">=0" help:"Longest time the boot file server takes to read one request. 0: no limit."`
	HTTPWriteTimeout  time.Duration `ini:"deploy.http_write_timeout" default:"60" range:">=0" help:"Longest time the boot file server waits for a client to take each piece of a response; a download making progress is never cut, however long it takes. 0: no limit."`
	HTTPIdleTimeout   time.Duration `ini:"deploy.http_idle_timeout" default:"120" range:">=0" help:"How long the boot file server keeps an idle kept-alive connection. 0: the http_read_timeout."`
	HTTPMaxHeaderSize int           `ini:"deploy.http_max_header_size" default:"16384" range:">0" help:"Largest request line and headers the boot file server accepts, in bytes; larger ones are answered 431."`
	// The boot file server speaks TLS exactly when http_url is https://,
	// so the URLs it hands out always match what it serves.
	HTTPCertFile string `ini:"deploy.http_cert_file" help:"PEM certificate (chain) of the boot file server, required when http_url is https://; replacing the file takes effect at the next connection. BMCs fetching virtual media and ramdisks fetching images must trust its CA."`
	HTTPKeyFile  string `ini:"deploy.http_key_file" help:"PEM private key of http_cert_file."`
}

func (d Deploy) validate(bad report) {
	httpsURL := strings.HasPrefix(d.HTTPURL, "https://")
	switch {
	case httpsURL && (d.HTTPCertFile == "" || d.HTTPKeyFile == ""):
		bad("http_cert_file", "http_cert_file and http_key_file are required when http_url is https://")
	case !httpsURL && (d.HTTPCertFile != "" || d.HTTPKeyFile != ""):
		bad("http_cert_file", "http_cert_file and http_key_file are used only when http_url is https://, and it is %q", d.HTTPURL)
	}
	checkPair(bad, "http_cert_file", "http_key_file", d.HTTPCertFile, d.HTTPKeyFile)
	if d.ShredRandomOverwriteIterations == 0 && !d.ShredFinalOverwriteWithZeros {
		bad("shred_random_overwrite_iterations", "0 with shred_final_overwrite_with_zeros false would make erase_devices write nothing")
	}
}

// Agent holds options of the agent ramdisk.
type Agent struct {
	// RequireTLS is off by default: the callback-only ramdisk, and agents
	// without auto-TLS, serve plain HTTP.
	RequireTLS bool `ini:"agent.require_tls" help:"Refuse heartbeats whose callback_url is http://: only agents serving their API over TLS (ferric-agent with ipa-enable-auto-tls=1) may drive a node."`
	// BindTokenToSource is on by default; off where the API sees agents
	// through a proxy that rewrites their addresses from several ones.
	BindTokenToSource bool `ini:"agent.bind_token_to_source" default:"true" help:"Accept heartbeats only from the address whose lookup was handed the agent token (as the API sees the connection). Turn off when agents reach the API through a proxy or load balancer that gives one agent's connections different source addresses."`
	// AgentEraseDevicesPriority is honoured only while [deploy]
	// erase_devices_priority is unset.
	AgentEraseDevicesPriority *int `ini:"agent.agent_erase_devices_priority" range:">=0" help:"Deprecated: use [deploy] erase_devices_priority, which wins when both are set."`
}

// PXE configures the pxe boot interface and the conductor's image cache.
type PXE struct {
	TFTPRoot               string `ini:"pxe.tftp_root" default:"/tftpboot" help:"Directory the TFTP server serves; PXELINUX configurations (pxelinux.cfg/01-<mac>) and deploy kernels and ramdisks are written under it."`
	IPXEEnabled            bool   `ini:"pxe.ipxe_enabled" help:"Also write iPXE scripts (under [deploy] http_root) next to the PXELINUX configurations."`
	ImagesPath             string `ini:"pxe.instance_master_path" default:"/var/lib/ferric/master_images" help:"Directory of the conductor's content-addressed instance image cache."`
	ImageCacheSize         int64  `ini:"pxe.image_cache_size" default:"20480" range:">=0" help:"Size bound of unreferenced cached images, in MiB; 0 disables the bound."`
	DefaultEphemeralFormat string `ini:"pxe.default_ephemeral_format" default:"ext4" help:"Filesystem made on the ephemeral partition when instance_info has no ephemeral_format."`
	PXEAppendParams        string `ini:"pxe.pxe_append_params" default:"nofb nomodeset vga=normal" help:"Extra kernel command line arguments for the deploy ramdisk and netbooted instances."`
	MaxBootFileSize        int64  `ini:"pxe.max_boot_file_size" default:"2048" range:">0" help:"Largest kernel or ramdisk the conductor fetches for PXE and iPXE boot, in MiB; a larger one fails and is not written."`
}

// ISCSI configures the iscsi deploy interface, where the conductor writes
// images onto the node's disk exported by the ramdisk as an iSCSI target.
type ISCSI struct {
	PortalPort          int `ini:"iscsi.portal_port" default:"3260" range:"1..65535" help:"iSCSI portal port the ramdisk exports the disk on, unless it reports another."`
	MaxConcurrentWrites int `ini:"iscsi.max_concurrent_writes" default:"4" range:">0" help:"Images this conductor writes at the same time; further deploys queue in arrival order."`
	WriteWorkers        int `ini:"iscsi.write_workers" default:"4" range:">0" help:"Parallel writers (SCSI commands in flight) per image written."`
	// AllowExportWithoutCHAP relaxes the one-time CHAP account every
	// export requires, for ramdisks that cannot set one.
	AllowExportWithoutCHAP bool `ini:"iscsi.allow_export_without_chap" help:"Deploy and clean with a ramdisk that exports the disk without CHAP (ironic-python-agent refusing the CHAP parameters, a callback-only ramdisk sending no CHAP account) instead of failing. Risk: while the export is open, anyone on the provisioning network can log in to the node's disk, read it and write it."`
}

// Glance configures the Image service through which an instance_info
// image_source given as a Glance image id (a UUID, or glance://<uuid>) is
// resolved and downloaded.
type Glance struct {
	// AuthType empty means no Glance: image sources must be URLs.
	AuthType          string `ini:"glance.auth_type" choices:",none,password" help:"How to reach Glance: empty (no Glance; image_source must be an http(s) or file URL), none (no authentication, endpoint_override required) or password (Keystone v3)."`
	EndpointOverride  string `ini:"glance.endpoint_override" format:"url" required:"auth_type=none" help:"Glance endpoint URL; with auth_type password, empty means the image endpoint of the Keystone catalog."`
	AuthURL           string `ini:"glance.auth_url" required:"auth_type=password" help:"Keystone v3 URL (auth_type password)."`
	Username          string `ini:"glance.username" required:"auth_type=password" help:"Keystone user (auth_type password)."`
	Password          string `ini:"glance.password" required:"auth_type=password" help:"Keystone user's password (auth_type password)."`
	ProjectName       string `ini:"glance.project_name" required:"auth_type=password" help:"Project the token is scoped to (auth_type password)."`
	UserDomainName    string `ini:"glance.user_domain_name" default:"Default" required:"auth_type=password" help:"Domain of the user (auth_type password)."`
	ProjectDomainName string `ini:"glance.project_domain_name" default:"Default" required:"auth_type=password" help:"Domain of the project (auth_type password)."`
	RegionName        string `ini:"glance.region_name" help:"Region whose image endpoint is taken from the catalog."`
}
