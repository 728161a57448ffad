package config_test

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/config"
)

var update = flag.Bool("update", false, "rewrite ferric.conf.example and the option table of docs/configuration.md from the declarations")

// clearEnv hides FERRIC_ variables of the surrounding environment from a
// test, restoring them afterwards.
func clearEnv() {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "FERRIC_") {
			GinkgoT().Setenv(k, "")
			Expect(os.Unsetenv(k)).To(Succeed())
		}
	}
}

func writeFile(content string) string {
	path := filepath.Join(GinkgoT().TempDir(), "ferric.conf")
	Expect(os.WriteFile(path, []byte(content), 0o600)).To(Succeed())
	return path
}

var _ = Describe("Load", func() {
	BeforeEach(clearEnv)

	It("returns the defaults without a file", func() {
		c, err := config.Load("", os.Environ())
		Expect(err).NotTo(HaveOccurred())
		Expect(c).To(Equal(config.Defaults()))
	})

	It("reads every option type from the file", func() {
		c, err := config.Load(writeFile(`
# comment
; another comment
[DEFAULT]
host = cond-1
debug = yes
hash_ring_reset_interval = 30

[api]
port: 16385
max_request_body_size = 2097152
restrict_lookup = False
public_endpoint = "https://bm.example.com"

[database]
connection = mysql://ferric:p@ss=w:rd@127.0.0.1:3306/ferric

[rpc]
transport = amqp
response_timeout = 1500ms

[conductor]
enabled_hardware_types = ipmi, ilo ,,fake-hardware
heartbeat-timeout = 2m
automated_clean = 0
`), os.Environ())
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Default.Host).To(Equal("cond-1"))
		Expect(c.Default.Debug).To(BeTrue())
		Expect(c.Default.HashRingResetInterval).To(Equal(30 * time.Second))
		Expect(c.API.Port).To(Equal(16385))
		Expect(c.API.MaxRequestBodySize).To(Equal(int64(2 << 20)))
		Expect(c.API.RestrictLookup).To(BeFalse())
		Expect(c.API.PublicEndpoint).To(Equal("https://bm.example.com"))
		Expect(c.Database.Connection).To(Equal("mysql://ferric:p@ss=w:rd@127.0.0.1:3306/ferric"))
		Expect(c.RPC.Transport).To(Equal("amqp"))
		Expect(c.RPC.ResponseTimeout).To(Equal(1500 * time.Millisecond))
		Expect(c.Conductor.EnabledHardwareTypes).To(Equal([]string{"ipmi", "ilo", "fake-hardware"}))
		Expect(c.Conductor.HeartbeatTimeout).To(Equal(2 * time.Minute))
		Expect(c.Conductor.AutomatedClean).To(BeFalse())
		// Untouched options keep their defaults.
		Expect(c.Conductor.WorkersPoolSize).To(Equal(100))
		Expect(c.Default.LogFormat).To(Equal("text"))
	})

	It("reads the erase options: empty priorities keep the ramdisk's, the deprecated alias applies only alone", func() {
		c, err := config.Load(writeFile("[deploy]\nerase_devices_metadata_priority = 0\nshred_random_overwrite_iterations = 3\n"+
			"shred_final_overwrite_with_zeros = false\n[agent]\nagent_erase_devices_priority = 7\n"), os.Environ())
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Deploy.EraseDevicesMetadataPriority).To(HaveValue(Equal(0)))
		Expect(c.Deploy.EraseDevicesPriority).To(BeNil())
		Expect(c.Deploy.ShredRandomOverwriteIterations).To(Equal(3))
		Expect(c.Deploy.ShredFinalOverwriteWithZeros).To(BeFalse())
		prio, warning := c.EraseDevicesPriority()
		Expect(prio).To(HaveValue(Equal(7)))
		Expect(warning).To(ContainSubstring("[agent] agent_erase_devices_priority is deprecated"))

		GinkgoT().Setenv("FERRIC_DEPLOY_ERASE_DEVICES_PRIORITY", "20")
		c, err = config.Load(writeFile("[agent]\nagent_erase_devices_priority = 7\n"), os.Environ())
		Expect(err).NotTo(HaveOccurred())
		prio, warning = c.EraseDevicesPriority()
		Expect(prio).To(HaveValue(Equal(20)))
		Expect(warning).To(BeEmpty())

		prio, warning = config.Defaults().EraseDevicesPriority()
		Expect(prio).To(BeNil())
		Expect(warning).To(BeEmpty())
	})

	It("lets the environment override the file", func() {
		GinkgoT().Setenv("FERRIC_DATABASE_CONNECTION", "sqlite:///tmp/env.db")
		GinkgoT().Setenv("FERRIC_CONDUCTOR_HEARTBEAT_TIMEOUT", "90")
		GinkgoT().Setenv("FERRIC_DEFAULT_DEBUG", "true")
		GinkgoT().Setenv("FERRIC_CONDUCTOR_ENABLED_HARDWARE_TYPES", "ipmi")
		GinkgoT().Setenv("FERRIC_UNRELATED_SETTING", "ignored: not a config section")
		c, err := config.Load(writeFile("[database]\nconnection = sqlite://file.db\n[conductor]\nheartbeat_timeout = 30\n"), os.Environ())
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Database.Connection).To(Equal("sqlite:///tmp/env.db"))
		Expect(c.Conductor.HeartbeatTimeout).To(Equal(90 * time.Second))
		Expect(c.Default.Debug).To(BeTrue())
		Expect(c.Conductor.EnabledHardwareTypes).To(Equal([]string{"ipmi"}))
	})

	DescribeTable("rejects what it cannot use, naming it",
		func(file string, want string) {
			_, err := config.Load(writeFile(file), os.Environ())
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("unknown section", "[databse]\nconnection = x\n", "unknown section [databse]"),
		Entry("unknown option", "[conductor]\nheartbeat_timout = 5\n", `unknown option "heartbeat_timout" in section [conductor]`),
		Entry("option in the wrong section", "[api]\nconnection = x\n", `unknown option "connection" in section [api]`),
		Entry("option before a section", "host = x\n", "before any section"),
		Entry("bad optional integer", "[deploy]\nerase_devices_priority = high\n", `[deploy] erase_devices_priority: invalid integer "high"`),
		Entry("bad integer", "[api]\nport = eighty\n", `[api] port: invalid integer "eighty"`),
		Entry("bad boolean", "[DEFAULT]\ndebug = maybe\n", `[DEFAULT] debug: invalid boolean "maybe"`),
		Entry("bad duration", "[rpc]\nresponse_timeout = soon\n", `[rpc] response_timeout: invalid duration "soon"`),
		Entry("line without value", "[api]\nport\n", "line 2"),
		Entry("broken header", "[api\n", "malformed section header"),
	)

	Describe("the deprecated [api] auth_strategy", func() {
		It("sets [DEFAULT] auth_strategy when that is unset", func() {
			c, err := config.Load(writeFile("[api]\nauth_strategy = keystone\n"), os.Environ())
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Default.AuthStrategy).To(Equal("keystone"))
		})

		It("is accepted next to an equal [DEFAULT] auth_strategy", func() {
			c, err := config.Load(writeFile("[DEFAULT]\nauth_strategy = http_basic\n[api]\nauth_strategy = http_basic\n"), os.Environ())
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Default.AuthStrategy).To(Equal("http_basic"))
		})

		DescribeTable("fails to load when it disagrees with [DEFAULT] auth_strategy, even the default value set explicitly",
			func(file string, env map[string]string, want string) {
				for k, v := range env {
					GinkgoT().Setenv(k, v)
				}
				_, err := config.Load(writeFile(file), os.Environ())
				Expect(err).To(MatchError(ContainSubstring(want)))
			},
			Entry("both in the file", "[DEFAULT]\nauth_strategy = noauth\n[api]\nauth_strategy = keystone\n", nil,
				`[DEFAULT] auth_strategy "noauth" and the deprecated [api] auth_strategy "keystone" disagree`),
			Entry("the alias in the environment", "[DEFAULT]\nauth_strategy = keystone\n", map[string]string{"FERRIC_API_AUTH_STRATEGY": "http_basic"},
				`[DEFAULT] auth_strategy "keystone" and the deprecated [api] auth_strategy "http_basic" disagree`),
			Entry("the option in the environment", "[api]\nauth_strategy = keystone\n", map[string]string{"FERRIC_DEFAULT_AUTH_STRATEGY": "noauth"},
				`[DEFAULT] auth_strategy "noauth" and the deprecated [api] auth_strategy "keystone" disagree`),
		)
	})

	It("starts from the defaults the options declare", func() {
		d := config.Defaults()
		Expect(d.API.Port).To(Equal(6385))
		Expect(d.API.MaxRequestBodySize).To(Equal(int64(1 << 20)))
		Expect(d.Conductor.DeployCallbackTimeout).To(Equal(30 * time.Minute))
		Expect(d.KeystoneAuthtoken.ServiceTokenRoles).To(Equal([]string{"service"}))
		Expect(d.Conductor.FileURLAllowedPaths).To(Equal([]string{}))
		Expect(d.Deploy.EraseDevicesPriority).To(BeNil())
		Expect(d.OsloPolicy.EnforceNewDefaults).To(BeTrue())
		Expect(d.Default.Host).NotTo(BeEmpty())
	})

	It("rejects unknown options and bad values in the environment", func() {
		GinkgoT().Setenv("FERRIC_CONDUCTOR_HEARTBEAT_TIMOUT", "5")
		GinkgoT().Setenv("FERRIC_API_PORT", "x")
		_, err := config.Load("", os.Environ())
		Expect(err).To(MatchError(ContainSubstring(`FERRIC_CONDUCTOR_HEARTBEAT_TIMOUT: unknown option "heartbeat_timout"`)))
		Expect(err).To(MatchError(ContainSubstring(`FERRIC_API_PORT: invalid integer "x"`)))
	})

	It("fails on a missing file", func() {
		_, err := config.Load(filepath.Join(GinkgoT().TempDir(), "absent.conf"), os.Environ())
		Expect(err).To(MatchError(ContainSubstring("absent.conf")))
	})
})

