package apiservice_test

import (
	"database/sql"
	"net/http"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/api-service/apitest"
	"github.com/ferricbm/ferric/db/dbtest"
	"github.com/ferricbm/ferric/pkg/states"
)

// writable is one resource the API creates, patches and deletes: its
// collection, the table behind it and a create body whose "NODE" is the
// owning node and "EXTRA" the extra document.
type writable struct {
	name, collection, table, body string
}

var writables = []writable{
	{"node", "/v1/nodes", "nodes", `{"driver": "fake-hardware", "extra": EXTRA}`},
	{"chassis", "/v1/chassis", "chassis", `{"extra": EXTRA}`},
	{"port", "/v1/ports", "ports", `{"node_uuid": "NODE", "address": "52:54:00:00:00:01", "extra": EXTRA}`},
	{"portgroup", "/v1/portgroups", "portgroups", `{"node_uuid": "NODE", "extra": EXTRA}`},
	{"volume connector", "/v1/volume/connectors", "volume_connectors",
		`{"node_uuid": "NODE", "type": "iqn", "connector_id": "iqn.2010-10.org.example:host", "extra": EXTRA}`},
	{"volume target", "/v1/volume/targets", "volume_targets",
		`{"node_uuid": "NODE", "volume_type": "iscsi", "boot_index": 0, "volume_id": "vol-1", "extra": EXTRA}`},
}

func (w writable) create(e *env, node, extra string) response {
	body := strings.ReplaceAll(strings.ReplaceAll(w.body, "NODE", node), "EXTRA", extra)
	return e.at("latest", http.MethodPost, w.collection, body)
}

// detail is the detailed list of the collection.
func (w writable) detail() string {
	if strings.HasPrefix(w.collection, "/v1/volume/") {
		return w.collection + "?detail=true"
	}
	return w.collection + "/detail"
}

var _ = Describe("numbers beyond float64", func() {
	var (
		e    *env
		node string
	)

	BeforeEach(func() {
		e, node = sqliteEnvWithNode(`, "name": "owner"`)
		e.setPower(node, states.PowerOff)
	})

	for _, w := range writables {
		It("are refused with 400 on "+w.name+" create and PATCH, which store nothing", func() {
			for _, extra := range []string{`{"n": 1e400}`, `{"a": [{"b": -2E+999}]}`} {
				r := w.create(e, node, extra)
				Expect(r.status).To(Equal(http.StatusBadRequest), string(r.raw))
				Expect(r.fault()["faultstring"]).To(ContainSubstring("out of range"))
			}
			r := w.create(e, node, `{"small": 1e-400, "big": 1e308}`)
			Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
			uuid := r.json()["uuid"].(string)
			item := w.collection + "/" + uuid

			p := e.at("latest", http.MethodPatch, item, `[{"op": "add", "path": "/extra/n", "value": 1e400}]`)
			Expect(p.status).To(Equal(http.StatusBadRequest), string(p.raw))
			g := e.at("latest", http.MethodGet, item, "")
			Expect(g.status).To(Equal(http.StatusOK))
			Expect(g.json()["extra"]).To(Equal(map[string]any{"small": 0.0, "big": 1e308}))

			l := e.at("latest", http.MethodGet, w.detail(), "")
			Expect(l.status).To(Equal(http.StatusOK), string(l.raw))
		})
	}

	It("are refused in action bodies before they reach a conductor", func() {
		r := e.at("latest", http.MethodPut, "/v1/nodes/"+node+"/maintenance", `{"reason": "x", "n": 1e400}`)
		Expect(r.status).To(Equal(http.StatusBadRequest))
		Expect(e.node(node).Maintenance).To(BeFalse())
		r = e.at("latest", http.MethodPost, "/v1/nodes/"+node+"/vendor_passthru?method=x", `{"n": [1, 1e400]}`)
		Expect(r.status).To(Equal(http.StatusBadRequest))
		Expect(r.fault()["faultstring"]).To(ContainSubstring("1e400"))
	})
})

