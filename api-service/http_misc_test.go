package apiservice_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"

	"github.com/ferricbm/ferric/pkg/config"
)

var _ = Describe("http_basic authentication", func() {
	var e *env

	BeforeEach(func() {
		hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
		Expect(err).NotTo(HaveOccurred())
		file := filepath.Join(GinkgoT().TempDir(), "htpasswd")
		Expect(os.WriteFile(file, []byte("operator:"+string(hash)+"\n"), 0o600)).To(Succeed())
		e = sqliteEnv(func(c *config.Config) {
			c.Default.AuthStrategy = "http_basic"
			c.API.HTTPBasicAuthUserFile = file
		})
	})

	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}

	It("refuses requests without valid credentials", func() {
		for _, h := range []string{"", basic("operator", "wrong"), basic("nobody", "s3cret")} {
			r := e.call(http.MethodGet, "/v1/nodes", "", "Authorization", h)
			Expect(r.status).To(Equal(http.StatusUnauthorized))
			Expect(r.header.Get("WWW-Authenticate")).To(Equal(`Basic realm="Baremetal API"`))
			Expect(r.json()["error"]).To(HaveKeyWithValue("code", 401.0))
			Expect(r.json()["error"]).To(HaveKey("message"))
		}
	})

	It("answers 429 with Retry-After to a client past its failed logins, and still serves its remembered credentials", func() {
		Expect(e.call(http.MethodGet, "/v1/nodes", "", "Authorization", basic("operator", "s3cret")).status).To(Equal(http.StatusOK))
		for range 10 {
			Expect(e.call(http.MethodGet, "/v1/nodes", "", "Authorization", basic("operator", "guess")).status).To(Equal(http.StatusUnauthorized))
		}
		r := e.call(http.MethodGet, "/v1/nodes", "", "Authorization", basic("operator", "guess"))
		Expect(r.status).To(Equal(http.StatusTooManyRequests))
		Expect(r.header.Get("Retry-After")).To(MatchRegexp(`^[1-9][0-9]*$`))
		Expect(r.json()).To(HaveKey("error_message"))
		Expect(e.call(http.MethodGet, "/v1/nodes", "", "Authorization", basic("operator", "s3cret")).status).To(Equal(http.StatusOK))
	})

	It("warns at start that links follow the client's Host header while public_endpoint is unset, and not once it is set", func() {
		warned := func(e *env) bool {
			for _, en := range e.logs.AllEntries() {
				if en.Level == logrus.WarnLevel && strings.Contains(en.Message, "public_endpoint is not set") {
					return true
				}
			}
			return false
		}
		Expect(warned(e)).To(BeTrue())
		Expect(warned(sqliteEnv(nil))).To(BeFalse(), "noauth is for a private network")
		file := e.cfg.API.HTTPBasicAuthUserFile
		Expect(warned(sqliteEnv(func(c *config.Config) {
			c.Default.AuthStrategy = "http_basic"
			c.API.HTTPBasicAuthUserFile = file
			c.API.PublicEndpoint = "https://baremetal.example.org"
		}))).To(BeFalse())
	})

	It("serves valid credentials", func() {
		Expect(e.call(http.MethodGet, "/v1/nodes", "", "Authorization", basic("operator", "s3cret")).status).To(Equal(http.StatusOK))
	})

	It("keeps the public routes open", func() {
		Expect(e.call(http.MethodGet, "/", "").status).To(Equal(http.StatusOK))
		Expect(e.call(http.MethodGet, "/v1/", "").status).To(Equal(http.StatusOK))
		Expect(e.call(http.MethodGet, "/v1/lookup", "").status).NotTo(Equal(http.StatusUnauthorized))
		Expect(e.call(http.MethodPost, "/v1/heartbeat/abc", "{}").status).NotTo(Equal(http.StatusUnauthorized))
		Expect(e.call(http.MethodGet, "/v1/heartbeat/abc/x", "").status).To(Equal(http.StatusUnauthorized))
	})

	It("lets the deploy ramdisk's callbacks through without credentials, and nothing else of vendor passthru", func() {
		created := e.call(http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware"}`, "Authorization", basic("operator", "s3cret"))
		Expect(created.status).To(Equal(http.StatusCreated))
		uuid, _ := created.json()["uuid"].(string)
		base := "/v1/nodes/" + uuid + "/vendor_passthru"
		for _, method := range []string{"pass_deploy_info", "pass_bootloader_install_info"} {
			By("reaching the node's vendor interface, which checks the deploy key, with " + method)
			r := e.call(http.MethodPost, base+"?method="+method, `{"key": "k"}`)
			Expect(r.status).To(Equal(http.StatusBadRequest))
			Expect(r.fault()["faultstring"]).To(Equal("No handler for method " + method))
			Expect(e.call(http.MethodPost, base+"/"+method, `{"key": "k"}`).status).NotTo(Equal(http.StatusUnauthorized))
			Expect(e.call(http.MethodPost, "/"+strings.TrimPrefix(base, "/v1/")+"?method="+method, `{}`).status).To(Equal(http.StatusBadRequest))
			Expect(e.call(http.MethodGet, base+"?method="+method, "").status).To(Equal(http.StatusUnauthorized))
		}
		for _, path := range []string{base + "?method=record", base + "?method=pass_deploy_infox", base,
			base + "/methods", base + "/record", "/v1/drivers/fake-hardware/vendor_passthru?method=pass_deploy_info"} {
			Expect(e.call(http.MethodPost, path, `{}`).status).To(Equal(http.StatusUnauthorized), path)
		}
	})
})