var _ = Describe("Example", func() {
	BeforeEach(clearEnv)

	It("is the content of ferric.conf.example", func() {
		if *update {
			Expect(os.WriteFile("ferric.conf.example", []byte(config.Example()), 0o644)).To(Succeed())
		}
		data, err := os.ReadFile("ferric.conf.example")
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(Equal(config.Example()), "run: go test ./config -update")
	})

	It("documents every option with its default", func() {
		ex := config.Example()
		for _, want := range []string{
			"[DEFAULT]", "[api]", "[database]", "[rpc]", "[conductor]",
			"#host = <hostname>\n",
			"#port = 6385\n",
			"#connection = sqlite://var/ferric.db\n",
			"#response_timeout = 60\n",
			"#enabled_hardware_types = fake-hardware\n",
			"#allow_deleting_available_nodes = true\n",
			"#allow_volume_delete_unless_powered_off = false\n",
		} {
			Expect(ex).To(ContainSubstring(want))
		}
		Expect(regexp.MustCompile(`(?m)^#[a-z_]+ = `).FindAllString(ex, -1)).To(HaveLen(optionCount()), "one commented-out line per option")
	})

	It("loads back to the defaults with every option uncommented", func() {
		var b strings.Builder
		for _, line := range strings.Split(config.Example(), "\n") {
			if strings.HasPrefix(line, "#host = ") {
				line = "host = " + config.Defaults().Default.Host
			} else if strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "# ") && line != "#" {
				line = line[1:]
			}
			b.WriteString(line + "\n")
		}
		c, err := config.Load(writeFile(b.String()), os.Environ())
		Expect(err).NotTo(HaveOccurred())
		Expect(c).To(Equal(config.Defaults()))
	})
})

