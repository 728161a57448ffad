package policy_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/api-service/policy"
	"github.com/ferricbm/ferric/pkg/errs"
)

// system are the credentials of a system-scoped token with roles, as
// Keystone lists them (implied roles included).
func system(roles ...string) policy.Credentials {
	return policy.Credentials{Roles: roles, SystemScope: "all"}
}

var (
	admin  = system("admin", "member", "reader")
	member = system("member", "reader")
	reader = system("reader")
)

var _ = Describe("default rules", func() {
	var e *policy.Enforcer
	BeforeEach(func() {
		var err error
		e, err = policy.Load("", policy.Options{})
		Expect(err).NotTo(HaveOccurred())
	})

	DescribeTable("who passes",
		func(rule string, wantReader, wantMember, wantAdmin bool) {
			Expect(e.Allowed(rule, reader, nil)).To(Equal(wantReader), "reader")
			Expect(e.Allowed(rule, member, nil)).To(Equal(wantMember), "member")
			Expect(e.Allowed(rule, admin, nil)).To(Equal(wantAdmin), "admin")
		},
		Entry(nil, "baremetal:node:get", true, true, true),
		Entry(nil, "baremetal:node:list", true, true, true),
		Entry(nil, "baremetal:node:update", false, true, true),
		Entry(nil, "baremetal:node:set_provision_state", false, true, true),
		Entry(nil, "baremetal:node:update:driver_info", false, false, true),
		Entry(nil, "baremetal:node:create", false, false, true),
		Entry(nil, "baremetal:node:delete", false, false, true),
		Entry(nil, "baremetal:node:vendor_passthru", false, false, true),
		Entry(nil, "baremetal:port:update", false, true, true),
		Entry(nil, "baremetal:port:delete", false, false, true),
		Entry(nil, "baremetal:chassis:create", false, false, true),
		Entry(nil, "baremetal:conductor:get", true, true, true),
	)

	It("wants the system scope or a node of the token's project: a project-scoped admin without a node passes nothing", func() {
		projectAdmin := policy.Credentials{Roles: []string{"admin", "member", "reader"}, ProjectID: "p1"}
		for _, rule := range []string{"baremetal:node:get", "baremetal:node:update", "baremetal:node:delete"} {
			Expect(e.Allowed(rule, projectAdmin, nil)).To(BeFalse(), rule)
		}
	})

	It("leaves the ramdisk's endpoints open and refuses unknown rules", func() {
		Expect(e.Allowed("baremetal:node:ipa_heartbeat", policy.Credentials{}, nil)).To(BeTrue())
		Expect(e.Allowed("baremetal:driver:ipa_lookup", policy.Credentials{}, nil)).To(BeTrue())
		Expect(e.Known("baremetal:node:frobnicate")).To(BeFalse())
		Expect(e.Allowed("baremetal:node:frobnicate", admin, nil)).To(BeFalse())
	})

	It("answers a refusal as Ironic does: 403 naming the rule", func() {
		err := e.Authorize("baremetal:node:delete", member, nil)
		Expect(errs.Status(err)).To(Equal(403))
		Expect(errs.Message(err)).To(Equal("Access was denied to the following resource: baremetal:node:delete"))
		Expect(e.Authorize("baremetal:node:delete", admin, nil)).To(Succeed())
	})
})

