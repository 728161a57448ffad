package apiservice_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/api-service/apitest"
	"github.com/ferricbm/ferric/deploy/image/keystonetest"
	"github.com/ferricbm/ferric/pkg/config"
)

// persona is one of the nine kinds of token the node rules tell apart:
// system-scoped, or scoped to the node's owner or lessee project, each
// with the admin, member or reader role.
type persona struct {
	name string
	user keystonetest.User
}

var personas = func() []persona {
	var out []persona
	for _, scope := range []string{"system", "owner", "lessee"} {
		for _, role := range []string{"admin", "member", "reader"} {
			name := scope + " " + role
			u := keystonetest.User{Name: scope + "-" + role, Domain: "Default", Password: scope + "-" + role + "-pw",
				Project: "tenant-" + scope, ProjectDomain: "Default", Roles: []string{role}, System: scope == "system"}
			out = append(out, persona{name, u})
		}
	}
	return out
}()

// keystonePersonas starts a Keystone stand-in and a stack using it, and
// a token per persona; the node call creates a node owned by
// tenant-owner and leased to tenant-lessee, set in the database since
// the API's microversions do not take a lessee yet.
func keystonePersonas() (e *env, ks *keystonetest.Server, tokens map[string]string, node func() string) {
	ks = newKeystone()
	e = newEnv(GinkgoT(), apitest.SQLite(GinkgoT()), keystoneConfig(ks.URL))
	tokens = map[string]string{}
	for _, p := range personas {
		ks.AddUser(p.user)
		t, err := ks.Issue(context.Background(), p.user, p.user.System)
		Expect(err).NotTo(HaveOccurred())
		tokens[p.name] = t
	}
	node = func() string {
		GinkgoHelper()
		n, err := e.store.GetNode(context.Background(), e.createNodeAs(`, "driver_info": {"ipmi_address": "10.0.0.7"}`,
			"X-Auth-Token", tokens["system admin"]))
		Expect(err).NotTo(HaveOccurred())
		owner, lessee, lastError := keystonetest.ProjectID("tenant-owner"), keystonetest.ProjectID("tenant-lessee"), "BMC 10.0.0.7 timed out"
		n.Owner, n.Lessee, n.LastError = &owner, &lessee, &lastError
		n.DriverInternalInfo = map[string]any{"agent_url": "http://10.0.0.8:9999"}
		Expect(e.store.SaveNode(context.Background(), n)).To(Succeed())
		return n.UUID
	}
	return e, ks, tokens, node
}

