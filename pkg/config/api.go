package config

import (
	"os"
	"time"
)

type API struct {
	HostIP string `ini:"api.host_ip" default:"127.0.0.1" help:"Address the API listens on."`
	Port   int    `ini:"api.port" default:"6385" range:"1..65535" help:"Port the API listens on."`
	// PublicEndpoint is the base URL used in links; empty means the
	// request's own scheme and host.
	PublicEndpoint string `ini:"api.public_endpoint" format:"url" help:"Base URL used in links; empty means the scheme and host of each request."`
	MaxLimit       int    `ini:"api.max_limit" default:"1000" range:">0" help:"Largest number of items one list request returns."`
	// AuthStrategy is where Ferric first had [DEFAULT] auth_strategy;
	// Load copies it there, so nothing else reads it.
	AuthStrategy          string `ini:"api.auth_strategy" help:"Deprecated: use [DEFAULT] auth_strategy. Accepted when [DEFAULT] auth_strategy is unset or has the same value."`
	HTTPBasicAuthUserFile string `ini:"api.http_basic_auth_user_file" required:"DEFAULT.auth_strategy=http_basic" help:"Apache-style htpasswd file (bcrypt) used by http_basic."`
	MaxRequestBodySize    int64  `ini:"api.max_request_body_size" default:"1048576" range:">0" help:"Largest accepted request body, in bytes."`
	// MaxConcurrentLargeBodies bounds the provisioning requests whose body
	// exceeds MaxRequestBodySize (config drives of up to 64 MiB) that are
	// read at once; each spools its drive to a temporary file.
	MaxConcurrentLargeBodies int  `ini:"api.max_concurrent_large_bodies" default:"4" range:">0" help:"How many provisioning requests with a body larger than max_request_body_size (config drives, up to 64 MiB) are read at once; more get 503 and may retry."`
	RestrictLookup           bool `ini:"api.restrict_lookup" default:"true" help:"Allow ramdisk lookups only for nodes in states where a ramdisk is expected."`
	RamdiskHeartbeatTimeout  int  `ini:"api.ramdisk_heartbeat_timeout" default:"300" range:">0" help:"Longest interval, in seconds, between ramdisk heartbeats; sent to the ramdisk in the lookup response."`
	// The server limits keep a slow or hostile client from holding a
	// connection (and its goroutine) for ever.
	ReadTimeout   time.Duration `ini:"api.read_timeout" default:"60" range:">=0" help:"Longest time to read one request, headers and body; a client trickling its request is disconnected then. 0: no limit."`
	WriteTimeout  time.Duration `ini:"api.write_timeout" default:"120" range:">=0" help:"Longest time from the end of a request's headers to the end of its response; must exceed [rpc] response_timeout, which a request may wait for a conductor. 0: no limit."`
	IdleTimeout   time.Duration `ini:"api.idle_timeout" default:"120" range:">=0" help:"How long a kept-alive connection may wait for its next request. 0: the read_timeout."`
	MaxHeaderSize int           `ini:"api.max_header_size" default:"65536" range:">0" help:"Largest accepted request line and headers, in bytes; larger ones are answered 431."`
	// PublicMetrics is the practice of Kubernetes scrapers, which carry no
	// credentials; the metrics hold no node names or secrets.
	PublicMetrics bool `ini:"api.public_metrics" default:"true" help:"Serve /metrics (Prometheus) without authentication, as /healthz is; false: only to authenticated administrators."`
	EnableSSLAPI  bool `ini:"api.enable_ssl_api" help:"Serve the API over HTTPS with the certificate and key of [ssl] cert_file and key_file, which are read again whenever they change."`
}

// SSL is the API server's certificate, in oslo.service's section.
type SSL struct {
	CertFile string `ini:"ssl.cert_file" help:"PEM certificate (chain) the API presents with [api] enable_ssl_api; replacing the file takes effect at the next connection, no restart needed."`
	KeyFile  string `ini:"ssl.key_file" help:"PEM private key of cert_file."`
}

func (s SSL) validate(bad report) {
	checkPair(bad, "cert_file", "key_file", s.CertFile, s.KeyFile)
}