var _ = Describe("a stored number beyond float64 (an older version's row)", func() {
	It("reads, lists, patches and deletes with the literal kept", func() {
		connection := apitest.MySQL(GinkgoT())
		e := newEnv(GinkgoT(), connection, nil)
		node := e.createNode(`, "name": "legacy"`)
		e.setPower(node, states.PowerOff)
		uuids := map[string]string{}
		for _, w := range writables {
			r := w.create(e, node, `{"ok": 1}`)
			Expect(r.status).To(Equal(http.StatusCreated), w.name+": "+string(r.raw))
			uuids[w.name] = r.json()["uuid"].(string)
		}

		dsn, err := dbtest.MySQLDSN(connection)
		Expect(err).NotTo(HaveOccurred())
		raw, err := sql.Open("mysql", dsn)
		Expect(err).NotTo(HaveOccurred())
		defer raw.Close()
		for _, w := range writables {
			_, err := raw.Exec("UPDATE "+w.table+" SET extra = ? WHERE uuid = ?", `{"n": 1e400, "ok": 1}`, uuids[w.name])
			Expect(err).NotTo(HaveOccurred())
		}
		// The node under test also owns the others: its own row is bad too.
		_, err = raw.Exec("UPDATE nodes SET properties = ? WHERE uuid = ?", `{"cpus": -1e999}`, node)
		Expect(err).NotTo(HaveOccurred())

		for _, w := range writables {
			item := w.collection + "/" + uuids[w.name]
			g := e.at("latest", http.MethodGet, item, "")
			Expect(g.status).To(Equal(http.StatusOK), w.name+": "+string(g.raw))
			Expect(string(g.raw)).To(ContainSubstring(`"n":1e400`))
			for _, list := range []string{w.detail(), w.collection + "?fields=uuid,extra", w.collection} {
				l := e.at("latest", http.MethodGet, list, "")
				Expect(l.status).To(Equal(http.StatusOK), list+": "+string(l.raw))
				if list != w.collection {
					Expect(string(l.raw)).To(ContainSubstring(`"n":1e400`), list)
				}
			}
			p := e.at("latest", http.MethodPatch, item, `[{"op": "add", "path": "/extra/more", "value": 2}]`)
			Expect(p.status).To(Equal(http.StatusOK), w.name+": "+string(p.raw))
			Expect(string(p.raw)).To(ContainSubstring(`"n":1e400`))
			Expect(string(p.raw)).To(ContainSubstring(`"more":2`))
		}
		n := e.at("latest", http.MethodGet, "/v1/nodes/"+node+"?fields=properties", "")
		Expect(n.status).To(Equal(http.StatusOK))
		Expect(string(n.raw)).To(ContainSubstring(`"cpus":-1e999`))

		for _, w := range slices.Backward(writables) {
			d := e.at("latest", http.MethodDelete, w.collection+"/"+uuids[w.name], "")
			Expect(d.status).To(Equal(http.StatusNoContent), w.name+": "+string(d.raw))
		}
		Expect(e.at("latest", http.MethodDelete, "/v1/nodes/"+node, "").status).To(Equal(http.StatusNoContent))
	})
})