var _ = Describe("node PATCH rules by field and persona", func() {
	var (
		e      *env
		tokens map[string]string
		node   func() string
	)
	BeforeEach(func() { e, _, tokens, node = keystonePersonas() })

	// Every persona patches a node of its own; those listed succeed, the
	// others get 403 naming the rule, and their node is left as it was.
	DescribeTable("who may change what",
		func(patch, rule string, allowed ...string) {
			chassis := e.call(http.MethodPost, "/v1/chassis", `{}`, "X-Auth-Token", tokens["system admin"]).json()["uuid"].(string)
			for i, p := range personas {
				uuid := node()
				// Names and instances are unique: each persona sets its own.
				body := strings.ReplaceAll(patch, "{i}", strconv.Itoa(i))
				if rule == "baremetal:node:update:chassis_uuid" {
					body = `[{"op": "add", "path": "/chassis_uuid", "value": "` + chassis + `"}]`
				}
				before := e.call(http.MethodGet, "/v1/nodes/"+uuid, "", "X-Auth-Token", tokens["system admin"], "X-OpenStack-Ironic-API-Version", "latest")
				r := e.call(http.MethodPatch, "/v1/nodes/"+uuid, body, "X-Auth-Token", tokens[p.name], "X-OpenStack-Ironic-API-Version", "latest")
				if slices.Contains(allowed, p.name) {
					if rule == "baremetal:node:update:conductor_group" {
						// Past the rules, no conductor serves the new group.
						Expect(r.fault()["faultstring"]).To(HavePrefix("No valid host was found."), p.name)
						continue
					}
					Expect(r.status).To(Equal(http.StatusOK), "%s: %s", p.name, r.raw)
					continue
				}
				Expect(r.status).To(Equal(http.StatusForbidden), "%s: %s", p.name, r.raw)
				Expect(r.fault()["faultstring"]).To(Equal("Access was denied to the following resource: "+rule), p.name)
				after := e.call(http.MethodGet, "/v1/nodes/"+uuid, "", "X-Auth-Token", tokens["system admin"], "X-OpenStack-Ironic-API-Version", "latest")
				Expect(after.json()).To(Equal(before.json()), p.name)
			}
		},
		Entry("extra", `[{"op": "add", "path": "/extra/a", "value": "b"}]`, "baremetal:node:update_extra",
			"system admin", "system member", "owner admin", "owner member", "lessee admin", "lessee member"),
		Entry("instance_info", `[{"op": "add", "path": "/instance_info/image_source", "value": "http://img"}]`, "baremetal:node:update_instance_info",
			"system admin", "system member", "owner admin", "owner member", "lessee admin"),
		Entry("driver_info", `[{"op": "add", "path": "/driver_info/ipmi_username", "value": "u"}]`, "baremetal:node:update:driver_info",
			"system admin"),
		Entry("properties", `[{"op": "add", "path": "/properties/cpus", "value": 8}]`, "baremetal:node:update:properties",
			"system admin", "system member", "owner admin", "owner member"),
		Entry("chassis_uuid", "", "baremetal:node:update:chassis_uuid",
			"system admin"),
		Entry("instance_uuid", `[{"op": "add", "path": "/instance_uuid", "value": "6b4b3ad0-5a53-4c2c-9a38-0d2a5a3e1a1{i}"}]`, "baremetal:node:update:instance_uuid",
			"system admin", "system member", "owner admin", "owner member"),
		Entry("owner", `[{"op": "add", "path": "/owner", "value": "someone"}]`, "baremetal:node:update:owner",
			"system admin", "system member"),
		Entry("driver interfaces", `[{"op": "add", "path": "/raid_interface", "value": "no-raid"}]`, "baremetal:node:update:driver_interfaces",
			"system admin", "system member", "owner admin"),
		Entry("name", `[{"op": "add", "path": "/name", "value": "renamed-{i}"}]`, "baremetal:node:update:name",
			"system admin", "system member", "owner admin", "owner member"),
		Entry("maintenance set", `[{"op": "add", "path": "/maintenance", "value": true}]`, "baremetal:node:set_maintenance",
			"system admin", "system member", "owner admin", "owner member", "lessee admin"),
		Entry("automated_clean off", `[{"op": "add", "path": "/automated_clean", "value": false}]`, "baremetal:node:disable_cleaning",
			"system admin"),
		Entry("automated_clean on", `[{"op": "add", "path": "/automated_clean", "value": true}]`, "baremetal:node:update",
			"system admin", "system member", "owner admin", "owner member", "lessee admin", "lessee member"),
		Entry("conductor_group", `[{"op": "add", "path": "/conductor_group", "value": "rack4"}]`, "baremetal:node:update:conductor_group",
			"system admin", "system member"),
		Entry("resource_class", `[{"op": "add", "path": "/resource_class", "value": "gold"}]`, "baremetal:node:update",
			"system admin", "system member", "owner admin", "owner member", "lessee admin", "lessee member"),
	)
})

var _ = Describe("node fields hidden from the lessee", func() {
	It("redacts driver_info, driver_internal_info and last_error for the lessee's tokens, on a node, its states and lists", func() {
		e, _, tokens, node := keystonePersonas()
		uuid := node()
		get := func(who, path string) map[string]any {
			GinkgoHelper()
			r := e.call(http.MethodGet, path, "", "X-Auth-Token", tokens[who], "X-OpenStack-Ironic-API-Version", "latest")
			Expect(r.status).To(Equal(http.StatusOK), "%s %s: %s", who, path, r.raw)
			return r.json()
		}
		first := func(doc map[string]any) map[string]any { return doc["nodes"].([]any)[0].(map[string]any) }
		for _, p := range personas {
			if p.name == "lessee admin" || p.name == "lessee member" || p.name == "lessee reader" {
				for _, n := range []map[string]any{get(p.name, "/v1/nodes/"+uuid), first(get(p.name, "/v1/nodes/detail")),
					first(get(p.name, "/v1/nodes?fields=uuid,driver_info,last_error"))} {
					Expect(n["driver_info"]).To(Equal(map[string]any{"content": "** Redacted - requires baremetal:node:get:driver_info permission. **"}), p.name)
					Expect(n["last_error"]).To(Equal("** Redacted - requires baremetal:node:get:last_error permission. **"), p.name)
					Expect(fmt.Sprint(n)).NotTo(ContainSubstring("10.0.0."), p.name)
				}
				Expect(get(p.name, "/v1/nodes/"+uuid)["driver_internal_info"]).To(HaveKey("content"), p.name)
				Expect(get(p.name, "/v1/nodes/"+uuid+"/states")["last_error"]).To(HavePrefix("** Redacted"), p.name)
				continue
			}
			n := get(p.name, "/v1/nodes/"+uuid)
			Expect(n["driver_info"]).To(HaveKeyWithValue("ipmi_address", "10.0.0.7"), p.name)
			Expect(n["driver_internal_info"]).To(HaveKeyWithValue("agent_url", "http://10.0.0.8:9999"), p.name)
			Expect(n["last_error"]).To(Equal("BMC 10.0.0.7 timed out"), p.name)
			Expect(first(get(p.name, "/v1/nodes?fields=uuid,last_error"))["last_error"]).To(Equal("BMC 10.0.0.7 timed out"), p.name)
		}
	})
})