// KeystoneAuthtoken is how the API checks tokens with auth_strategy
// keystone: the options of keystonemiddleware's auth_token that apply.
type KeystoneAuthtoken struct {
	WWWAuthenticateURI string `ini:"keystone_authtoken.www_authenticate_uri" format:"url" help:"Keystone URL named in the WWW-Authenticate header of 401 answers, where clients get tokens; empty: auth_url."`
	AuthURL            string `ini:"keystone_authtoken.auth_url" format:"url" required:"DEFAULT.auth_strategy=keystone" help:"Keystone URL the API authenticates to and validates tokens with (the v3 API is under <auth_url>/v3)."`
	Username           string `ini:"keystone_authtoken.username" required:"DEFAULT.auth_strategy=keystone" help:"The API's own Keystone user, which validates the clients' tokens."`
	Password           string `ini:"keystone_authtoken.password" required:"DEFAULT.auth_strategy=keystone" help:"That user's password."`
	UserDomainName     string `ini:"keystone_authtoken.user_domain_name" default:"Default" required:"DEFAULT.auth_strategy=keystone" help:"Domain of the user."`
	ProjectName        string `ini:"keystone_authtoken.project_name" required:"DEFAULT.auth_strategy=keystone" help:"Project the API's own token is scoped to."`
	ProjectDomainName  string `ini:"keystone_authtoken.project_domain_name" default:"Default" required:"DEFAULT.auth_strategy=keystone" help:"Domain of the project."`
	// TokenCacheTime bounds how long a revoked token stays accepted.
	TokenCacheTime time.Duration `ini:"keystone_authtoken.token_cache_time" default:"300" range:">=0" help:"How long a validated token is remembered before Keystone is asked again (never past its expiry); a token revoked in Keystone is refused at the latest this long after. 0: ask Keystone on every request."`
	TokenCacheSize int           `ini:"keystone_authtoken.token_cache_size" default:"10000" range:">0" help:"Most validated tokens remembered per API process; past it the oldest are forgotten."`
	HTTPTimeout    time.Duration `ini:"keystone_authtoken.http_request_timeout" default:"10" range:">0" help:"Longest time one request to Keystone may take; past it the client's request is answered 503."`
	// ServiceTokenRoles: a service token holding none of them is refused.
	ServiceTokenRoles []string `ini:"keystone_authtoken.service_token_roles" default:"service" help:"Roles of which an X-Service-Token must hold one; a valid service token lets the user token with it be past its expiry (a long-running operation started by a service), never revoked."`
}

// OsloPolicy names the file that overrides policy rules and whether the
// pre-RBAC admin rule still passes.
type OsloPolicy struct {
	PolicyFile string `ini:"oslo_policy.policy_file" help:"YAML or JSON file of policy rules (rule name: check string) that override the defaults, for example baremetal:node:delete: role:admin and system_scope:all. Empty: the defaults (system-scoped admin, member and reader roles)."`
	// EnforceNewDefaults false is oslo.policy's upgrade mode: a rule not
	// overridden also passes its deprecated check (is_admin).
	EnforceNewDefaults bool `ini:"oslo_policy.enforce_new_defaults" default:"true" help:"false: every default rule that the policy file does not override also passes the pre-RBAC rule is_admin (the admin or administrator role, whatever the token's scope), so a project-scoped admin token may do what a system admin may, as in Ironic without enforce_new_defaults."`
	// EnforceScope is read so that Ironic's configuration files load:
	// Ferric's rules say their scope in their check strings, there are no
	// scope types to enforce apart.
	EnforceScope bool `ini:"oslo_policy.enforce_scope" default:"true" help:"Accepted for Ironic's configuration files; Ferric's rules carry their scope in their check strings (system_scope:all, project_id:...), so false changes nothing by itself: set enforce_new_defaults = false for project-scoped admin tokens."`
}

func (p OsloPolicy) validate(bad report) {
	if p.PolicyFile == "" {
		return
	}
	if _, err := os.Stat(p.PolicyFile); err != nil {
		bad("policy_file", "%v", err)
	}
}