var _ = Describe("Validate", func() {
	It("accepts the defaults", func() {
		Expect(config.Defaults().Validate()).To(Succeed())
	})

	It("accepts http_basic with an existing user file, and amqp with a URL", func() {
		c := config.Defaults()
		c.Default.AuthStrategy = "http_basic"
		c.API.HTTPBasicAuthUserFile = writeFile("admin:$2y$05$abc\n")
		c.RPC.Transport = "amqp"
		Expect(c.Validate()).To(Succeed())
	})

	DescribeTable("reports each bad value by option",
		func(mutate func(*config.Config), want string) {
			c := config.Defaults()
			mutate(&c)
			Expect(c.Validate()).To(MatchError(ContainSubstring(want)))
		},
		Entry(nil, func(c *config.Config) { c.RPC.Transport = "zeromq" }, `[rpc] transport: "zeromq" is not one of inprocess, amqp`),
		Entry(nil, func(c *config.Config) { c.RPC.Transport = "amqp"; c.RPC.AMQPURL = "" }, "[rpc] amqp_url"),
		Entry(nil, func(c *config.Config) { c.Default.AuthStrategy = "kerberos" }, `[DEFAULT] auth_strategy: "kerberos"`),
		Entry(nil, func(c *config.Config) { c.Default.AuthStrategy = "keystone" }, "[keystone_authtoken] auth_url: required when [DEFAULT] auth_strategy is keystone"),
		Entry(nil, func(c *config.Config) {
			c.Default.AuthStrategy = "keystone"
			c.KeystoneAuthtoken.AuthURL = "http://ks"
			c.KeystoneAuthtoken.Username = "ironic"
			c.KeystoneAuthtoken.ProjectName = "service"
		}, "[keystone_authtoken] password: required"),
		Entry(nil, func(c *config.Config) { c.KeystoneAuthtoken.AuthURL = "ks:5000" }, `[keystone_authtoken] auth_url: "ks:5000" is not an http(s) URL`),
		Entry(nil, func(c *config.Config) { c.KeystoneAuthtoken.TokenCacheSize = 0 }, "[keystone_authtoken] token_cache_size: must be positive"),
		Entry(nil, func(c *config.Config) { c.OsloPolicy.PolicyFile = "/nonexistent/policy.yaml" }, "[oslo_policy] policy_file: stat /nonexistent/policy.yaml"),
		Entry(nil, func(c *config.Config) { c.Default.AuthStrategy = "http_basic" }, "[api] http_basic_auth_user_file: required"),
		Entry(nil, func(c *config.Config) {
			c.Default.AuthStrategy = "http_basic"
			c.API.HTTPBasicAuthUserFile = "/nonexistent/htpasswd"
		}, "[api] http_basic_auth_user_file: stat /nonexistent/htpasswd"),
		Entry(nil, func(c *config.Config) { c.API.Port = 0 }, "[api] port: 0 is outside 1..65535"),
		Entry(nil, func(c *config.Config) { c.API.Port = 70000 }, "[api] port: 70000"),
		Entry(nil, func(c *config.Config) { c.API.PublicEndpoint = "bm.example.com" }, "[api] public_endpoint"),
		Entry(nil, func(c *config.Config) { c.API.MaxLimit = 0 }, "[api] max_limit"),
		Entry(nil, func(c *config.Config) { c.Database.Connection = "postgres://x" }, "[database] connection"),
		Entry(nil, func(c *config.Config) { c.Default.LogFormat = "xml" }, "[DEFAULT] log_format"),
		Entry(nil, func(c *config.Config) { c.Default.Host = "" }, "[DEFAULT] host"),
		Entry(nil, func(c *config.Config) { c.Default.HashPartitionExponent = 40 }, "[DEFAULT] hash_partition_exponent"),
		Entry(nil, func(c *config.Config) { c.Conductor.WorkersPoolSize = 0 }, "[conductor] workers_pool_size"),
		Entry(nil, func(c *config.Config) { c.Conductor.PeriodicMaxWorkers = -1 }, "[conductor] periodic_max_workers"),
		Entry(nil, func(c *config.Config) { c.Conductor.EnabledHardwareTypes = nil }, "[conductor] enabled_hardware_types"),
		Entry(nil, func(c *config.Config) { c.Conductor.ConductorGroup = "rack 1" }, "[conductor] conductor_group"),
		Entry(nil, func(c *config.Config) { c.Conductor.HeartbeatTimeout = 5 * time.Second }, "heartbeat_timeout: 5s must exceed heartbeat_interval 10s"),
		Entry(nil, func(c *config.Config) { c.Conductor.DeployCallbackTimeout = -time.Second }, "[conductor] deploy_callback_timeout: must not be negative"),
		Entry(nil, func(c *config.Config) { c.Deploy.EraseDevicesPriority = ptr(-1) }, "[deploy] erase_devices_priority: must not be negative"),
		Entry(nil, func(c *config.Config) { c.Glance.AuthType = "keystone" }, `[glance] auth_type: "keystone"`),
		Entry(nil, func(c *config.Config) { c.Glance.AuthType = "none" }, "[glance] endpoint_override: required when auth_type is none"),
		Entry(nil, func(c *config.Config) { c.Glance.AuthType = "password"; c.Glance.AuthURL = "http://ks" }, "[glance] username: required"),
		Entry(nil, func(c *config.Config) {
			c.Glance = config.Glance{AuthType: "password", AuthURL: "http://ks", Username: "ironic", Password: "pw", ProjectName: "service"}
		}, "[glance] user_domain_name: required"),
		Entry(nil, func(c *config.Config) { c.Glance.EndpointOverride = "glance:9292" }, "[glance] endpoint_override: \"glance:9292\""),
		Entry(nil, func(c *config.Config) { c.ILO.SwiftObjectExpiryTimeout = 0 }, "[ilo] swift_object_expiry_timeout: must be positive"),
		Entry(nil, func(c *config.Config) { c.Swift.AuthType = "v1" }, `[swift] auth_type: "v1"`),
		Entry(nil, func(c *config.Config) {
			c.Swift = config.Swift{AuthType: "tempauth", AuthURL: "http://127.0.0.1:8080/auth/v1.0", Username: "test:tester"}
		}, "[swift] password: required when auth_type is tempauth"),
		Entry(nil, func(c *config.Config) {
			c.Swift = config.Swift{AuthType: "password", AuthURL: "http://ks", Username: "ironic", Password: "pw"}
		}, "[swift] project_name: required when auth_type is password"),
		Entry(nil, func(c *config.Config) { c.Agent.AgentEraseDevicesPriority = ptr(-1) }, "[agent] agent_erase_devices_priority: must not be negative"),
		Entry(nil, func(c *config.Config) { c.Deploy.ShredRandomOverwriteIterations = -1 }, "[deploy] shred_random_overwrite_iterations: must not be negative"),
		Entry(nil, func(c *config.Config) {
			c.Deploy.ShredRandomOverwriteIterations = 0
			c.Deploy.ShredFinalOverwriteWithZeros = false
		}, "[deploy] shred_random_overwrite_iterations: 0 with shred_final_overwrite_with_zeros false"),
		Entry(nil, func(c *config.Config) { c.Conductor.FileURLAllowedPaths = []string{"images"} }, `[conductor] file_url_allowed_paths: "images" is not an absolute path`),
		Entry(nil, func(c *config.Config) { c.Conductor.ImageDownloadAllowedNetworks = []string{"10.20.0.0"} }, `[conductor] image_download_allowed_networks: "10.20.0.0" is not a network in CIDR notation (such as 10.20.0.0/16)`),
		Entry(nil, func(c *config.Config) { c.Deploy.MaxImageSize = -1 }, "[deploy] max_image_size: must not be negative"),
		Entry(nil, func(c *config.Config) { c.PXE.MaxBootFileSize = 0 }, "[pxe] max_boot_file_size: must be positive"),
		Entry(nil, func(c *config.Config) { c.API.ReadTimeout = -time.Second }, "[api] read_timeout: must not be negative"),
		Entry(nil, func(c *config.Config) { c.Deploy.HTTPWriteTimeout = -time.Second }, "[deploy] http_write_timeout: must not be negative"),
		Entry(nil, func(c *config.Config) { c.API.WriteTimeout = 30 * time.Second }, "[api] write_timeout: 30s must exceed [rpc] response_timeout 1m0s"),
		Entry(nil, func(c *config.Config) { c.API.MaxHeaderSize = 0 }, "[api] max_header_size: must be positive"),
		Entry(nil, func(c *config.Config) { c.Deploy.HTTPMaxHeaderSize = 0 }, "[deploy] http_max_header_size: must be positive"),
	)

	DescribeTable("reports values outside what the options declare, in the declaration's words",
		func(mutate func(*config.Config), want string) {
			c := config.Defaults()
			mutate(&c)
			Expect(c.Validate()).To(MatchError(ContainSubstring(want)))
		},
		Entry("range lo..hi", func(c *config.Config) { c.ILO.ClientPort = 0 }, "[ilo] client_port: 0 is outside 1..65535"),
		Entry("range lo..hi, above", func(c *config.Config) { c.IPMI.CipherSuite = 18 }, "[ipmi] cipher_suite: 18 is outside 0..17"),
		Entry("range >0 on a duration", func(c *config.Config) { c.Conductor.HeartbeatInterval = 0 }, "[conductor] heartbeat_interval: must be positive"),
		Entry("range >0 on an integer", func(c *config.Config) { c.ISCSI.WriteWorkers = 0 }, "[iscsi] write_workers: must be positive"),
		Entry("range >=0", func(c *config.Config) { c.Database.MaxOverflow = -1 }, "[database] max_overflow: must not be negative"),
		Entry("choices", func(c *config.Config) { c.Deploy.DefaultBootOption = "pxe" }, `[deploy] default_boot_option: "pxe" is not one of local, netboot`),
		Entry("choices admitting empty", func(c *config.Config) { c.Glance.AuthType = "keystone" }, `[glance] auth_type: "keystone" is not one of none, password (or empty)`),
		Entry("format url", func(c *config.Config) { c.Deploy.HTTPURL = "ftp://boot" }, `[deploy] http_url: "ftp://boot" is not an http(s) URL`),
		Entry("required, blank", func(c *config.Config) { c.Default.Host = "  " }, "[DEFAULT] host: must not be empty"),
		Entry("required list", func(c *config.Config) { c.Conductor.EnabledHardwareTypes = []string{} }, "[conductor] enabled_hardware_types: must not be empty"),
		Entry("required by another option", func(c *config.Config) { c.Default.AuthStrategy = "http_basic" },
			"[api] http_basic_auth_user_file: required when [DEFAULT] auth_strategy is http_basic"),
	)

	It("accepts values on the edges of the declared ranges", func() {
		c := config.Defaults()
		c.API.Port, c.ISCSI.PortalPort, c.ILO.ClientPort = 1, 65535, 65535
		c.IPMI.CipherSuite, c.Default.HashPartitionExponent = 0, 16
		c.Default.HashRingResetInterval = time.Millisecond
		c.Database.MaxOverflow, c.Deploy.EraseDevicesPriority = 0, ptr(0)
		Expect(c.Validate()).To(Succeed())
	})

	It("checks a value read from a file against its declaration", func() {
		clearEnv()
		c, err := config.Load(writeFile("[iscsi]\nportal_port = 70000\n[DEFAULT]\nlog_format = xml\n"), os.Environ())
		Expect(err).NotTo(HaveOccurred())
		err = c.Validate()
		Expect(err).To(MatchError(ContainSubstring("[iscsi] portal_port: 70000 is outside 1..65535")))
		Expect(err).To(MatchError(ContainSubstring(`[DEFAULT] log_format: "xml" is not one of text, json`)))
	})

	It("lists all problems at once", func() {
		c := config.Defaults()
		c.API.Port = 0
		c.RPC.Transport = "x"
		err := c.Validate()
		Expect(err).To(MatchError(ContainSubstring("[api] port")))
		Expect(err).To(MatchError(ContainSubstring("[rpc] transport")))
	})

	It("allows zero to disable callback timeouts", func() {
		c := config.Defaults()
		c.Conductor.DeployCallbackTimeout = 0
		c.Conductor.CleanCallbackTimeout = 0
		c.Conductor.SyncPowerStateInterval = 0
		Expect(c.Validate()).To(Succeed())
	})
})

func ptr[T any](v T) *T { return &v }

// optionCount counts the fields of Config that carry an ini tag, the
// options the example must document.
func optionCount() int {
	n := 0
	t := reflect.TypeFor[config.Config]()
	for i := range t.NumField() {
		st := t.Field(i).Type
		for j := range st.NumField() {
			if _, ok := st.Field(j).Tag.Lookup("ini"); ok {
				n++
			}
		}
	}
	return n
}