var _ = Describe("the service role", func() {
	It("lets a token with the service role on the service project act as Nova's driver does, on any node, short of a system admin", func() {
		e, ks, tokens, node := keystonePersonas()
		uuid, others := node(), e.createNodeAs("", "X-Auth-Token", tokens["system admin"])
		nova := keystonetest.User{Name: "nova", Domain: "Default", Password: "nova-pw", Project: "service", ProjectDomain: "Default", Roles: []string{"service"}}
		ks.AddUser(nova)
		tok, err := ks.Issue(context.Background(), nova, false)
		Expect(err).NotTo(HaveOccurred())
		call := func(method, path, body string) response {
			return e.call(method, path, body, "X-Auth-Token", tok, "X-OpenStack-Ironic-API-Version", "latest")
		}
		var listed []any
		list := call(http.MethodGet, "/v1/nodes", "")
		Expect(list.status).To(Equal(http.StatusOK), string(list.raw))
		for _, n := range list.json()["nodes"].([]any) {
			listed = append(listed, n.(map[string]any)["uuid"])
		}
		Expect(listed).To(ConsistOf(uuid, others))
		Expect(call(http.MethodGet, "/v1/nodes/"+others, "").json()["driver_info"]).NotTo(HaveKey("content"))
		r := call(http.MethodPatch, "/v1/nodes/"+uuid, `[{"op": "add", "path": "/instance_uuid", "value": "6b4b3ad0-5a53-4c2c-9a38-0d2a5a3e1a11"},
			{"op": "add", "path": "/instance_info/image_source", "value": "http://img"}]`)
		Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
		Expect(call(http.MethodPut, "/v1/nodes/"+others+"/states/provision", `{"target": "manage"}`).status).To(Equal(http.StatusAccepted))
		for _, w := range []struct{ method, path, body, rule string }{
			{http.MethodDelete, "/v1/nodes/" + others, "", "baremetal:node:delete"},
			{http.MethodPatch, "/v1/nodes/" + others, `[{"op": "add", "path": "/driver_info/ipmi_username", "value": "u"}]`, "baremetal:node:update:driver_info"},
		} {
			r := call(w.method, w.path, w.body)
			Expect(r.status).To(Equal(http.StatusForbidden), string(r.raw))
			Expect(r.fault()["faultstring"]).To(Equal("Access was denied to the following resource: " + w.rule))
		}
	})
})

