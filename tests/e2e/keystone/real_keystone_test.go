package keystone_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/db/dbtest"
	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/harness/realkeystone"
)

// The node rules against Debian's Keystone, not the stand-in: real
// Fernet tokens with Keystone's role implications, system and project
// scopes and the service role, checked by `ferric serve`.
var _ = Describe("the node rules with a real Keystone", Ordered, func() {
	var (
		url    string
		tokens = map[string]string{}
		node   string
		// legacyURL is a second API with enforce_new_defaults = false;
		// projectAdmin a token of bootstrap's admin on its project.
		legacyURL, projectAdmin string
	)
	const password = "e2e-pw"

	BeforeAll(func(ctx SpecContext) {
		if err := realkeystone.Available(); errors.Is(err, realkeystone.ErrMissing) {
			Skip(err.Error())
		}
		dir := GinkgoT().TempDir()
		ks, err := realkeystone.Start(ctx, dir)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(ks.Close)

		role := map[string]string{}
		for _, name := range []string{"admin", "member", "reader"} {
			role[name], err = ks.RoleID(ctx, name)
			Expect(err).NotTo(HaveOccurred())
		}
		role["service"], err = ks.CreateRole(ctx, "service")
		Expect(err).NotTo(HaveOccurred())
		project := map[string]string{}
		for _, name := range []string{"service", "owner", "lessee"} {
			project[name], err = ks.CreateProject(ctx, name)
			Expect(err).NotTo(HaveOccurred())
		}
		user := func(name string) string {
			id, err := ks.CreateUser(ctx, name, password)
			Expect(err).NotTo(HaveOccurred())
			return id
		}
		ironic := user("ironic")
		Expect(ks.GrantProject(ctx, project["service"], ironic, role["service"])).To(Succeed())
		Expect(ks.GrantProject(ctx, project["service"], ironic, role["admin"])).To(Succeed())
		nova := user("nova")
		Expect(ks.GrantProject(ctx, project["service"], nova, role["service"])).To(Succeed())
		for _, r := range []string{"admin", "member", "reader"} {
			Expect(ks.GrantSystem(ctx, user("system-"+r), role[r])).To(Succeed())
			for _, p := range []string{"owner", "lessee"} {
				Expect(ks.GrantProject(ctx, project[p], user(p+"-"+r), role[r])).To(Succeed())
			}
		}
		for _, r := range []string{"admin", "member", "reader"} {
			tokens["system "+r], err = ks.SystemToken(ctx, "system-"+r, password)
			Expect(err).NotTo(HaveOccurred())
			for _, p := range []string{"owner", "lessee"} {
				tokens[p+" "+r], err = ks.ProjectToken(ctx, p+"-"+r, password, p)
				Expect(err).NotTo(HaveOccurred())
			}
		}
		tokens["service"], err = ks.ProjectToken(ctx, "nova", password, "service")
		Expect(err).NotTo(HaveOccurred())

		dataDir := GinkgoT().TempDir()
		cfg := harness.BaseConfig(dbtest.SQLiteURL(dataDir), "inprocess", harness.FastTimings).
			Set("DEFAULT", "auth_strategy", "keystone").
			Set("keystone_authtoken", "auth_url", ks.URL+"/v3").
			Set("keystone_authtoken", "username", "ironic").
			Set("keystone_authtoken", "password", password).
			Set("keystone_authtoken", "project_name", "service")
		d := steps.NewDeployment(steps.BuildBinaries(), cfg)
		_, err = d.StartServe(ctx, "serve-real-keystone")
		Expect(err).NotTo(HaveOccurred())
		url = d.APIURL
		DeferCleanup(func() { steps.ReportLogsIfFailed(d) })
		// A database of its own: two ferric serve processes on one file
		// would share a hash ring but not their in-process RPC, and a node
		// could fall to the conductor the other process cannot reach.
		legacyCfg := cfg.Clone().Set("database", "connection", dbtest.SQLiteURL(GinkgoT().TempDir())).
			Set("oslo_policy", "enforce_new_defaults", false)
		legacy := steps.NewDeployment(steps.BuildBinaries(), legacyCfg)
		_, err = legacy.StartServe(ctx, "serve-legacy-policy")
		Expect(err).NotTo(HaveOccurred())
		legacyURL = legacy.APIURL
		DeferCleanup(func() { steps.ReportLogsIfFailed(legacy) })
		projectAdmin, err = ks.ProjectToken(ctx, "admin", ks.AdminPassword, "admin")
		Expect(err).NotTo(HaveOccurred())

		r := call(ctx, url, tokens["system admin"], http.MethodPost, "/v1/nodes", map[string]any{"driver": "fake-hardware",
			"driver_info": map[string]any{"ipmi_address": "10.0.0.7"}})
		Expect(r.Status).To(Equal(http.StatusCreated), string(r.Body))
		var created struct{ UUID string }
		Expect(json.Unmarshal(r.Body, &created)).To(Succeed())
		node = created.UUID
		// The API's microversions do not take a lessee yet.
		store, err := db.Open(ctx, dbtest.SQLiteURL(dataDir))
		Expect(err).NotTo(HaveOccurred())
		defer func() { Expect(store.Close()).To(Succeed()) }()
		n, err := store.GetNode(ctx, node)
		Expect(err).NotTo(HaveOccurred())
		owner, lessee := project["owner"], project["lessee"]
		n.Owner, n.Lessee = &owner, &lessee
		Expect(store.SaveNode(ctx, n)).To(Succeed())
	}, NodeTimeout(harness.ReadyTimeout*6))

	DescribeTable("who may change what, with Keystone's own tokens",
		func(ctx SpecContext, field, rule string, allowed ...string) {
			for _, who := range slices.Sorted(maps.Keys(tokens)) {
				// Each persona writes its own value, so that every PATCH
				// changes the field.
				patch := []map[string]any{{"op": "add", "path": field, "value": who}}
				switch field {
				case "/maintenance":
					patch = []map[string]any{{"op": "replace", "path": field, "value": true}}
				case "/automated_clean":
					patch = []map[string]any{{"op": "add", "path": field, "value": false}}
				}
				r := call(ctx, url, tokens[who], http.MethodPatch, "/v1/nodes/"+node, patch)
				if slices.Contains(allowed, who) {
					Expect(r.Status).To(Equal(http.StatusOK), "%s: %s", who, r.Body)
					// Undone, so that the next persona's PATCH changes it again.
					switch field {
					case "/maintenance":
						Expect(call(ctx, url, tokens["system admin"], http.MethodDelete, "/v1/nodes/"+node+"/maintenance", nil).Status).
							To(Equal(http.StatusAccepted))
					case "/automated_clean":
						Expect(call(ctx, url, tokens["system admin"], http.MethodPatch, "/v1/nodes/"+node,
							[]map[string]any{{"op": "add", "path": field, "value": true}}).Status).To(Equal(http.StatusOK))
					}
					continue
				}
				Expect(r.Status).To(Equal(http.StatusForbidden), "%s: %s", who, r.Body)
				Expect(string(r.Body)).To(ContainSubstring("Access was denied to the following resource: "+rule), who)
			}
		},
		Entry("extra", "/extra/a", "baremetal:node:update_extra",
			"system admin", "system member", "owner admin", "owner member", "lessee admin", "lessee member", "service"),
		Entry("instance_info", "/instance_info/image_source", "baremetal:node:update_instance_info",
			"system admin", "system member", "owner admin", "owner member", "lessee admin", "service"),
		Entry("properties", "/properties/cpu_arch", "baremetal:node:update:properties",
			"system admin", "system member", "owner admin", "owner member", "service"),
		Entry("driver_info", "/driver_info/ipmi_username", "baremetal:node:update:driver_info", "system admin"),
		Entry("maintenance", "/maintenance", "baremetal:node:set_maintenance",
			"system admin", "system member", "owner admin", "owner member", "lessee admin", "service"),
		Entry("automated_clean off", "/automated_clean", "baremetal:node:disable_cleaning", "system admin"),
	)

	It("gives a project-scoped admin token a system admin's rights only without enforce_new_defaults", func(ctx SpecContext) {
		body := map[string]any{"driver": "fake-hardware"}
		r := call(ctx, url, projectAdmin, http.MethodPost, "/v1/nodes", body)
		Expect(r.Status).To(Equal(http.StatusForbidden), string(r.Body))
		r = call(ctx, legacyURL, projectAdmin, http.MethodPost, "/v1/nodes", body)
		Expect(r.Status).To(Equal(http.StatusCreated), string(r.Body))
	})

	It("keeps the owner's infrastructure from the lessee and shows it to the owner and the service", func(ctx SpecContext) {
		for who := range tokens {
			r := call(ctx, url, tokens[who], http.MethodGet, "/v1/nodes/"+node, nil)
			Expect(r.Status).To(Equal(http.StatusOK), "%s: %s", who, r.Body)
			hidden := strings.HasPrefix(who, "lessee")
			Expect(strings.Contains(string(r.Body), "10.0.0.7")).To(Equal(!hidden), who)
		}
	})
})

// call sends a JSON request with a token at the latest microversion.
func call(ctx context.Context, url, tok, method, path string, body any) *harness.Response {
	GinkgoHelper()
	r, err := harness.Do(ctx, method, url+path, body, map[string]string{"X-Auth-Token": tok, "X-OpenStack-Ironic-API-Version": "latest"})
	Expect(err).NotTo(HaveOccurred())
	return r
}