var _ = Describe("request framing", func() {
	var e *env

	BeforeEach(func() { e = sqliteEnv(nil) })

	It("answers 400 to a query string past net/url's 10,000 parameters instead of dropping every filter", func() {
		e.createNode(`, "name": "one"`)
		many := "/v1/nodes?" + strings.Repeat("driver=nothing-like-it&", 10000) + "driver=nothing-like-it"
		r := e.at("latest", http.MethodGet, many, "")
		Expect(r.status).To(Equal(http.StatusBadRequest), string(r.raw))
		Expect(r.fault()["faultstring"]).To(ContainSubstring("10000"))

		atLimit := "/v1/nodes?" + strings.Repeat("driver=nothing-like-it&", 9999) + "driver=nothing-like-it"
		r = e.at("latest", http.MethodGet, atLimit, "")
		Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
		Expect(r.json()["nodes"]).To(BeEmpty())
	})

	It("answers 400 to a query string that does not parse instead of dropping the filter", func() {
		e.createNode(`, "name": "one"`)
		for _, q := range []string{"maintenance=true;", "bogus%zz=1", "owner=%zz", "driver=fake-hardware;driver=x"} {
			r := e.at("latest", http.MethodGet, "/v1/nodes?"+q, "")
			Expect(r.status).To(Equal(http.StatusBadRequest), q+": "+string(r.raw))
			Expect(r.fault()["faultstring"]).To(ContainSubstring("query string"), q)
		}
		r := e.at("latest", http.MethodGet, "/v1/nodes?maintenance=true", "")
		Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
		Expect(r.json()["nodes"]).To(BeEmpty())
	})

	It("refuses a ramdisk route's body past 64 KiB before reading it, and any body past 10,000 values", func() {
		big := `{"callback_url": "http://192.0.2.1:9999", "agent_token": "` + strings.Repeat("x", 64<<10) + `"}`
		r := e.at("latest", http.MethodPost, "/v1/heartbeat/"+e.createNode(""), big)
		Expect(r.status).To(Equal(http.StatusRequestEntityTooLarge), string(r.raw))
		r = e.at("latest", http.MethodPost, "/v1/nodes/"+e.createNode("")+"/vendor_passthru?method=pass_deploy_info",
			`{"key": "`+strings.Repeat("k", 64<<10)+`"}`)
		Expect(r.status).To(Equal(http.StatusRequestEntityTooLarge), string(r.raw))

		zeros := "[" + strings.Repeat("0,", 10000) + "0]"
		r = e.at("latest", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "extra": {"a": `+zeros+`}}`)
		Expect(r.status).To(Equal(http.StatusBadRequest), string(r.raw))
		Expect(r.fault()["faultstring"]).To(ContainSubstring("at most 10000 are allowed"))
		Expect(e.at("latest", http.MethodGet, "/v1/nodes", "").json()["nodes"]).To(HaveLen(2), "nothing created")

		within := "[" + strings.Repeat("0,", 9000) + "0]"
		r = e.at("latest", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "extra": {"a": `+within+`}}`)
		Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
	})

	It("takes a heartbeat's fields as strings only, refusing nested values before any lookup", func() {
		hb := "/v1/heartbeat/1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
		for key, value := range map[string]string{"agent_version": `{"a": [[], {}]}`, "agent_verify_ca": `[1, 2]`,
			"agent_token": `7`, "callback_url": `{}`} {
			body := `{"callback_url": "http://192.0.2.9:9999", "agent_token": "t", "` + key + `": ` + value + `}`
			if key == "callback_url" {
				body = `{"agent_token": "t", "callback_url": ` + value + `}`
			}
			r := e.at("latest", http.MethodPost, hb, body)
			Expect(r.status).To(Equal(http.StatusBadRequest), key+": "+string(r.raw))
			Expect(r.fault()["faultstring"]).To(Equal("Invalid "+key+": expected a string"), key)
		}
		for _, body := range []string{`[]`, `null`, `"x"`, `{"callback_url": ""} {}`} {
			Expect(e.at("latest", http.MethodPost, hb, body).status).To(Equal(http.StatusBadRequest), body)
		}
		Expect(e.at("latest", http.MethodPost, hb, `{"callback_url": null, "agent_token": "t", "agent_version": "9"}`).status).
			To(Equal(http.StatusNotFound), "well-typed: on to the node lookup")
	})

	It("refuses a nested value in a ramdisk callback before forwarding it", func() {
		for _, method := range []string{"pass_deploy_info", "pass_bootloader_install_info"} {
			path := "/v1/nodes/1be26c0b-03f2-4d2e-ae87-c02d7f33c123/vendor_passthru?method=" + method
			r := e.at("latest", http.MethodPost, path, `{"key": "k", "address": "192.0.2.9", "extra": [{}, {}]}`)
			Expect(r.status).To(Equal(http.StatusBadRequest), method+": "+string(r.raw))
			Expect(r.fault()["faultstring"]).To(Equal("Invalid extra: a ramdisk callback takes strings and numbers only"), method)
			Expect(e.at("latest", http.MethodPost, path, `{"key": "k", "address": "192.0.2.9", "port": 3260, "lun": "1", "error": null}`).status).
				To(Equal(http.StatusNotFound), method+": flat values go on to the node lookup")
			Expect(e.at("latest", http.MethodPost, path, "").status).To(Equal(http.StatusNotFound), method+": an empty body is no fields")
		}
	})

	It("refuses a body not declared JSON with 415 and creates nothing", func() {
		body := `{"driver": "fake-hardware"}`
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
			r := e.call(http.MethodPost, "/v1/nodes", body, "Content-Type", ct)
			Expect(r.status).To(Equal(http.StatusUnsupportedMediaType), ct)
			Expect(r.json()).To(HaveKey("error_message"), ct)
		}
		Expect(e.at("latest", http.MethodGet, "/v1/nodes", "").json()["nodes"]).To(BeEmpty())

		for _, ct := range []string{"application/json; charset=utf-8", "Application/JSON"} {
			r := e.call(http.MethodPost, "/v1/nodes", body, "Content-Type", ct)
			Expect(r.status).To(Equal(http.StatusCreated), ct)
		}
	})

	It("needs no Content-Type on a request without a body", func() {
		node := e.createNode("")
		r := e.call(http.MethodPut, "/v1/nodes/"+node+"/maintenance", "", "X-OpenStack-Ironic-API-Version", "latest")
		Expect(r.status).To(Equal(http.StatusAccepted), string(r.raw))
		Expect(e.node(node).Maintenance).To(BeTrue())
	})
})

