package apiservice_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

const (
	v31 = "1.31"
	v32 = "1.32"
)

var _ = Describe("volume connectors and targets", func() {
	var (
		e    *env
		node string
	)

	BeforeEach(func() {
		e = sqliteEnv(func(c *config.Config) {
			c.Conductor.NodeLockedRetryAttempts = 2
			c.Conductor.NodeLockedRetryInterval = 10 * time.Millisecond
		})
		node = e.createNode(`, "name": "node-07"`)
		e.setPower(node, states.PowerOff)
	})

	createConnector := func(typ, id string) string {
		GinkgoHelper()
		r := e.at(v32, http.MethodPost, "/v1/volume/connectors",
			fmt.Sprintf(`{"node_uuid": %q, "type": %q, "connector_id": %q}`, node, typ, id))
		Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
		return r.json()["uuid"].(string)
	}
	createTarget := func(onNode string, idx int, props string) string {
		GinkgoHelper()
		if props == "" {
			props = "{}"
		}
		r := e.at(v32, http.MethodPost, "/v1/volume/targets",
			fmt.Sprintf(`{"node_uuid": %q, "volume_type": "iscsi", "boot_index": %d, "volume_id": "vol-%d", "properties": %s}`, onNode, idx, idx, props))
		Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
		return r.json()["uuid"].(string)
	}
	faultOf := func(r response) string {
		GinkgoHelper()
		return r.fault()["faultstring"].(string)
	}

	Describe("root documents and links", func() {
		It("serves /v1/volume with the links of both collections", func() {
			r := e.at(v32, http.MethodGet, "/v1/volume", "")
			Expect(r.status).To(Equal(http.StatusOK))
			doc := r.json()
			Expect(doc["links"]).To(ConsistOf(
				map[string]any{"href": e.url + "/v1/volume/", "rel": "self"},
				map[string]any{"href": e.url + "/volume/", "rel": "bookmark"}))
			Expect(doc["connectors"]).To(ContainElement(map[string]any{"href": e.url + "/v1/volume/connectors", "rel": "self"}))
			Expect(doc["targets"]).To(ContainElement(map[string]any{"href": e.url + "/volume/targets", "rel": "bookmark"}))
		})

		It("builds a node's volume document from the identifier as given and 404s an unknown node", func() {
			r := e.at(v32, http.MethodGet, "/v1/nodes/node-07/volume", "")
			Expect(r.status).To(Equal(http.StatusOK))
			Expect(r.json()["connectors"]).To(ContainElement(map[string]any{"href": e.url + "/v1/nodes/node-07/volume/connectors", "rel": "self"}))
			Expect(r.json()["links"]).To(ContainElement(map[string]any{"href": e.url + "/nodes/node-07/volume/", "rel": "bookmark"}))
			Expect(e.at(v32, http.MethodGet, "/v1/nodes/nope/volume", "").status).To(Equal(http.StatusNotFound))
		})

		It("links the volume from the v1 index and from nodes at 1.32 only", func() {
			Expect(e.at(v32, http.MethodGet, "/v1", "").json()).To(HaveKey("volume"))
			Expect(e.at(v31, http.MethodGet, "/v1", "").json()).NotTo(HaveKey("volume"))
			n := e.at(v32, http.MethodGet, "/v1/nodes/"+node, "").json()
			Expect(n["volume"]).To(ContainElement(map[string]any{"href": e.url + "/v1/nodes/" + node + "/volume", "rel": "self"}))
			Expect(e.at(v31, http.MethodGet, "/v1/nodes/"+node, "").json()).NotTo(HaveKey("volume"))
		})

		DescribeTable("hides every endpoint below 1.32",
			func(method, path, body string) {
				path = strings.ReplaceAll(path, "NODE", node)
				r := e.at(v31, method, path, strings.ReplaceAll(body, "NODE", node))
				Expect(r.status).To(Equal(http.StatusNotFound))
				Expect(faultOf(r)).To(Equal("The API is not supported for this version"))
			},
			Entry("root", http.MethodGet, "/v1/volume", ""),
			Entry("node root", http.MethodGet, "/v1/nodes/NODE/volume", ""),
			Entry("list connectors", http.MethodGet, "/v1/volume/connectors", ""),
			Entry("create connector", http.MethodPost, "/v1/volume/connectors", `{"node_uuid": "NODE", "type": "iqn", "connector_id": "x"}`),
			Entry("show target", http.MethodGet, "/v1/volume/targets/0b0e61a4-2a4e-4c3b-9b1e-0c1d2e3f4a5b", ""),
			Entry("delete target", http.MethodDelete, "/v1/volume/targets/0b0e61a4-2a4e-4c3b-9b1e-0c1d2e3f4a5b", ""),
			Entry("node targets", http.MethodGet, "/v1/nodes/NODE/volume/targets", ""),
			Entry("node-scoped write", http.MethodPost, "/v1/nodes/NODE/volume/connectors", `{}`),
		)
	})

	Describe("connectors", func() {
		It("creates with 201, Location and the full object", func() {
			r := e.at(v32, http.MethodPost, "/v1/volume/connectors",
				`{"node_uuid": "`+node+`", "type": "wwpn", "connector_id": "21:00:00:1b:21:aa:bb:cc", "extra": {"fabric": "A"}}`)
			Expect(r.status).To(Equal(http.StatusCreated))
			c := r.json()
			u := c["uuid"].(string)
			Expect(r.header.Get("Location")).To(Equal(e.url + "/v1/volume/connectors/" + u))
			Expect(c).To(HaveKeyWithValue("node_uuid", node))
			Expect(c).To(HaveKeyWithValue("type", "wwpn"))
			Expect(c).To(HaveKeyWithValue("extra", map[string]any{"fabric": "A"}))
			Expect(c).To(HaveKeyWithValue("updated_at", BeNil()))
			Expect(c["created_at"]).To(MatchRegexp(`\+00:00$`))
			Expect(c["links"]).To(ConsistOf(
				map[string]any{"href": e.url + "/v1/volume/connectors/" + u, "rel": "self"},
				map[string]any{"href": e.url + "/volume/connectors/" + u, "rel": "bookmark"}))
			Expect(c).NotTo(HaveKey("node_id"))
		})

		It("keeps a given UUID and refuses it twice", func() {
			u := "4b2a6f0e-8c1d-4f57-9a3e-2f6d0c9b7a11"
			body := `{"uuid": "` + u + `", "node_uuid": "` + node + `", "type": "iqn", "connector_id": "iqn.a"}`
			Expect(e.at(v32, http.MethodPost, "/v1/volume/connectors", body).json()["uuid"]).To(Equal(u))
			r := e.at(v32, http.MethodPost, "/v1/volume/connectors", strings.Replace(body, "iqn.a", "iqn.b", 1))
			Expect(r.status).To(Equal(http.StatusConflict))
			Expect(faultOf(r)).To(Equal("A volume connector with UUID " + u + " already exists."))
		})

		DescribeTable("refuses bad creates",
			func(body string, code int, msg string) {
				r := e.at(v32, http.MethodPost, "/v1/volume/connectors", strings.ReplaceAll(body, "NODE", node))
				Expect(r.status).To(Equal(code), string(r.raw))
				Expect(faultOf(r)).To(Equal(strings.ReplaceAll(msg, "NODE", node)))
			},
			Entry("invalid JSON", `{"type": `, 400, "Invalid JSON in request body: unexpected EOF"),
			Entry("missing type", `{"node_uuid": "NODE", "connector_id": "x"}`, 400, "Schema error for connector: 'type' is a required property"),
			Entry("missing node_uuid", `{"type": "iqn", "connector_id": "x"}`, 400, "Schema error for connector: 'node_uuid' is a required property"),
			Entry("unknown key", `{"node_uuid": "NODE", "type": "iqn", "connector_id": "x", "Extra": {}}`, 400,
				"Schema error for connector: Additional properties are not allowed ('Extra' was unexpected)"),
			Entry("node_id", `{"node_uuid": "NODE", "type": "iqn", "connector_id": "x", "node_id": 1}`, 400,
				"Schema error for connector: Additional properties are not allowed ('node_id' was unexpected)"),
			Entry("extra not an object", `{"node_uuid": "NODE", "type": "iqn", "connector_id": "x", "extra": "x"}`, 400,
				"Schema error for connector: 'x' is not of type 'object'"),
			Entry("type not a string", `{"node_uuid": "NODE", "type": 5, "connector_id": "x"}`, 400,
				"Schema error for connector: 5 is not of type 'string'"),
			Entry("type too long", `{"node_uuid": "NODE", "type": "`+strings.Repeat("t", 33)+`", "connector_id": "x"}`, 400,
				"Schema error for connector: '"+strings.Repeat("t", 33)+"' is too long"),
			Entry("node name", `{"node_uuid": "node-07", "type": "iqn", "connector_id": "x"}`, 400, "Expected UUID for node_uuid: node-07"),
			Entry("unknown node", `{"node_uuid": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "type": "iqn", "connector_id": "x"}`, 400,
				"Invalid input for field/attribute node_uuid. Value: '1be26c0b-03f2-4d2e-ae87-c02d7f33c123'. "),
			Entry("bad uuid", `{"uuid": "nope", "node_uuid": "NODE", "type": "iqn", "connector_id": "x"}`, 400, "Expected UUID for uuid: nope"),
			Entry("not an object", `[]`, 400, "The request body must be a JSON object"),
		)

		It("refuses a duplicate (type, connector_id) on any node", func() {
			createConnector("iqn", "iqn.2004-06.example.net:node-07")
			other := e.createNode("")
			r := e.at(v32, http.MethodPost, "/v1/volume/connectors",
				`{"node_uuid": "`+other+`", "type": "iqn", "connector_id": "iqn.2004-06.example.net:node-07"}`)
			Expect(r.status).To(Equal(http.StatusConflict))
			Expect(faultOf(r)).To(Equal("A volume connector with type iqn and connector ID iqn.2004-06.example.net:node-07 already exists."))
		})

		It("shows one connector, with fields, and refuses detail and bad ids", func() {
			u := createConnector("iqn", "iqn.a")
			r := e.at(v32, http.MethodGet, "/v1/volume/connectors/"+u, "")
			Expect(r.status).To(Equal(http.StatusOK))
			Expect(r.json()).To(HaveKeyWithValue("connector_id", "iqn.a"))
			Expect(r.json()).To(HaveKey("created_at"))

			r = e.at(v32, http.MethodGet, "/v1/volume/connectors/"+u+"?fields=connector_id,node_uuid", "")
			Expect(r.json()).To(HaveLen(3))
			Expect(r.json()).To(HaveKeyWithValue("node_uuid", node))
			Expect(r.json()).To(HaveKey("links"))

			r = e.at(v32, http.MethodGet, "/v1/volume/connectors/"+u+"?detail=true", "")
			Expect(r.status).To(Equal(http.StatusBadRequest))
			Expect(faultOf(r)).To(Equal("Unexpected arguments: detail"))

			r = e.at(v32, http.MethodGet, "/v1/volume/connectors/"+u+"?fields=nope", "")
			Expect(r.status).To(Equal(http.StatusBadRequest))
			Expect(faultOf(r)).To(ContainSubstring("'nope' is not one of ['connector_id', 'created_at', 'extra', 'links', 'node_uuid', 'type', 'updated_at', 'uuid']"))

			r = e.at(v32, http.MethodGet, "/v1/volume/connectors/0b0e61a4-2a4e-4c3b-9b1e-0c1d2e3f4a5b", "")
			Expect(r.status).To(Equal(http.StatusNotFound))
			Expect(faultOf(r)).To(Equal("Volume connector 0b0e61a4-2a4e-4c3b-9b1e-0c1d2e3f4a5b could not be found."))
		})

		// twoAndOne gives node-07 two connectors, a and b, and a node
		// named other a third.
		twoAndOne := func() (a, b string) {
			GinkgoHelper()
			a = createConnector("iqn", "iqn.a")
			b = createConnector("ip", "192.0.2.50")
			other := e.createNode(`, "name": "other"`)
			r := e.at(v32, http.MethodPost, "/v1/volume/connectors", `{"node_uuid": "`+other+`", "type": "mac", "connector_id": "52:54:00:12:34:56"}`)
			Expect(r.status).To(Equal(http.StatusCreated))
			return a, b
		}

		It("lists with default fields, detail, fields, the node filter and pages", func() {
			a, b := twoAndOne()

			list := e.at(v32, http.MethodGet, "/v1/volume/connectors", "").json()["connectors"].([]any)
			Expect(list).To(HaveLen(3))
			Expect(list[0]).To(HaveLen(5))
			Expect(list[0]).To(HaveKeyWithValue("uuid", a))
			Expect(list[0]).To(HaveKey("connector_id"))
			Expect(list[0]).NotTo(HaveKey("extra"))

			detail := e.at(v32, http.MethodGet, "/v1/volume/connectors?detail=True", "").json()["connectors"].([]any)
			Expect(detail[0]).To(HaveKey("extra"))
			Expect(detail[0]).To(HaveKey("created_at"))

			sel := e.at(v32, http.MethodGet, "/v1/volume/connectors?fields=uuid,extra", "").json()["connectors"].([]any)
			Expect(sel[0]).To(HaveLen(3))
			Expect(sel[0]).To(HaveKey("extra"))

			for _, id := range []string{"node-07", node} {
				byNode := e.at(v32, http.MethodGet, "/v1/volume/connectors?node="+id, "").json()["connectors"].([]any)
				Expect(byNode).To(HaveLen(2))
			}
			scoped := e.at(v32, http.MethodGet, "/v1/nodes/node-07/volume/connectors?node=other", "").json()["connectors"].([]any)
			Expect(scoped).To(HaveLen(2))
			Expect(scoped[1]).To(HaveKeyWithValue("uuid", b))
			Expect(scoped[1].(map[string]any)["links"]).To(ContainElement(map[string]any{"href": e.url + "/v1/volume/connectors/" + b, "rel": "self"}))

			page := e.at(v32, http.MethodGet, "/v1/volume/connectors?node=node-07&limit=1", "").json()
			Expect(page["connectors"]).To(HaveLen(1))
			next := page["next"].(string)
			Expect(next).To(Equal(e.url + "/v1/volume/connectors?sort_key=id&sort_dir=asc&node=node-07&fields=uuid,node_uuid,type,connector_id&limit=1&marker=" + a))
			page2 := e.at(v32, http.MethodGet, strings.TrimPrefix(next, e.url), "").json()
			Expect(page2["connectors"]).To(ConsistOf(HaveKeyWithValue("uuid", b)))
			Expect(page2).To(HaveKey("next"))
			page3 := e.at(v32, http.MethodGet, strings.TrimPrefix(page2["next"].(string), e.url), "").json()
			Expect(page3["connectors"]).To(BeEmpty())
			Expect(page3).NotTo(HaveKey("next"))

			scopedPage := e.at(v32, http.MethodGet, "/v1/nodes/node-07/volume/connectors?detail=true&limit=1", "").json()
			Expect(scopedPage["next"]).To(Equal(e.url + "/v1/nodes/node-07/volume/connectors?sort_key=id&sort_dir=asc&detail=True&limit=1&marker=" + a))

			desc := e.at(v32, http.MethodGet, "/v1/volume/connectors?sort_key=connector_id&sort_dir=desc", "").json()["connectors"].([]any)
			Expect(desc[0]).To(HaveKeyWithValue("connector_id", "iqn.a"))
		})

		It("lists full connectors at /detail, by node UUID or name, in pages", func() {
			a, b := twoAndOne()

			r := e.at(v32, http.MethodGet, "/v1/volume/connectors/detail", "")
			Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
			all := r.json()["connectors"].([]any)
			Expect(all).To(HaveLen(3))
			Expect(all[0]).To(HaveKeyWithValue("uuid", a))
			Expect(all[0]).To(HaveKey("extra"))
			Expect(all[0]).To(HaveKey("created_at"))
			Expect(all[0]).To(HaveKey("updated_at"))
			Expect(all[0]).To(HaveKeyWithValue("links", ContainElement(map[string]any{"href": e.url + "/v1/volume/connectors/" + a, "rel": "self"})))

			for _, id := range []string{"node-07", node} {
				byNode := e.at(v32, http.MethodGet, "/v1/volume/connectors/detail?node="+id, "").json()["connectors"].([]any)
				Expect(byNode).To(HaveLen(2), id)
				Expect(byNode[1]).To(HaveKeyWithValue("uuid", b))
				Expect(byNode[1]).To(HaveKey("extra"))
			}

			page := e.at(v32, http.MethodGet, "/v1/volume/connectors/detail?node=node-07&limit=1", "").json()
			Expect(page["connectors"]).To(ConsistOf(HaveKeyWithValue("uuid", a)))
			next := page["next"].(string)
			Expect(next).To(Equal(e.url + "/v1/volume/connectors/detail?sort_key=id&sort_dir=asc&node=node-07&limit=1&marker=" + a))
			page2 := e.at(v32, http.MethodGet, strings.TrimPrefix(next, e.url), "").json()
			Expect(page2["connectors"]).To(ConsistOf(And(HaveKeyWithValue("uuid", b), HaveKey("created_at"))))

			for q, msg := range map[string]string{
				"?fields=uuid":   "Unexpected arguments: fields",
				"?detail=true":   "Unexpected arguments: detail",
				"?type=iqn":      "Unexpected arguments: type",
				"?marker=nope":   "Expected UUID for marker: nope",
				"?sort_dir=up":   "Invalid sort direction: up",
				"?sort_key=type": "",
			} {
				r := e.at(v32, http.MethodGet, "/v1/volume/connectors/detail"+q, "")
				if msg == "" {
					Expect(r.status).To(Equal(http.StatusOK), q)
					continue
				}
				Expect(r.status).To(Equal(http.StatusBadRequest), q)
				Expect(faultOf(r)).To(ContainSubstring(msg), q)
			}
			Expect(e.at(v32, http.MethodGet, "/v1/volume/connectors/detail?node=ghost", "").status).To(Equal(http.StatusNotFound))
			Expect(e.at(v31, http.MethodGet, "/v1/volume/connectors/detail", "").status).To(Equal(http.StatusNotFound))
		})

		DescribeTable("refuses bad list queries",
			func(q string, code int, msg string) {
				r := e.at(v32, http.MethodGet, "/v1/volume/connectors"+q, "")
				Expect(r.status).To(Equal(code), string(r.raw))
				Expect(faultOf(r)).To(ContainSubstring(msg))
			},
			Entry("fields with detail", "?fields=uuid&detail=true", 400, "Can't fetch a subset of fields with 'detail' set"),
			Entry("unknown field", "?fields=uuid,bogus", 400, "'bogus' is not one of"),
			Entry("unknown filter", "?type=iqn", 400, "Unexpected arguments: type"),
			Entry("forbidden sort key", "?sort_key=extra", 400, "The sort_key value extra is an invalid field for sorting"),
			Entry("unknown sort key", "?sort_key=node_uuid", 400, `The sort_key value "node_uuid" is an invalid field for sorting`),
			Entry("bad sort dir", "?sort_dir=up", 400, "Invalid sort direction: up"),
			Entry("bad limit", "?limit=0", 400, "Limit must be positive"),
			Entry("non-integer limit", "?limit=x", 400, "Expected an integer for limit: x"),
			Entry("bad detail", "?detail=maybe", 400, "Unrecognized value 'maybe'"),
			Entry("bad marker", "?marker=nope", 400, "Expected UUID for marker: nope"),
			Entry("unknown marker", "?marker=0b0e61a4-2a4e-4c3b-9b1e-0c1d2e3f4a5b", 404, "Volume connector 0b0e61a4-2a4e-4c3b-9b1e-0c1d2e3f4a5b could not be found."),
			Entry("unknown node", "?node=ghost", 404, "Node ghost could not be found."),
		)

		It("accepts the known connector types and refuses others, on create and on patch", func() {
			for i, typ := range []string{"iqn", "ip", "mac", "wwnn", "wwpn", "net-id", "port", "portgroup"} {
				createConnector(typ, fmt.Sprint("id-", i))
			}
			r := e.at(v32, http.MethodPost, "/v1/volume/connectors", `{"node_uuid": "`+node+`", "type": "fc", "connector_id": "x"}`)
			Expect(r.status).To(Equal(http.StatusBadRequest))
			Expect(faultOf(r)).To(Equal("Schema error for connector: 'fc' is not one of ['iqn', 'ip', 'mac', 'wwnn', 'wwpn', 'net-id', 'port', 'portgroup']"))
			u := createConnector("iqn", "iqn.keep")
			r = e.at(v32, http.MethodPatch, "/v1/volume/connectors/"+u, `[{"op": "replace", "path": "/type", "value": "IQN"}]`)
			Expect(r.status).To(Equal(http.StatusBadRequest))
			Expect(faultOf(r)).To(HavePrefix("Schema error for connector: 'IQN' is not one of"))
			Expect(e.store.GetVolumeConnector(context.Background(), u)).To(HaveField("Type", "iqn"))
		})

		It("lets only reads through the node path", func() {
			u := createConnector("iqn", "iqn.a")
			for _, m := range []string{http.MethodGet, http.MethodPatch, http.MethodDelete, http.MethodPost} {
				r := e.at(v32, m, "/v1/nodes/"+node+"/volume/connectors/"+u, `[]`)
				Expect(r.status).To(Equal(http.StatusBadRequest), m)
				Expect(faultOf(r)).To(Equal("Malformed request URI."))
			}
			r := e.at(v32, http.MethodDelete, "/v1/nodes/"+node+"/volume/connectors/0b0e61a4-2a4e-4c3b-9b1e-0c1d2e3f4a5b", "")
			Expect(r.status).To(Equal(http.StatusNotFound))
			Expect(e.at(v32, http.MethodPost, "/v1/nodes/"+node+"/volume/connectors", `{}`).status).To(Equal(http.StatusBadRequest))
			Expect(e.at(v32, http.MethodGet, "/v1/nodes/ghost/volume/connectors", "").status).To(Equal(http.StatusNotFound))
			Expect(e.at(v32, http.MethodGet, "/v1/volume/connectors/"+u, "").status).To(Equal(http.StatusOK))
		})

		It("patches through the conductor and returns the updated object", func() {
			u := createConnector("wwpn", "21:00:00:1b:21:aa:bb:cc")
			r := e.at(v32, http.MethodPatch, "/v1/volume/connectors/"+u, `[
				{"op": "replace", "path": "/connector_id", "value": "21:00:00:1b:21:aa:bb:dd"},
				{"op": "add", "path": "/extra/fabric", "value": "B"}]`)
			Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
			Expect(r.json()).To(HaveKeyWithValue("connector_id", "21:00:00:1b:21:aa:bb:dd"))
			Expect(r.json()).To(HaveKeyWithValue("extra", map[string]any{"fabric": "B"}))
			Expect(r.json()["updated_at"]).NotTo(BeNil())
			stored, err := e.store.GetVolumeConnector(context.Background(), u)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.ConnectorID).To(Equal("21:00:00:1b:21:aa:bb:dd"))

			r = e.at(v32, http.MethodPatch, "/v1/volume/connectors/"+u, `[{"op": "remove", "path": "/extra"}]`)
			Expect(r.json()).To(HaveKeyWithValue("extra", map[string]any{}))
		})

		It("moves a connector to another node, locking both", func() {
			u := createConnector("iqn", "iqn.move")
			other := e.createNode("")
			e.setPower(other, states.PowerOff)
			r := e.at(v32, http.MethodPatch, "/v1/volume/connectors/"+u, `[{"op": "replace", "path": "/node_uuid", "value": "`+other+`"}]`)
			Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
			Expect(r.json()).To(HaveKeyWithValue("node_uuid", other))
			for _, n := range []string{node, other} {
				stored, err := e.store.GetNode(context.Background(), n)
				Expect(err).NotTo(HaveOccurred())
				Expect(stored.Reservation).To(BeNil())
			}
		})

		DescribeTable("refuses bad patches and keeps the connector",
			func(patch string, code int, msg string) {
				u := createConnector("iqn", "iqn.keep")
				r := e.at(v32, http.MethodPatch, "/v1/volume/connectors/"+u, patch)
				Expect(r.status).To(Equal(code), string(r.raw))
				Expect(faultOf(r)).To(ContainSubstring(msg))
				stored, err := e.store.GetVolumeConnector(context.Background(), u)
				Expect(err).NotTo(HaveOccurred())
				Expect(stored.ConnectorID).To(Equal("iqn.keep"))
				Expect(stored.NodeUUID).To(Equal(node))
			},
			Entry("uuid", `[{"op": "replace", "path": "/uuid", "value": "0b0e61a4-2a4e-4c3b-9b1e-0c1d2e3f4a5b"}]`, 400,
				"Cannot patch /uuid. Only the following can be updated: connector_id, extra, node_uuid, type"),
			Entry("remove a required field", `[{"op": "remove", "path": "/type"}]`, 400, "Schema error for connector: 'type' is a required property"),
			Entry("extra as a string", `[{"op": "replace", "path": "/extra", "value": "x"}]`, 400, "'x' is not of type 'object'"),
			Entry("a missing key", `[{"op": "remove", "path": "/extra/nope"}]`, 400, "Couldn't apply patch"),
			Entry("move op", `[{"op": "move", "path": "/type", "from": "/extra"}]`, 400, "Schema error for patch"),
			Entry("not a list", `{"op": "replace"}`, 400, "Schema error for patch"),
			Entry("invalid JSON", `[{"op": `, 400, "Invalid JSON"),
			Entry("node name", `[{"op": "replace", "path": "/node_uuid", "value": "node-07"}]`, 400,
				"Expected a UUID for node_uuid, but received node-07."),
			Entry("unknown node", `[{"op": "replace", "path": "/node_uuid", "value": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"}]`, 400,
				"Unable to apply the requested node_uuid '1be26c0b-03f2-4d2e-ae87-c02d7f33c123'. Requested value was invalid."),
		)

		It("refuses a patch to a duplicate (type, connector_id)", func() {
			createConnector("iqn", "iqn.a")
			u := createConnector("iqn", "iqn.b")
			r := e.at(v32, http.MethodPatch, "/v1/volume/connectors/"+u, `[{"op": "replace", "path": "/connector_id", "value": "iqn.a"}]`)
			Expect(r.status).To(Equal(http.StatusConflict))
			Expect(faultOf(r)).To(Equal("A volume connector with type iqn and connector ID iqn.a already exists."))
			Expect(e.store.GetNode(context.Background(), node)).To(HaveField("Reservation", BeNil()))
		})

		It("refuses updates and deletes while the node is powered on, in any provision state", func() {
			u := createConnector("iqn", "iqn.a")
			e.setPower(node, states.PowerOn)
			r := e.at(v32, http.MethodPatch, "/v1/volume/connectors/"+u, `[{"op": "replace", "path": "/connector_id", "value": "iqn.z"}]`)
			Expect(r.status).To(Equal(http.StatusBadRequest))
			Expect(faultOf(r)).To(Equal(`The requested action "volume connector update" can not be performed on node "` + node + `" while it is in state "power on".`))
			for _, state := range []states.State{states.Enroll, states.Manageable, states.Active} {
				e.setProvision(node, state)
				r = e.at(v32, http.MethodDelete, "/v1/volume/connectors/"+u, "")
				Expect(r.status).To(Equal(http.StatusBadRequest), state)
				Expect(faultOf(r)).To(Equal(`The requested action "volume connector deletion" can not be performed on node "` + node + `" while it is in state "power on".`))
			}
			Expect(e.store.GetVolumeConnector(context.Background(), u)).NotTo(BeNil())
		})

		It("deletes a connector of a powered-on node in manageable when allow_volume_delete_unless_powered_off is set", func() {
			e = sqliteEnv(func(c *config.Config) { c.Conductor.AllowVolumeDeleteUnlessOff = true })
			node = e.createNode("")
			e.setPower(node, states.PowerOff)
			u := createConnector("iqn", "iqn.a")
			e.setPower(node, states.PowerOn)
			e.setProvision(node, states.Manageable)
			r := e.at(v32, http.MethodDelete, "/v1/volume/connectors/"+u, "")
			Expect(r.status).To(Equal(http.StatusNoContent))
			Expect(r.raw).To(BeEmpty())
			Expect(e.at(v32, http.MethodGet, "/v1/volume/connectors/"+u, "").status).To(Equal(http.StatusNotFound))
			Expect(e.at(v32, http.MethodDelete, "/v1/volume/connectors/"+u, "").status).To(Equal(http.StatusNotFound))
		})

		It("answers 409 while another host holds the node lock", func() {
			u := createConnector("iqn", "iqn.a")
			_, err := e.store.ReserveNode(context.Background(), node, "other-conductor", 1)
			Expect(err).NotTo(HaveOccurred())
			r := e.at(v32, http.MethodDelete, "/v1/volume/connectors/"+u, "")
			Expect(r.status).To(Equal(http.StatusConflict))
			Expect(faultOf(r)).To(Equal("Node " + node + " is locked by host other-conductor, please retry after the current operation is completed."))
			r = e.at(v32, http.MethodPatch, "/v1/volume/connectors/"+u, `[{"op": "add", "path": "/extra/a", "value": 1}]`)
			Expect(r.status).To(Equal(http.StatusConflict))
			Expect(e.store.ReleaseNode(context.Background(), node, "other-conductor", 1)).To(Succeed())
			Expect(e.at(v32, http.MethodDelete, "/v1/volume/connectors/"+u, "").status).To(Equal(http.StatusNoContent))
		})

		It("deletes a node's connectors with the node", func() {
			createConnector("iqn", "iqn.a")
			e.setProvision(node, states.Manageable)
			Expect(e.at(v32, http.MethodDelete, "/v1/nodes/"+node, "").status).To(Equal(http.StatusNoContent))
			Expect(e.at(v32, http.MethodGet, "/v1/volume/connectors", "").json()["connectors"]).To(BeEmpty())
		})
	})

	Describe("targets", func() {
		const secretProps = `{"target_iqn": "iqn.2010-10.org.example:vol", "target_lun": 0, "auth_username": "node07", "auth_password": "s3cr3t-pw", "nested": {"chap_secret": "s3cr3t-nested"}}`

		expectMasked := func(obj any) {
			GinkgoHelper()
			props := obj.(map[string]any)["properties"].(map[string]any)
			Expect(props).To(HaveKeyWithValue("auth_password", "******"))
			Expect(props).To(HaveKeyWithValue("auth_username", "node07"))
			Expect(props).To(HaveKeyWithValue("target_iqn", "iqn.2010-10.org.example:vol"))
			Expect(props["nested"]).To(HaveKeyWithValue("chap_secret", "******"))
		}

		It("masks credentials in every response and never alters the stored value", func() {
			r := e.at(v32, http.MethodPost, "/v1/volume/targets",
				`{"node_uuid": "`+node+`", "volume_type": "iscsi", "boot_index": 0, "volume_id": "a1b2", "properties": `+secretProps+`}`)
			Expect(r.status).To(Equal(http.StatusCreated))
			u := r.json()["uuid"].(string)
			Expect(r.header.Get("Location")).To(Equal(e.url + "/v1/volume/targets/" + u))
			bodies := []response{r}
			expectMasked(r.json())
			for _, p := range []string{"/v1/volume/targets/" + u, "/v1/volume/targets/" + u + "?fields=properties"} {
				g := e.at(v32, http.MethodGet, p, "")
				expectMasked(g.json())
				bodies = append(bodies, g)
			}
			for _, p := range []string{"/v1/volume/targets?detail=true", "/v1/volume/targets?fields=uuid,properties", "/v1/nodes/node-07/volume/targets?detail=true"} {
				g := e.at(v32, http.MethodGet, p, "")
				expectMasked(g.json()["targets"].([]any)[0])
				bodies = append(bodies, g)
			}
			p := e.at(v32, http.MethodPatch, "/v1/volume/targets/"+u, `[{"op": "add", "path": "/properties/auth_password", "value": "n3w-s3cr3t"}]`)
			Expect(p.status).To(Equal(http.StatusOK), string(p.raw))
			expectMasked(p.json())
			bodies = append(bodies, p)
			for _, b := range bodies {
				Expect(string(b.raw)).NotTo(ContainSubstring("s3cr3t"))
			}
			stored, err := e.store.GetVolumeTarget(context.Background(), u)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.Properties).To(HaveKeyWithValue("auth_password", "n3w-s3cr3t"))
			for _, entry := range e.logs.AllEntries() {
				line, _ := entry.String()
				Expect(line).NotTo(ContainSubstring("s3cr3t"))
			}
		})

		It("lists default fields and pages node-scoped lists", func() {
			a := createTarget(node, 0, "")
			createTarget(node, 1, "")
			list := e.at(v32, http.MethodGet, "/v1/volume/targets", "").json()["targets"].([]any)
			Expect(list).To(HaveLen(2))
			Expect(list[0]).To(HaveLen(6))
			Expect(list[0]).To(HaveKeyWithValue("boot_index", BeNumerically("==", 0)))
			Expect(list[0]).NotTo(HaveKey("properties"))
			page := e.at(v32, http.MethodGet, "/v1/nodes/node-07/volume/targets?limit=1", "").json()
			Expect(page["next"]).To(Equal(e.url + "/v1/nodes/node-07/volume/targets?sort_key=id&sort_dir=asc&fields=uuid,node_uuid,volume_type,boot_index,volume_id&limit=1&marker=" + a))
			Expect(e.at(v32, http.MethodGet, "/v1/volume/targets?sort_key=properties", "").status).To(Equal(http.StatusBadRequest))
			Expect(e.at(v32, http.MethodGet, "/v1/volume/targets?sort_key=boot_index&sort_dir=desc", "").json()["targets"].([]any)[0]).
				To(HaveKeyWithValue("boot_index", BeNumerically("==", 1)))
			Expect(e.at(v32, http.MethodGet, "/v1/volume/targets?volume_type=iscsi", "").status).To(Equal(http.StatusBadRequest))
		})

		It("lists full targets at /detail, masked, by node, in pages", func() {
			a := createTarget(node, 0, `{"auth_password": "s3cr3t"}`)
			b := createTarget(node, 1, "")
			createTarget(e.createNode(""), 0, "")
			Expect(e.at(v32, http.MethodGet, "/v1/volume/targets/detail", "").json()["targets"]).To(HaveLen(3))
			page := e.at(v32, http.MethodGet, "/v1/volume/targets/detail?node=node-07&limit=1", "").json()
			Expect(page["targets"]).To(ConsistOf(And(HaveKeyWithValue("uuid", a),
				HaveKeyWithValue("properties", map[string]any{"auth_password": "******"}), HaveKey("extra"))))
			Expect(page["next"]).To(Equal(e.url + "/v1/volume/targets/detail?sort_key=id&sort_dir=asc&node=node-07&limit=1&marker=" + a))
			page2 := e.at(v32, http.MethodGet, strings.TrimPrefix(page["next"].(string), e.url), "").json()
			Expect(page2["targets"]).To(ConsistOf(And(HaveKeyWithValue("uuid", b), HaveKey("properties"))))
			r := e.at(v32, http.MethodGet, "/v1/volume/targets/detail?fields=uuid", "")
			Expect(r.status).To(Equal(http.StatusBadRequest))
			Expect(faultOf(r)).To(Equal("Unexpected arguments: fields"))
		})

		DescribeTable("refuses bad creates",
			func(body string, code int, msg string) {
				r := e.at(v32, http.MethodPost, "/v1/volume/targets", strings.ReplaceAll(body, "NODE", node))
				Expect(r.status).To(Equal(code), string(r.raw))
				Expect(faultOf(r)).To(Equal(msg))
			},
			Entry("missing boot_index", `{"node_uuid": "NODE", "volume_type": "iscsi", "volume_id": "v"}`, 400, "Schema error for target: 'boot_index' is a required property"),
			Entry("string boot_index", `{"node_uuid": "NODE", "volume_type": "iscsi", "volume_id": "v", "boot_index": "0"}`, 400, "Schema error for target: '0' is not of type 'integer'"),
			Entry("fractional boot_index", `{"node_uuid": "NODE", "volume_type": "iscsi", "volume_id": "v", "boot_index": 1.5}`, 400, "Schema error for target: 1.5 is not of type 'integer'"),
			Entry("properties a list", `{"node_uuid": "NODE", "volume_type": "iscsi", "volume_id": "v", "boot_index": 0, "properties": []}`, 400, "Schema error for target: [] is not of type 'object'"),
			Entry("volume_id too long", `{"node_uuid": "NODE", "volume_type": "iscsi", "volume_id": "`+strings.Repeat("v", 37)+`", "boot_index": 0}`, 400, "Schema error for target: '"+strings.Repeat("v", 37)+"' is too long"),
			Entry("unknown key", `{"node_uuid": "NODE", "volume_type": "iscsi", "volume_id": "v", "boot_index": 0, "lun": 1}`, 400, "Schema error for target: Additional properties are not allowed ('lun' was unexpected)"),
			Entry("negative boot_index", `{"node_uuid": "NODE", "volume_type": "iscsi", "volume_id": "v", "boot_index": -1}`, 400, "Schema error for target: -1 is less than the minimum of 0"),
		)

		It("refuses a second boot index on the same node, on create and on update", func() {
			createTarget(node, 0, "")
			r := e.at(v32, http.MethodPost, "/v1/volume/targets", `{"node_uuid": "`+node+`", "volume_type": "iscsi", "boot_index": 0, "volume_id": "x"}`)
			Expect(r.status).To(Equal(http.StatusConflict))
			Expect(faultOf(r)).To(Equal("A volume target with boot index '0' for the same node already exists."))
			u := createTarget(node, 1, "")
			r = e.at(v32, http.MethodPatch, "/v1/volume/targets/"+u, `[{"op": "replace", "path": "/boot_index", "value": 0}]`)
			Expect(r.status).To(Equal(http.StatusConflict))
			r = e.at(v32, http.MethodPatch, "/v1/volume/targets/"+u, `[{"op": "replace", "path": "/lun", "value": 0}]`)
			Expect(faultOf(r)).To(Equal("Cannot patch /lun. Only the following can be updated: boot_index, extra, node_uuid, properties, volume_id, volume_type"))
		})

		It("updates, refuses while powered on, and deletes", func() {
			u := createTarget(node, 0, "")
			r := e.at(v32, http.MethodPatch, "/v1/volume/targets/"+u, `[{"op": "replace", "path": "/volume_id", "value": "f0e1"}, {"op": "replace", "path": "/boot_index", "value": 1}]`)
			Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
			Expect(r.json()).To(HaveKeyWithValue("boot_index", BeNumerically("==", 1)))
			Expect(r.json()).To(HaveKeyWithValue("volume_id", "f0e1"))
			e.setPower(node, states.PowerOn)
			r = e.at(v32, http.MethodPatch, "/v1/volume/targets/"+u, `[{"op": "replace", "path": "/volume_id", "value": "zzz"}]`)
			Expect(r.status).To(Equal(http.StatusBadRequest))
			Expect(faultOf(r)).To(ContainSubstring(`"volume target update"`))
			Expect(faultOf(e.at(v32, http.MethodDelete, "/v1/volume/targets/"+u, ""))).To(ContainSubstring(`"volume target deletion"`))
			e.setPower(node, states.PowerOff)
			Expect(e.at(v32, http.MethodDelete, "/v1/volume/targets/"+u, "").status).To(Equal(http.StatusNoContent))
			r = e.at(v32, http.MethodDelete, "/v1/volume/targets/"+u, "")
			Expect(faultOf(r)).To(Equal("Volume target " + u + " could not be found."))
		})

		It("ends 20 concurrent patches of one node's targets with none lost", func() {
			const n = 20
			uuids := make([]string, n)
			for i := range uuids {
				uuids[i] = createTarget(node, i, "")
			}
			var wg sync.WaitGroup
			codes := make([]int, n)
			for i := range uuids {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					// A client told 409 retries, as the message asks.
					for try := 0; try < 100; try++ {
						codes[i] = e.at(v32, http.MethodPatch, "/v1/volume/targets/"+uuids[i],
							fmt.Sprintf(`[{"op": "add", "path": "/extra/writer", "value": %d}]`, i)).status
						if codes[i] != http.StatusConflict {
							return
						}
					}
				}()
			}
			wg.Wait()
			ts, err := e.store.ListVolumeTargets(context.Background(), db.VolumeFilter{}, db.Page{}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(ts).To(HaveLen(n))
			for _, t := range ts {
				Expect(codes[t.BootIndex]).To(Equal(http.StatusOK))
				Expect(t.Extra).To(HaveKeyWithValue("writer", BeNumerically("==", t.BootIndex)))
			}
			Expect(e.store.GetNode(context.Background(), node)).To(HaveField("Reservation", BeNil()))
		})

		It("keeps a fake-deployed node's targets through tear down, as Ironic's fake deploy does", func() {
			createConnector("iqn", "iqn.keep")
			target := createTarget(node, 0, secretProps)
			n, err := e.store.GetNode(context.Background(), node)
			Expect(err).NotTo(HaveOccurred())
			n.SetState(states.Active, n.TargetState())
			n.DriverInternalInfo = model.JSONObject{"boot_from_volume": "t", "keep": "me"}
			Expect(e.store.SaveNode(context.Background(), n)).To(Succeed())
			r := e.at(v32, http.MethodPut, "/v1/nodes/"+node+"/states/provision", `{"target": "deleted"}`)
			Expect(r.status).To(Equal(http.StatusAccepted), string(r.raw))
			Eventually(func() any {
				return e.at(v32, http.MethodGet, "/v1/nodes/"+node, "").json()["provision_state"]
			}).Should(Equal("available"))
			Expect(e.at(v32, http.MethodGet, "/v1/volume/targets", "").json()["targets"]).To(HaveLen(1))
			Expect(e.at(v32, http.MethodGet, "/v1/volume/connectors", "").json()["connectors"]).To(HaveLen(1))
			Expect(e.node(node).DriverInternalInfo).To(HaveKeyWithValue("boot_from_volume", "t"))
			Expect(e.at(v32, http.MethodDelete, "/v1/volume/targets/"+target, "").status).To(Equal(http.StatusNoContent))
		})
	})

	Describe("storage_interface", func() {
		It("is a 1.33 field with noop by default and cinder and external available", func() {
			r := e.at("1.33", http.MethodGet, "/v1/nodes/"+node, "")
			Expect(r.json()).To(HaveKeyWithValue("storage_interface", "noop"))
			Expect(e.at(v32, http.MethodGet, "/v1/nodes/"+node, "").json()).NotTo(HaveKey("storage_interface"))
			r = e.at(v32, http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "storage_interface": "cinder"}`)
			Expect(r.status).To(Equal(http.StatusNotAcceptable))
			r = e.at("1.33", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "storage_interface": "cinder"}`)
			Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
			Expect(r.json()).To(HaveKeyWithValue("storage_interface", "cinder"))
			r = e.at("1.33", http.MethodPatch, "/v1/nodes/"+node, `[{"op": "replace", "path": "/storage_interface", "value": "external"}]`)
			Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
			Expect(r.json()).To(HaveKeyWithValue("storage_interface", "external"))
			r = e.at(v32, http.MethodPatch, "/v1/nodes/"+node, `[{"op": "replace", "path": "/storage_interface", "value": "noop"}]`)
			Expect(r.status).To(Equal(http.StatusNotAcceptable))
			r = e.at("1.33", http.MethodPatch, "/v1/nodes/"+node, `[{"op": "replace", "path": "/storage_interface", "value": "bogus"}]`)
			Expect(r.status).To(Equal(http.StatusBadRequest))
		})

		It("validates cinder's needs in the node's validation", func() {
			r := e.at("1.33", http.MethodPatch, "/v1/nodes/"+node, `[{"op": "replace", "path": "/storage_interface", "value": "cinder"}]`)
			Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
			storage := func() map[string]any {
				GinkgoHelper()
				v := e.at("1.33", http.MethodGet, "/v1/nodes/"+node+"/validate", "")
				Expect(v.status).To(Equal(http.StatusOK), string(v.raw))
				return v.json()["storage"].(map[string]any)
			}
			Expect(storage()).To(HaveKeyWithValue("result", true))
			createTarget(node, 0, "")
			Expect(storage()["reason"]).To(ContainSubstring("no iqn volume connector"))
			createConnector("iqn", "iqn.node-07")
			Expect(storage()["reason"]).To(ContainSubstring("iscsi_boot:true"))
			r = e.at("1.33", http.MethodPatch, "/v1/nodes/"+node, `[{"op": "add", "path": "/properties/capabilities", "value": "iscsi_boot:true"}]`)
			Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
			Expect(storage()).To(HaveKeyWithValue("result", true))
			createConnector("wwpn", "21:00:00:1b:21:aa:bb:cc")
			Expect(storage()["reason"]).To(ContainSubstring("1 wwpn and 0 wwnn"))
			createConnector("wwnn", "20:00:00:1b:21:aa:bb:cc")
			Expect(storage()).To(HaveKeyWithValue("result", true))
			r = e.at(v32, http.MethodPost, "/v1/volume/targets", `{"node_uuid": "`+node+`", "volume_type": "nvme", "boot_index": 1, "volume_id": "x"}`)
			Expect(r.status).To(Equal(http.StatusCreated))
			Expect(storage()["reason"]).To(ContainSubstring(`volume_type "nvme"`))
		})
	})
})

// setPower writes a node's power state as a power sync would.
func (e *env) setPower(uuid, state string) {
	GinkgoHelper()
	n, err := e.store.GetNode(context.Background(), uuid)
	Expect(err).NotTo(HaveOccurred())
	n.PowerState = &state
	Expect(e.store.SaveNode(context.Background(), n)).To(Succeed())
}

// setProvision writes a node's provision state directly.
func (e *env) setProvision(uuid string, state states.State) {
	GinkgoHelper()
	n, err := e.store.GetNode(context.Background(), uuid)
	Expect(err).NotTo(HaveOccurred())
	n.SetState(state, n.TargetState())
	Expect(e.store.SaveNode(context.Background(), n)).To(Succeed())
}