var _ = Describe("default rules for project-scoped tokens", func() {
	// The node is owned by project "own" and leased to project "lease".
	node := policy.Target{"node.owner": "own", "node.lessee": "lease"}
	project := func(id string, roles ...string) policy.Credentials {
		return policy.Credentials{Roles: roles, ProjectID: id}
	}
	var (
		ownerAdmin   = project("own", "admin", "member", "reader")
		ownerMember  = project("own", "member", "reader")
		ownerReader  = project("own", "reader")
		lesseeAdmin  = project("lease", "admin", "member", "reader")
		lesseeMember = project("lease", "member", "reader")
		lesseeReader = project("lease", "reader")
		otherAdmin   = project("other", "admin", "member", "reader")
		// The service role on the node's owner, and on the service
		// project (what Nova's driver holds).
		ownerService = project("own", "service")
		service      = policy.Credentials{Roles: []string{"service"}, ProjectID: "svc", ProjectName: "service"}
	)
	var e *policy.Enforcer
	BeforeEach(func() {
		var err error
		e, err = policy.Load("", policy.Options{})
		Expect(err).NotTo(HaveOccurred())
	})

	DescribeTable("who passes on the node",
		func(rule string, want ...policy.Credentials) {
			all := []policy.Credentials{ownerAdmin, ownerMember, ownerReader, lesseeAdmin, lesseeMember, lesseeReader, otherAdmin,
				ownerService, service}
			for _, c := range all {
				wanted := slices.ContainsFunc(want, func(w policy.Credentials) bool { return reflect.DeepEqual(w, c) })
				Expect(e.Allowed(rule, c, node)).To(Equal(wanted), "%s: %v", rule, c)
			}
		},
		Entry(nil, "baremetal:node:get", ownerAdmin, ownerMember, ownerReader, lesseeAdmin, lesseeMember, lesseeReader, ownerService, service),
		Entry(nil, "baremetal:node:get_states", ownerAdmin, ownerMember, ownerReader, lesseeAdmin, lesseeMember, lesseeReader, ownerService, service),
		Entry(nil, "baremetal:node:get:filter_threshold", service),
		Entry(nil, "baremetal:node:get:driver_info", ownerAdmin, ownerMember, ownerReader, ownerService, service),
		Entry(nil, "baremetal:node:get:driver_internal_info", ownerAdmin, ownerMember, ownerReader, ownerService, service),
		Entry(nil, "baremetal:node:get:last_error", ownerAdmin, ownerMember, ownerReader, ownerService, service),
		Entry(nil, "baremetal:node:get:reservation", ownerAdmin, ownerMember, ownerReader, ownerService, service),
		Entry(nil, "baremetal:node:update", ownerAdmin, ownerMember, lesseeAdmin, lesseeMember, service),
		Entry(nil, "baremetal:node:update_extra", ownerAdmin, ownerMember, lesseeAdmin, lesseeMember, service),
		Entry(nil, "baremetal:node:update_instance_info", ownerAdmin, ownerMember, lesseeAdmin, ownerService, service),
		Entry(nil, "baremetal:node:update_owner_provisioned"),
		Entry(nil, "baremetal:node:disable_cleaning"),
		Entry(nil, "baremetal:node:update:driver_info"),
		Entry(nil, "baremetal:node:update:properties", ownerAdmin, ownerMember, ownerService, service),
		Entry(nil, "baremetal:node:update:chassis_uuid"),
		Entry(nil, "baremetal:node:update:instance_uuid", ownerAdmin, ownerMember, ownerService, service),
		Entry(nil, "baremetal:node:update:lessee", ownerAdmin, ownerMember, ownerService, service),
		Entry(nil, "baremetal:node:update:owner", service),
		Entry(nil, "baremetal:node:update:driver_interfaces", ownerAdmin, ownerService, service),
		Entry(nil, "baremetal:node:update:network_data", ownerAdmin, ownerMember, ownerService, service),
		Entry(nil, "baremetal:node:update:conductor_group", service),
		Entry(nil, "baremetal:node:update:name", ownerAdmin, ownerMember, ownerService, service),
		Entry(nil, "baremetal:node:update:retired", ownerAdmin, ownerMember, ownerService, service),
		Entry(nil, "baremetal:node:set_power_state", ownerAdmin, ownerMember, lesseeAdmin, lesseeMember, service),
		Entry(nil, "baremetal:node:set_provision_state", ownerAdmin, ownerMember, lesseeAdmin, ownerService, service),
		Entry(nil, "baremetal:node:set_maintenance", ownerAdmin, ownerMember, lesseeAdmin, ownerService, service),
		Entry(nil, "baremetal:node:vif:attach", ownerAdmin, ownerMember, lesseeAdmin, ownerService, service),
		Entry(nil, "baremetal:node:set_boot_device", ownerAdmin, ownerService, service),
		Entry(nil, "baremetal:node:traits:set", ownerAdmin, ownerMember, ownerService, service),
		Entry(nil, "baremetal:node:delete"),
		Entry(nil, "baremetal:node:create"),
		Entry(nil, "baremetal:node:vendor_passthru"),
	)

	It("lets project readers list, but only system readers list every node", func() {
		Expect(e.Allowed("baremetal:node:list", ownerReader, nil)).To(BeTrue())
		Expect(e.Allowed("baremetal:node:list_all", ownerAdmin, nil)).To(BeFalse())
		Expect(e.Allowed("baremetal:node:list_all", reader, nil)).To(BeTrue())
	})

	It("keeps system-scoped tokens as they were, whatever the node", func() {
		for _, rule := range []string{"baremetal:node:get", "baremetal:node:set_provision_state", "baremetal:node:update:owner"} {
			Expect(e.Allowed(rule, member, node)).To(BeTrue(), rule)
		}
		Expect(e.Allowed("baremetal:node:update", reader, node)).To(BeFalse())
		Expect(e.Allowed("baremetal:node:update:driver_info", member, node)).To(BeFalse())
	})
})