var _ = Describe("a panicking handler", func() {
	It("answers 500 in Ironic's format, logs the panic masked and keeps serving", func() {
		e := sqliteEnv(nil)
		e.api.AddPanickingRoute("/v1/boom", "driver exploded with password=hunter2")

		r := e.call(http.MethodGet, "/v1/boom", "")
		Expect(r.status).To(Equal(http.StatusInternalServerError))
		Expect(r.fault()).To(Equal(map[string]any{"faultcode": "Server", "faultstring": "An internal error occurred.", "debuginfo": nil}))
		Expect(string(r.raw)).NotTo(ContainSubstring("exploded"))

		id := r.header.Get("Openstack-Request-Id")
		Expect(e.logs.AllEntries()).To(ContainElement(WithTransform(func(en *logrus.Entry) string {
			if en.Data["request_id"] != id {
				return ""
			}
			return en.Message
		}, ContainSubstring("driver exploded"))))
		for _, en := range e.logs.AllEntries() {
			line, err := en.String()
			Expect(err).NotTo(HaveOccurred())
			Expect(line).NotTo(ContainSubstring("hunter2"))
		}

		Expect(e.at("latest", http.MethodGet, "/v1/nodes", "").status).To(Equal(http.StatusOK))
	})
})

var _ = Describe("free text and documents longer than a column on MySQL", func() {
	var (
		e    *env
		node string
	)

	BeforeEach(func() {
		e = mysqlEnv()
		node = e.createNode(`, "name": "long"`)
	})

	It("refuses a reason longer than a TEXT column with 400 and stores the longest that fits", func() {
		tooLong := strings.Repeat("r", 65536)
		r := e.at("latest", http.MethodPut, "/v1/nodes/"+node+"/maintenance", `{"reason": "`+tooLong+`"}`)
		Expect(r.status).To(Equal(http.StatusBadRequest), string(r.raw))
		Expect(e.node(node).Maintenance).To(BeFalse())
		for _, field := range []string{"protected_reason"} {
			p := e.at("latest", http.MethodPatch, "/v1/nodes/"+node, `[{"op": "add", "path": "/`+field+`", "value": "`+tooLong+`"}]`)
			Expect(p.status).To(Equal(http.StatusBadRequest), field+": "+string(p.raw))
		}

		r = e.at("latest", http.MethodPut, "/v1/nodes/"+node+"/maintenance", `{"reason": "`+tooLong[1:]+`"}`)
		Expect(r.status).To(Equal(http.StatusAccepted), string(r.raw))
		Expect(*e.node(node).MaintenanceReason).To(HaveLen(65535))
	})

	It("refuses names and descriptions longer than their column with 400, on create and PATCH, and stores the longest that fits", func() {
		type field struct{ collection, body, patchPath string }
		for _, f := range []field{
			{"/v1/nodes", `{"driver": "fake-hardware", "name": "VALUE"}`, "/name"},
			{"/v1/portgroups", `{"node_uuid": "NODE", "name": "VALUE"}`, "/name"},
			{"/v1/chassis", `{"description": "VALUE"}`, "/description"},
		} {
			create := func(value string) response {
				body := strings.ReplaceAll(strings.ReplaceAll(f.body, "NODE", node), "VALUE", value)
				return e.at("latest", http.MethodPost, f.collection, body)
			}
			r := create(strings.Repeat("n", 256))
			Expect(r.status).To(Equal(http.StatusBadRequest), f.collection+": "+string(r.raw))
			Expect(r.fault()["faultstring"]).To(ContainSubstring("too long"), f.collection)

			r = create(strings.Repeat("m", 255))
			Expect(r.status).To(Equal(http.StatusCreated), f.collection+": "+string(r.raw))
			item := f.collection + "/" + r.json()["uuid"].(string)
			p := e.at("latest", http.MethodPatch, item,
				`[{"op": "replace", "path": "`+f.patchPath+`", "value": "`+strings.Repeat("p", 256)+`"}]`)
			Expect(p.status).To(Equal(http.StatusBadRequest), item+": "+string(p.raw))
			got := e.at("latest", http.MethodGet, item, "").json()
			Expect(got).To(HaveKeyWithValue(f.patchPath[1:], strings.Repeat("m", 255)), item)
		}
	})

	It("refuses a JSON document larger than a TEXT column with 400 on every resource", func() {
		e.setPower(node, states.PowerOff)
		big := `{"k": "` + strings.Repeat("x", 70000) + `"}`
		for _, w := range writables {
			r := w.create(e, node, big)
			Expect(r.status).To(Equal(http.StatusBadRequest), w.name+": "+string(r.raw))
			Expect(r.fault()["faultstring"]).To(ContainSubstring("too large"), w.name)
		}
		p := e.at("latest", http.MethodPatch, "/v1/nodes/"+node, `[{"op": "add", "path": "/extra/`+strings.Repeat("k", 70000)+`", "value": 1}]`)
		Expect(p.status).To(Equal(http.StatusBadRequest), string(p.raw))
		Expect(e.node(node).Extra).To(BeEmpty())
	})
})