var _ = Describe("server faults", func() {
	It("answers 500 Server with a generic message and keeps the cause out of the body", func() {
		e := sqliteEnv(nil)
		Expect(e.store.Close()).To(Succeed())
		r := e.call(http.MethodGet, "/v1/nodes", "")
		Expect(r.status).To(Equal(http.StatusInternalServerError))
		Expect(r.fault()).To(Equal(map[string]any{"faultcode": "Server", "faultstring": "An internal error occurred.", "debuginfo": nil}))
		Expect(string(r.raw)).NotTo(ContainSubstring("sql"))
	})
})

var _ = Describe("on MySQL", func() {
	var e *env

	BeforeEach(func() { e = mysqlEnv() })

	It("creates, pages, patches and deletes nodes and ports", func() {
		var uuids []string
		for i := range 3 {
			uuids = append(uuids, e.createNode(fmt.Sprintf(`, "name": "m%d"`, i)))
		}
		page := e.at("latest", http.MethodGet, "/v1/nodes?limit=2", "").json()
		Expect(page["nodes"]).To(HaveLen(2))
		rest := e.at("latest", http.MethodGet, strings.TrimPrefix(page["next"].(string), e.url), "").json()
		Expect(rest["nodes"]).To(HaveLen(1))
		Expect(rest["nodes"].([]any)[0]).To(HaveKeyWithValue("uuid", uuids[2]))

		r := e.at("latest", http.MethodPatch, "/v1/nodes/m1", `[{"op": "add", "path": "/properties/cpus", "value": 8}]`)
		Expect(r.status).To(Equal(http.StatusOK))
		Expect(r.json()["properties"]).To(HaveKeyWithValue("cpus", 8.0))
		Expect(e.at("latest", http.MethodPatch, "/v1/nodes/m1", `[{"op": "add", "path": "/uuid", "value": "x"}]`).status).To(Equal(http.StatusBadRequest))

		p := e.at("latest", http.MethodPost, "/v1/ports", `{"address": "52:54:00:00:00:01", "node_uuid": "`+uuids[0]+`"}`)
		Expect(p.status).To(Equal(http.StatusCreated))
		Expect(e.at("latest", http.MethodPost, "/v1/ports", `{"address": "52:54:00:00:00:01", "node_uuid": "`+uuids[1]+`"}`).status).To(Equal(http.StatusConflict))
		Expect(e.at("latest", http.MethodGet, "/v1/nodes/m0/ports", "").json()["ports"]).To(HaveLen(1))

		Expect(e.at("latest", http.MethodDelete, "/v1/nodes/"+uuids[0], "").status).To(Equal(http.StatusNoContent))
		Expect(e.at("latest", http.MethodGet, "/v1/ports", "").json()["ports"]).To(BeEmpty(), "ports go with their node")
	})
})

var _ = Describe("request details", func() {
	var e *env

	BeforeEach(func() { e = sqliteEnv(nil) })

	It("refuses bodies nested too deeply with a flat 400", func() {
		body := `{"driver": "fake-hardware", "extra": ` + strings.Repeat(`{"a": `, 30) + `1` + strings.Repeat(`}`, 30) + `}`
		r := e.call(http.MethodPost, "/v1/nodes", body)
		Expect(r.status).To(Equal(http.StatusBadRequest))
		Expect(r.json()).To(HaveKeyWithValue("faultcode", "Client"))
		Expect(r.json()["faultstring"]).To(ContainSubstring("nested too deeply"))
		Expect(e.call(http.MethodGet, "/v1/nodes", "").json()["nodes"]).To(BeEmpty())
	})

	It("strips a .json suffix only for an explicit legacy version", func() {
		uuid := e.createNode(`, "name": "web.json"`)
		other := e.createNode(`, "name": "db"`)
		Expect(e.at("1.10", http.MethodGet, "/v1/nodes/db.json", "").json()["uuid"]).To(Equal(other))
		Expect(e.at("1.10", http.MethodGet, "/v1/nodes/web.json", "").json()["uuid"]).To(Equal(uuid), "retried with the suffix")
		Expect(e.call(http.MethodGet, "/v1/nodes/db.json", "", "OpenStack-API-Version", "baremetal 1.10").status).To(Equal(http.StatusNotFound))
		Expect(e.at("latest", http.MethodGet, "/v1/nodes/db.json", "").status).To(Equal(http.StatusNotFound))
	})

	It("forwards node vendor passthru calls to the driver", func() {
		uuid := e.createNode("")
		r := e.at("latest", http.MethodPost, "/v1/nodes/"+uuid+"/vendor_passthru?method=hello", `{"a": 1}`)
		Expect(r.status).To(Equal(http.StatusBadRequest))
		Expect(r.fault()["faultstring"]).To(Equal("No handler for method hello"))
		r = e.at("latest", http.MethodPost, "/v1/nodes/"+uuid+"/vendor_passthru", `{}`)
		Expect(r.status).To(Equal(http.StatusBadRequest))
		Expect(r.fault()["faultstring"]).To(Equal("Missing mandatory parameter: method"))
		Expect(e.at("latest", http.MethodGet, "/v1/nodes/"+uuid+"/vendor_passthru?method=", "").fault()["faultstring"]).To(Equal("Method not specified"))
	})
})

