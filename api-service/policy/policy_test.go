package policy_test

import (
	"os"
	"path/filepath"

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
		e, err = policy.Load("")
		Expect(err).NotTo(HaveOccurred())
	})

	DescribeTable("who passes",
		func(rule string, wantReader, wantMember, wantAdmin bool) {
			Expect(e.Allowed(rule, reader)).To(Equal(wantReader), "reader")
			Expect(e.Allowed(rule, member)).To(Equal(wantMember), "member")
			Expect(e.Allowed(rule, admin)).To(Equal(wantAdmin), "admin")
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

	It("wants the system scope: a project-scoped admin passes nothing", func() {
		projectAdmin := policy.Credentials{Roles: []string{"admin", "member", "reader"}}
		for _, rule := range []string{"baremetal:node:get", "baremetal:node:update", "baremetal:node:delete"} {
			Expect(e.Allowed(rule, projectAdmin)).To(BeFalse(), rule)
		}
	})

	It("leaves the ramdisk's endpoints open and refuses unknown rules", func() {
		Expect(e.Allowed("baremetal:node:ipa_heartbeat", policy.Credentials{})).To(BeTrue())
		Expect(e.Allowed("baremetal:driver:ipa_lookup", policy.Credentials{})).To(BeTrue())
		Expect(e.Known("baremetal:node:frobnicate")).To(BeFalse())
		Expect(e.Allowed("baremetal:node:frobnicate", admin)).To(BeFalse())
	})

	It("answers a refusal as Ironic does: 403 naming the rule", func() {
		err := e.Authorize("baremetal:node:delete", member)
		Expect(errs.Status(err)).To(Equal(403))
		Expect(errs.Message(err)).To(Equal("Access was denied to the following resource: baremetal:node:delete"))
		Expect(e.Authorize("baremetal:node:delete", admin)).To(Succeed())
	})
})

var _ = Describe("the check language", func() {
	allowed := func(check string, c policy.Credentials) bool {
		e, err := policy.New(map[string]string{"t": check})
		Expect(err).NotTo(HaveOccurred())
		return e.Allowed("t", c)
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
	)

	DescribeTable("refuses what it cannot evaluate, naming the rule",
		func(overrides map[string]string, want string) {
			_, err := policy.New(overrides)
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry(nil, map[string]string{"baremetal:node:get": "role:admin and"}, "policy rule baremetal:node:get"),
		Entry(nil, map[string]string{"t": "(role:admin"}, "missing )"),
		Entry(nil, map[string]string{"t": "role:admin)"}, `unexpected ")"`),
		Entry(nil, map[string]string{"t": "project_id:%(node.owner)s"}, "not supported"),
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
`))
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Allowed("baremetal:node:delete", member)).To(BeTrue())
		Expect(e.Allowed("baremetal:node:get", policy.Credentials{Roles: []string{"auditor"}})).To(BeTrue())
		Expect(e.Allowed("baremetal:port:delete", member)).To(BeFalse())
	})

	It("reads JSON and lets an overridden base rule change every rule naming it", func() {
		e, err := policy.Load(write("policy.json", `{"system_reader": "role:reader"}`))
		Expect(err).NotTo(HaveOccurred())
		projectReader := policy.Credentials{Roles: []string{"reader"}}
		Expect(e.Allowed("baremetal:node:get", projectReader)).To(BeTrue())
		Expect(e.Allowed("baremetal:port:list", projectReader)).To(BeTrue())
		Expect(e.Allowed("baremetal:node:update", projectReader)).To(BeFalse())
	})

	It("fails on a file that is not a mapping of strings, or is missing", func() {
		_, err := policy.Load(write("bad.yaml", "- role:admin\n"))
		Expect(err).To(MatchError(ContainSubstring("expected a mapping of rule names to check strings")))
		_, err = policy.Load(filepath.Join(GinkgoT().TempDir(), "none.yaml"))
		Expect(err).To(MatchError(ContainSubstring("read policy file")))
	})
})