var _ = Describe("[oslo_policy] enforce_new_defaults = false", func() {
	It("lets a project-scoped admin token act as a system admin, on every project's nodes", func() {
		ks := newKeystone()
		e := newEnv(GinkgoT(), apitest.SQLite(GinkgoT()), func(c *config.Config) {
			keystoneConfig(ks.URL)(c)
			c.OsloPolicy.EnforceNewDefaults, c.OsloPolicy.EnforceScope = false, false
		})
		admin := keystonetest.User{Name: "legacy-admin", Domain: "Default", Password: "pw", Project: "admin", ProjectDomain: "Default", Roles: []string{"admin"}}
		member := keystonetest.User{Name: "legacy-member", Domain: "Default", Password: "pw", Project: "admin", ProjectDomain: "Default", Roles: []string{"member"}}
		ks.AddUser(admin)
		ks.AddUser(member)
		as := func(u keystonetest.User) func(method, path, body string) response {
			tok, err := ks.Issue(context.Background(), u, false)
			Expect(err).NotTo(HaveOccurred())
			return func(method, path, body string) response {
				return e.call(method, path, body, "X-Auth-Token", tok, "X-OpenStack-Ironic-API-Version", "latest")
			}
		}
		asAdmin, asMember := as(admin), as(member)
		r := asAdmin(http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "driver_info": {"ipmi_address": "10.0.0.7"}}`)
		Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
		uuid := r.json()["uuid"].(string)
		Expect(asAdmin(http.MethodGet, "/v1/nodes/"+uuid, "").json()["driver_info"]).To(HaveKeyWithValue("ipmi_address", "10.0.0.7"))
		Expect(asAdmin(http.MethodPatch, "/v1/nodes/"+uuid, `[{"op": "add", "path": "/driver_info/ipmi_username", "value": "u"}]`).status).To(Equal(http.StatusOK))
		Expect(asAdmin(http.MethodGet, "/v1/nodes", "").json()["nodes"]).To(HaveLen(1))
		Expect(asMember(http.MethodGet, "/v1/nodes", "").json()["nodes"]).To(BeEmpty(), "a member stays in its project")
		Expect(asMember(http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware"}`).status).To(Equal(http.StatusForbidden))
		Expect(asAdmin(http.MethodDelete, "/v1/nodes/"+uuid, "").status).To(Equal(http.StatusNoContent))
	})
})

var _ = Describe("another project's nodes stay unseen", func() {
	It("answers a list whose marker is another project's node as if the marker did not exist", func() {
		e, _, tokens, node := keystonePersonas()
		node()
		others := e.createNodeAs("", "X-Auth-Token", tokens["system admin"])
		list := func(marker string) response {
			return e.call(http.MethodGet, "/v1/nodes?marker="+marker, "", "X-Auth-Token", tokens["lessee reader"], "X-OpenStack-Ironic-API-Version", "latest")
		}
		absent := list("0b6f8a5e-7d1c-4d53-9a0e-2f3c4b5a6d7e")
		Expect(absent.status).To(Equal(http.StatusNotFound), string(absent.raw))
		r := list(others)
		Expect(r.status).To(Equal(absent.status), string(r.raw))
		Expect(r.fault()["faultstring"]).To(Equal(strings.ReplaceAll(absent.fault()["faultstring"].(string), "0b6f8a5e-7d1c-4d53-9a0e-2f3c4b5a6d7e", others)))
	})
})

var _ = Describe("another project's chassis stay unseen", func() {
	It("answers a project's token about a chassis holding none of its nodes as about one that does not exist", func() {
		e, _, tokens, node := keystonePersonas()
		asAdmin := func(method, path, body string) response {
			return e.call(method, path, body, "X-Auth-Token", tokens["system admin"], "X-OpenStack-Ironic-API-Version", "latest")
		}
		empty, held := asAdmin(http.MethodPost, "/v1/chassis", `{}`).json()["uuid"].(string), asAdmin(http.MethodPost, "/v1/chassis", `{}`).json()["uuid"].(string)
		uuid := node()
		Expect(asAdmin(http.MethodPatch, "/v1/nodes/"+uuid, `[{"op": "add", "path": "/chassis_uuid", "value": "`+held+`"}]`).status).To(Equal(http.StatusOK))
		list := func(chassis string) response {
			return e.call(http.MethodGet, "/v1/chassis/"+chassis+"/nodes", "", "X-Auth-Token", tokens["owner reader"], "X-OpenStack-Ironic-API-Version", "latest")
		}
		const absent = "0b6f8a5e-7d1c-4d53-9a0e-2f3c4b5a6d7e"
		Expect(list(absent).status).To(Equal(http.StatusNotFound))
		r := list(empty)
		Expect(r.status).To(Equal(http.StatusNotFound), string(r.raw))
		Expect(r.fault()["faultstring"]).To(Equal("Chassis " + empty + " could not be found."))
		r = list(held)
		Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
		Expect(r.json()["nodes"]).To(HaveLen(1))
		Expect(asAdmin(http.MethodGet, "/v1/chassis/"+empty+"/nodes", "").status).To(Equal(http.StatusOK), "a system reader sees every chassis")
	})
})