var _ = Describe("the check language", func() {
	target := policy.Target{"node.owner": "p-owner", "node.lessee": ""}
	allowed := func(check string, c policy.Credentials) bool {
		e, err := policy.New(map[string]string{"t": check})
		Expect(err).NotTo(HaveOccurred())
		return e.Allowed("t", c, target)
	}

	DescribeTable("evaluates",
		func(check string, c policy.Credentials, want bool) {
			Expect(allowed(check, c)).To(Equal(want))
		},
		Entry("empty is always", "", policy.Credentials{}, true),
		Entry("@ is always", "@", policy.Credentials{}, true),
		Entry("! is never", "!", admin, false),
		Entry("role", "role:reader", reader, true),
		Entry("role compared lower-cased", "role:Reader", reader, true),
		Entry("missing role", "role:admin", reader, false),
		Entry("system scope", "system_scope:all", policy.Credentials{SystemScope: "all"}, true),
		Entry("no system scope", "system_scope:all", policy.Credentials{Roles: []string{"admin"}}, false),
		Entry("and", "role:member and system_scope:all", member, true),
		Entry("and, one false", "role:admin and system_scope:all", member, false),
		Entry("or", "role:admin or role:reader", reader, true),
		Entry("not", "not role:admin", reader, true),
		Entry("not binds tighter than and", "not role:admin and role:reader", admin, false),
		Entry("and binds tighter than or", "role:admin or role:reader and role:nope", admin, true),
		Entry("parentheses", "(role:admin or role:reader) and role:nope", admin, false),
		Entry("parentheses glued to checks", "(role:admin or (role:member))", member, true),
		Entry("rule reference", "rule:system_member", member, true),
		Entry("rule reference refused", "rule:system_admin", member, false),
		Entry("project of the target", "project_id:%(node.owner)s", policy.Credentials{ProjectID: "p-owner"}, true),
		Entry("another project than the target's", "project_id:%(node.owner)s", policy.Credentials{ProjectID: "p-other"}, false),
		Entry("an empty target value matches no one", "project_id:%(node.lessee)s", policy.Credentials{}, false),
		Entry("a target the request lacks", "project_id:%(node.nothing)s", policy.Credentials{ProjectID: "p-owner"}, false),
		Entry("a literal project", "project_id:p-owner", policy.Credentials{ProjectID: "p-owner"}, true),
		Entry("a target inside parentheses", "(role:reader and (project_id:%(node.owner)s))",
			policy.Credentials{Roles: []string{"reader"}, ProjectID: "p-owner"}, true),
	)

	DescribeTable("refuses what it cannot evaluate, naming the rule",
		func(overrides map[string]string, want string) {
			_, err := policy.New(overrides)
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry(nil, map[string]string{"baremetal:node:get": "role:admin and"}, "policy rule baremetal:node:get"),
		Entry(nil, map[string]string{"t": "(role:admin"}, "missing )"),
		Entry(nil, map[string]string{"t": "role:admin)"}, `unexpected ")"`),
		Entry(nil, map[string]string{"t": "user_id:%(node.owner)s"}, "not supported"),
		Entry(nil, map[string]string{"t": "project_id:%(node.owner"}, "a target is written %(name)s"),
		Entry(nil, map[string]string{"t": "admin"}, "is not kind:match"),
		Entry(nil, map[string]string{"t": "rule:nowhere"}, "rule:nowhere is not defined"),
		Entry(nil, map[string]string{"a": "rule:b", "b": "role:x or rule:a"}, "refers to itself"),
	)
})

var _ = Describe("policy files", func() {
	write := func(name, content string) string {
		path := filepath.Join(GinkgoT().TempDir(), name)
		Expect(os.WriteFile(path, []byte(content), 0o600)).To(Succeed())
		return path
	}

	It("overrides single rules from YAML and keeps the other defaults", func() {
		e, err := policy.Load(write("policy.yaml", `# members may delete nodes here
"baremetal:node:delete": "rule:system_member"
"baremetal:node:get": "role:auditor or rule:system_reader"
`), policy.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Allowed("baremetal:node:delete", member, nil)).To(BeTrue())
		Expect(e.Allowed("baremetal:node:get", policy.Credentials{Roles: []string{"auditor"}}, nil)).To(BeTrue())
		Expect(e.Allowed("baremetal:port:delete", member, nil)).To(BeFalse())
	})

	It("reads JSON and lets an overridden base rule change every rule naming it", func() {
		e, err := policy.Load(write("policy.json", `{"system_reader": "role:reader"}`), policy.Options{})
		Expect(err).NotTo(HaveOccurred())
		projectReader := policy.Credentials{Roles: []string{"reader"}}
		Expect(e.Allowed("baremetal:node:get", projectReader, nil)).To(BeTrue())
		Expect(e.Allowed("baremetal:port:list", projectReader, nil)).To(BeTrue())
		Expect(e.Allowed("baremetal:node:update", projectReader, nil)).To(BeFalse())
	})

	It("fails on a file that is not a mapping of strings, or is missing", func() {
		_, err := policy.Load(write("bad.yaml", "- role:admin\n"), policy.Options{})
		Expect(err).To(MatchError(ContainSubstring("expected a mapping of rule names to check strings")))
		_, err = policy.Load(filepath.Join(GinkgoT().TempDir(), "none.yaml"), policy.Options{})
		Expect(err).To(MatchError(ContainSubstring("read policy file")))
	})
})

var _ = Describe("without enforce_new_defaults", func() {
	projectAdmin := policy.Credentials{Roles: []string{"admin", "member", "reader"}, ProjectID: "p1"}
	projectMember := policy.Credentials{Roles: []string{"member", "reader"}, ProjectID: "p1"}

	It("lets a project-scoped admin do what a system admin does, a project member no more than before", func() {
		e, err := policy.NewWith(nil, policy.Options{Legacy: true})
		Expect(err).NotTo(HaveOccurred())
		for _, rule := range []string{"baremetal:node:create", "baremetal:node:list_all", "baremetal:node:get:filter_threshold",
			"baremetal:node:update:driver_info", "baremetal:port:create", "baremetal:chassis:delete"} {
			Expect(e.Allowed(rule, projectAdmin, nil)).To(BeTrue(), rule)
			Expect(e.Allowed(rule, projectMember, nil)).To(BeFalse(), rule)
		}
		Expect(e.Allowed("baremetal:node:update", policy.Credentials{Roles: []string{"administrator"}, ProjectID: "p1"}, nil)).To(BeTrue())
	})

	It("leaves a rule the policy file overrides as written, and is off by default", func() {
		e, err := policy.NewWith(map[string]string{"baremetal:node:delete": "rule:system_admin"}, policy.Options{Legacy: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Allowed("baremetal:node:delete", projectAdmin, nil)).To(BeFalse())
		strict, err := policy.New(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(strict.Allowed("baremetal:node:create", projectAdmin, nil)).To(BeFalse())
	})
})