var _ = Describe("logging", func() {
	It("logs each request with its request id and never the secrets it carried", func() {
		e := sqliteEnv(nil)
		r := e.at("latest", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "driver_info": {"ipmi_password": "hunter2"}, "bogus": 1}`)
		Expect(r.status).To(Equal(http.StatusBadRequest))
		id := r.header.Get("Openstack-Request-Id")
		found := false
		for _, entry := range e.logs.AllEntries() {
			line, err := entry.String()
			Expect(err).NotTo(HaveOccurred())
			Expect(line).NotTo(ContainSubstring("hunter2"))
			if entry.Data["request_id"] == id {
				found = true
				Expect(entry.Data).To(HaveKeyWithValue("status", http.StatusBadRequest))
			}
		}
		Expect(found).To(BeTrue())
	})

	It("keeps a caller's request id as the global one, beside a fresh local id, through the conductor's work", func() {
		e, uuid := sqliteEnvWithNode("")
		const chosen = "req-0b6f4a52-1c1e-4d7a-9a43-6f3e1f0c2d11"
		r := e.call(http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", `{"target": "manage"}`,
			"X-OpenStack-Ironic-API-Version", "latest", "X-Openstack-Request-Id", chosen)
		Expect(r.status).To(Equal(http.StatusAccepted))
		local := r.header.Get("Openstack-Request-Id")
		Expect(local).To(MatchRegexp(`^req-[0-9a-f-]{36}$`))
		Expect(local).NotTo(Equal(chosen))
		Expect(r.header.Get("X-Openstack-Request-Id")).To(Equal(local))
		type ids struct{ local, global any }
		changes := func() map[any]ids {
			out := map[any]ids{}
			for _, en := range e.logs.AllEntries() {
				if en.Data["node"] == uuid && en.Message == "Provision state changed" {
					out[en.Data["provision_state"]] = ids{en.Data["request_id"], en.Data["global_request_id"]}
				}
			}
			return out
		}
		Eventually(changes).Should(HaveKey("manageable"))
		Expect(changes()).To(Equal(map[any]ids{"verifying": {local, chosen}, "manageable": {local, chosen}}))
		Expect(e.logs.AllEntries()).To(ContainElement(WithTransform(func(en *logrus.Entry) []any {
			return []any{en.Message, en.Data["request_id"], en.Data["global_request_id"]}
		}, Equal([]any{"api request", local, chosen}))))

		for _, bad := range []string{"req-1", "0b6f4a52-1c1e-4d7a-9a43-6f3e1f0c2d11", chosen + " level=error"} {
			r = e.call(http.MethodGet, "/v1/nodes/"+uuid, "", "X-Openstack-Request-Id", bad)
			Expect(r.status).To(Equal(http.StatusOK))
			Expect(r.header.Get("Openstack-Request-Id")).To(MatchRegexp(`^req-[0-9a-f-]{36}$`))
			for _, en := range e.logs.AllEntries() {
				Expect(en.Data).NotTo(HaveKeyWithValue("global_request_id", bad))
			}
		}
	})

	It("logs a made-up method as other, never its text", func() {
		e := sqliteEnv(nil)
		method := "X" + strings.Repeat("Y", 5000)
		r := e.call(method, "/v1/nodes", "")
		Expect(r.status).To(Equal(http.StatusMethodNotAllowed))
		id := r.header.Get("Openstack-Request-Id")
		Expect(e.logs.AllEntries()).To(ContainElement(WithTransform(func(en *logrus.Entry) []any {
			return []any{en.Data["request_id"], en.Data["method"], en.Data["status"]}
		}, Equal([]any{id, "other", http.StatusMethodNotAllowed}))))
		for _, en := range e.logs.AllEntries() {
			line, err := en.String()
			Expect(err).NotTo(HaveOccurred())
			Expect(line).NotTo(ContainSubstring("YYYY"))
		}
	})

	It("logs the cause of a server fault for the operator", func() {
		e := sqliteEnv(nil)
		Expect(e.store.Close()).To(Succeed())
		r := e.call(http.MethodGet, "/v1/nodes", "")
		Expect(r.status).To(Equal(http.StatusInternalServerError))
		id := r.header.Get("Openstack-Request-Id")
		Expect(e.logs.AllEntries()).To(ContainElement(WithTransform(func(en *logrus.Entry) bool {
			return en.Data["request_id"] == id && en.Data[logrus.ErrorKey] != nil
		}, BeTrue())))
	})
})
