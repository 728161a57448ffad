package connectors_test

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/pagination"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/client/fakeironic"
	"github.com/ferricbm/ferric/client/volume"
	"github.com/ferricbm/ferric/client/volume/connectors"
)

const (
	nodeUUID = "c2d8a1f4-7b3e-4e0a-9d5c-1a2b3c4d5e6f"
	uuidA    = "4b2a6f0e-8c1d-4f57-9a3e-2f6d0c9b7a11"
	uuidB    = "7f0c2e93-15d4-4b8a-8e61-0d9a3b2c4f55"

	// The server's public endpoint: next links carry it, whatever address
	// the client used.
	public = "http://192.0.2.10:6385"

	connectorB = `{
		"uuid": "7f0c2e93-15d4-4b8a-8e61-0d9a3b2c4f55",
		"node_uuid": "c2d8a1f4-7b3e-4e0a-9d5c-1a2b3c4d5e6f",
		"type": "wwpn",
		"connector_id": "21:00:00:1b:21:aa:bb:cc",
		"extra": {"fabric": "A"},
		"created_at": "2026-05-01T10:20:00.000001+00:00",
		"updated_at": null,
		"links": [
			{"href": "{url}/v1/volume/connectors/7f0c2e93-15d4-4b8a-8e61-0d9a3b2c4f55", "rel": "self"},
			{"href": "{url}/volume/connectors/7f0c2e93-15d4-4b8a-8e61-0d9a3b2c4f55", "rel": "bookmark"}
		]
	}`
)

// short is a list entry with the default fields.
func short(uuid, typ, id string) string {
	return `{"uuid": "` + uuid + `", "node_uuid": "` + nodeUUID + `", "type": "` + typ + `", "connector_id": "` + id + `",
		"links": [{"href": "{url}/v1/volume/connectors/` + uuid + `", "rel": "self"},
		          {"href": "{url}/volume/connectors/` + uuid + `", "rel": "bookmark"}]}`
}

func expectVersionHeaders(r fakeironic.Request, version string) {
	GinkgoHelper()
	Expect(r.Header.Get("X-OpenStack-Ironic-API-Version")).To(Equal(version))
	Expect(r.Header.Get("OpenStack-API-Version")).To(Equal("baremetal " + version))
	Expect(r.Header.Get("Accept")).To(Equal("application/json"))
}

var _ = Describe("volume connectors", func() {
	var (
		fake   *fakeironic.Server
		client *gophercloud.ServiceClient
	)
	BeforeEach(func() {
		fake = fakeironic.New()
		DeferCleanup(fake.Close)
		client = fake.Client(volume.MinMicroversion)
	})

	Describe("Create", func() {
		It("posts the connector and decodes the created one", func(ctx SpecContext) {
			fake.Handle("POST", "/v1/volume/connectors", fakeironic.Response{Status: http.StatusCreated, Body: connectorB,
				Header: map[string]string{"Location": public + "/v1/volume/connectors/" + uuidB}})
			c, err := connectors.Create(ctx, client, connectors.CreateOpts{
				NodeUUID:    nodeUUID,
				Type:        "wwpn",
				ConnectorID: "21:00:00:1b:21:aa:bb:cc",
				Extra:       map[string]any{"fabric": "A"},
			}).Extract()
			Expect(err).NotTo(HaveOccurred())

			reqs := fake.Requests()
			Expect(reqs).To(HaveLen(1))
			Expect(reqs[0].Method).To(Equal("POST"))
			Expect(reqs[0].Path).To(Equal("/v1/volume/connectors"))
			Expect(reqs[0].Header.Get("Content-Type")).To(Equal("application/json"))
			expectVersionHeaders(reqs[0], "1.32")
			Expect(reqs[0].Body).To(MatchJSON(`{"node_uuid": "` + nodeUUID + `", "type": "wwpn",
				"connector_id": "21:00:00:1b:21:aa:bb:cc", "extra": {"fabric": "A"}}`))

			Expect(c.UUID).To(Equal(uuidB))
			Expect(c.NodeUUID).To(Equal(nodeUUID))
			Expect(c.Type).To(Equal("wwpn"))
			Expect(c.ConnectorID).To(Equal("21:00:00:1b:21:aa:bb:cc"))
			Expect(c.Extra).To(Equal(map[string]any{"fabric": "A"}))
			Expect(c.CreatedAt).To(BeTemporally("==", time.Date(2026, 5, 1, 10, 20, 0, 1000, time.UTC)))
			Expect(c.UpdatedAt).To(BeNil())
			Expect(c.Links).To(Equal([]volume.Link{
				{Href: fake.URL + "/v1/volume/connectors/" + uuidB, Rel: "self"},
				{Href: fake.URL + "/volume/connectors/" + uuidB, Rel: "bookmark"},
			}))
		})

		It("sends a chosen uuid and omits an empty extra", func(ctx SpecContext) {
			fake.Handle("POST", "/v1/volume/connectors", fakeironic.Response{Status: http.StatusCreated, Body: connectorB})
			_, err := connectors.Create(ctx, client, connectors.CreateOpts{UUID: uuidB, NodeUUID: nodeUUID, Type: "iqn", ConnectorID: "iqn.x"}).Extract()
			Expect(err).NotTo(HaveOccurred())
			Expect(fake.Requests()[0].Body).To(MatchJSON(`{"uuid": "` + uuidB + `", "node_uuid": "` + nodeUUID + `", "type": "iqn", "connector_id": "iqn.x"}`))
		})

		It("refuses to send a connector without its required fields", func(ctx SpecContext) {
			_, err := connectors.Create(ctx, client, connectors.CreateOpts{NodeUUID: nodeUUID, Type: "iqn"}).Extract()
			Expect(err).To(HaveOccurred())
			Expect(fake.Requests()).To(BeEmpty())
		})

		It("reports the server's 409 as a 409", func(ctx SpecContext) {
			fake.Handle("POST", "/v1/volume/connectors", fakeironic.Response{Status: http.StatusConflict,
				Body: `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"A volume connector with type wwpn and connector ID 21:00:00:1b:21:aa:bb:cc already exists.\", \"debuginfo\": null}"}`})
			_, err := connectors.Create(ctx, client, connectors.CreateOpts{NodeUUID: nodeUUID, Type: "wwpn", ConnectorID: "21:00:00:1b:21:aa:bb:cc"}).Extract()
			Expect(gophercloud.ResponseCodeIs(err, http.StatusConflict)).To(BeTrue(), "%v", err)
		})
	})

	Describe("Get", func() {
		It("reads one connector, optionally a subset of its fields", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/connectors/"+uuidB, fakeironic.Response{Status: http.StatusOK, Body: connectorB})
			c, err := connectors.Get(ctx, client, uuidB, nil).Extract()
			Expect(err).NotTo(HaveOccurred())
			Expect(c.ConnectorID).To(Equal("21:00:00:1b:21:aa:bb:cc"))

			fake.Handle("GET", "/v1/volume/connectors/"+uuidB, fakeironic.Response{Status: http.StatusOK, Body: `{
				"connector_id": "21:00:00:1b:21:aa:bb:cc", "node_uuid": "` + nodeUUID + `",
				"links": [{"href": "{url}/v1/volume/connectors/` + uuidB + `", "rel": "self"},
				          {"href": "{url}/volume/connectors/` + uuidB + `", "rel": "bookmark"}]}`})
			c, err = connectors.Get(ctx, client, uuidB, connectors.GetOpts{Fields: []string{"connector_id", "node_uuid"}}).Extract()
			Expect(err).NotTo(HaveOccurred())
			Expect(c.NodeUUID).To(Equal(nodeUUID))
			Expect(c.Type).To(BeEmpty())

			reqs := fake.Requests()
			Expect(reqs).To(HaveLen(2))
			Expect(reqs[0].Query).To(BeEmpty())
			Expect(reqs[1].Method).To(Equal("GET"))
			Expect(reqs[1].Path).To(Equal("/v1/volume/connectors/" + uuidB))
			Expect(reqs[1].Query).To(Equal(url.Values{"fields": {"connector_id,node_uuid"}}))
			expectVersionHeaders(reqs[1], "1.32")
		})

		It("reports an unknown connector as a 404", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/connectors/0b0e61a4-2a4e-4c3b-9b1e-0c1d2e3f4a5b", fakeironic.Response{Status: http.StatusNotFound,
				Body: `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"Volume connector 0b0e61a4-2a4e-4c3b-9b1e-0c1d2e3f4a5b could not be found.\", \"debuginfo\": null}"}`})
			_, err := connectors.Get(ctx, client, "0b0e61a4-2a4e-4c3b-9b1e-0c1d2e3f4a5b", nil).Extract()
			Expect(gophercloud.ResponseCodeIs(err, http.StatusNotFound)).To(BeTrue(), "%v", err)
		})
	})

	Describe("List", func() {
		page := func(next string, items ...string) fakeironic.Response {
			body := `{"connectors": [`
			for i, it := range items {
				if i > 0 {
					body += ","
				}
				body += it
			}
			body += `]`
			if next != "" {
				body += `, "next": "` + next + `"`
			}
			return fakeironic.Response{Status: http.StatusOK, Body: body + `}`}
		}

		It("sends every list option", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/connectors", page(""))
			err := connectors.List(client, connectors.ListOpts{Node: "node-07", Fields: []string{"uuid", "type"}, Limit: 5,
				Marker: uuidA, SortKey: "type", SortDir: "desc"}).EachPage(ctx, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(fake.Requests()[0].Query).To(Equal(url.Values{"node": {"node-07"}, "fields": {"uuid,type"}, "limit": {"5"},
				"marker": {uuidA}, "sort_key": {"type"}, "sort_dir": {"desc"}}))
			expectVersionHeaders(fake.Requests()[0], "1.32")
		})

		It("refuses fields together with detail, sending nothing", func(ctx SpecContext) {
			_, err := connectors.List(client, connectors.ListOpts{Detail: true, Fields: []string{"uuid"}}).AllPages(ctx)
			Expect(err).To(MatchError(ContainSubstring("fields cannot be combined with detail")))
			Expect(fake.Requests()).To(BeEmpty())
		})

		It("follows next links to the end, keeping the request's own options and address", func(ctx SpecContext) {
			// The server drops node= from next and names its public
			// endpoint; the third page is empty because the second was
			// exactly full.
			fake.Handle("GET", "/v1/volume/connectors", page(public+"/v1/volume/connectors?sort_key=id&sort_dir=asc&detail=True&limit=1&marker="+uuidA,
				short(uuidA, "iqn", "iqn.2004-06.example.net:node-07")))
			fake.Handle("GET", "/v1/volume/connectors", page(public+"/v1/volume/connectors?sort_key=id&sort_dir=asc&detail=True&limit=1&marker="+uuidB,
				short(uuidB, "wwpn", "21:00:00:1b:21:aa:bb:cc")))
			fake.Handle("GET", "/v1/volume/connectors", page(""))

			pages, err := connectors.List(client, connectors.ListOpts{Node: "node-07", Detail: true, Limit: 1}).AllPages(ctx)
			Expect(err).NotTo(HaveOccurred())
			all, err := connectors.ExtractConnectors(pages)
			Expect(err).NotTo(HaveOccurred())
			Expect(all).To(HaveLen(2))
			Expect(all[0].UUID).To(Equal(uuidA))
			Expect(all[1].UUID).To(Equal(uuidB))
			Expect(all[1].Type).To(Equal("wwpn"))

			reqs := fake.Requests()
			Expect(reqs).To(HaveLen(3))
			Expect(reqs[0].Query).To(Equal(url.Values{"node": {"node-07"}, "detail": {"true"}, "limit": {"1"}}))
			Expect(reqs[1].Query).To(Equal(url.Values{"node": {"node-07"}, "detail": {"true"}, "limit": {"1"}, "marker": {uuidA}}))
			Expect(reqs[2].Query).To(Equal(url.Values{"node": {"node-07"}, "detail": {"true"}, "limit": {"1"}, "marker": {uuidB}}))
			for _, r := range reqs {
				Expect(r.Path).To(Equal("/v1/volume/connectors"))
				expectVersionHeaders(r, "1.32")
			}
		})

		It("lists full connectors from /detail, keeping that path across pages and refusing fields", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/connectors/detail", page(public+"/v1/volume/connectors/detail?sort_key=id&sort_dir=asc&limit=1&marker="+uuidB, connectorB))
			fake.Handle("GET", "/v1/volume/connectors/detail", page(""))

			pages, err := connectors.ListDetail(client, connectors.ListOpts{Node: nodeUUID, Limit: 1}).AllPages(ctx)
			Expect(err).NotTo(HaveOccurred())
			all, err := connectors.ExtractConnectors(pages)
			Expect(err).NotTo(HaveOccurred())
			Expect(all).To(HaveLen(1))
			Expect(all[0].Extra).To(HaveKeyWithValue("fabric", "A"))
			Expect(all[0].CreatedAt.IsZero()).To(BeFalse())
			reqs := fake.Requests()
			Expect(reqs).To(HaveLen(2))
			for _, r := range reqs {
				Expect(r.Path).To(Equal("/v1/volume/connectors/detail"))
				expectVersionHeaders(r, "1.32")
			}
			Expect(reqs[0].Query).To(Equal(url.Values{"node": {nodeUUID}, "limit": {"1"}}))
			Expect(reqs[1].Query).To(Equal(url.Values{"node": {nodeUUID}, "limit": {"1"}, "marker": {uuidB}}))

			_, err = connectors.ListDetail(client, connectors.ListOpts{Fields: []string{"uuid"}}).AllPages(ctx)
			Expect(err).To(MatchError(ContainSubstring("fields is not a valid option")))
			Expect(fake.Requests()).To(HaveLen(2), "nothing sent")
		})

		It("stays on the node-scoped path that next links leave", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/nodes/node-07/volume/connectors", page(public+"/v1/volume/connectors?sort_key=id&sort_dir=asc&fields=uuid,type&limit=1&marker="+uuidA,
				`{"uuid": "`+uuidA+`", "type": "iqn", "links": []}`))
			fake.Handle("GET", "/v1/nodes/node-07/volume/connectors", page("", `{"uuid": "`+uuidB+`", "type": "wwpn", "links": []}`))

			var seen []string
			err := connectors.ListByNode(client, "node-07", connectors.ListOpts{Fields: []string{"uuid", "type"}, Limit: 1}).
				EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
					cs, err := connectors.ExtractConnectors(p)
					for _, c := range cs {
						seen = append(seen, c.UUID+" "+c.Type)
					}
					return true, err
				})
			Expect(err).NotTo(HaveOccurred())
			Expect(seen).To(Equal([]string{uuidA + " iqn", uuidB + " wwpn"}))
			reqs := fake.Requests()
			Expect(reqs).To(HaveLen(2))
			Expect(reqs[1].Path).To(Equal("/v1/nodes/node-07/volume/connectors"))
			Expect(reqs[1].Query).To(Equal(url.Values{"fields": {"uuid,type"}, "limit": {"1"}, "marker": {uuidA}}))
		})

		It("stops when the server repeats the marker it was given", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/connectors", page(public+"/v1/volume/connectors?limit=1&marker="+uuidA, short(uuidA, "iqn", "iqn.a")))
			pages, err := connectors.List(client, connectors.ListOpts{Limit: 1, Marker: uuidA}).AllPages(ctx)
			Expect(err).NotTo(HaveOccurred())
			all, err := connectors.ExtractConnectors(pages)
			Expect(err).NotTo(HaveOccurred())
			Expect(all).To(HaveLen(1))
			Expect(fake.Requests()).To(HaveLen(1))
		})

		It("fails on a next link without a marker instead of refetching the first page", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/connectors", page(public+"/v1/volume/connectors?limit=1", short(uuidA, "iqn", "iqn.a")))
			_, err := connectors.List(client, nil).AllPages(ctx)
			Expect(err).To(MatchError(ContainSubstring("carries no marker")))
		})
	})

	Describe("Update", func() {
		It("sends the JSON patch operations in order and decodes the result", func(ctx SpecContext) {
			fake.Handle("PATCH", "/v1/volume/connectors/"+uuidB, fakeironic.Response{Status: http.StatusOK, Body: `{
				"uuid": "` + uuidB + `", "node_uuid": "` + nodeUUID + `", "type": "wwpn",
				"connector_id": "21:00:00:1b:21:aa:bb:dd", "extra": {"fabric": "B"},
				"created_at": "2026-05-01T10:20:00.000001+00:00", "updated_at": "2026-05-01T11:02:13.447120+00:00",
				"links": []}`})
			c, err := connectors.Update(ctx, client, uuidB, connectors.UpdateOpts{
				connectors.UpdateOperation{Op: connectors.ReplaceOp, Path: "/connector_id", Value: "21:00:00:1b:21:aa:bb:dd"},
				connectors.UpdateOperation{Op: connectors.AddOp, Path: "/extra/fabric", Value: "B"},
				connectors.UpdateOperation{Op: connectors.RemoveOp, Path: "/extra/old", Value: "ignored"},
			}).Extract()
			Expect(err).NotTo(HaveOccurred())
			Expect(c.ConnectorID).To(Equal("21:00:00:1b:21:aa:bb:dd"))
			Expect(*c.UpdatedAt).To(BeTemporally("==", time.Date(2026, 5, 1, 11, 2, 13, 447120000, time.UTC)))

			r := fake.Requests()[0]
			Expect(r.Method).To(Equal("PATCH"))
			Expect(r.Path).To(Equal("/v1/volume/connectors/" + uuidB))
			expectVersionHeaders(r, "1.32")
			Expect(r.Body).To(MatchJSON(`[
				{"op": "replace", "path": "/connector_id", "value": "21:00:00:1b:21:aa:bb:dd"},
				{"op": "add", "path": "/extra/fabric", "value": "B"},
				{"op": "remove", "path": "/extra/old"}]`))
		})

		It("refuses operations the server does not know, sending nothing", func(ctx SpecContext) {
			_, err := connectors.Update(ctx, client, uuidB, connectors.UpdateOpts{
				connectors.UpdateOperation{Op: "move", Path: "/extra/a", Value: "b"}}).Extract()
			Expect(err).To(MatchError(ContainSubstring(`"move"`)))
			_, err = connectors.Update(ctx, client, uuidB, connectors.UpdateOpts{
				connectors.UpdateOperation{Op: connectors.AddOp, Path: "extra/a", Value: "b"}}).Extract()
			Expect(err).To(MatchError(ContainSubstring("must start with /")))
			Expect(fake.Requests()).To(BeEmpty())
		})
	})

	Describe("Delete", func() {
		It("deletes and accepts 204 only", func(ctx SpecContext) {
			fake.Handle("DELETE", "/v1/volume/connectors/"+uuidB, fakeironic.Response{Status: http.StatusNoContent})
			Expect(connectors.Delete(ctx, client, uuidB).ExtractErr()).To(Succeed())
			r := fake.Requests()[0]
			Expect(r.Method).To(Equal("DELETE"))
			Expect(r.Body).To(BeEmpty())
			expectVersionHeaders(r, "1.32")

			fake.Handle("DELETE", "/v1/volume/connectors/"+uuidA, fakeironic.Response{Status: http.StatusBadRequest,
				Body: `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"The requested action \\\"volume connector deletion\\\" can not be performed on node \\\"` + nodeUUID + `\\\" while it is in state \\\"power on\\\".\", \"debuginfo\": null}"}`})
			err := connectors.Delete(ctx, client, uuidA).ExtractErr()
			Expect(gophercloud.ResponseCodeIs(err, http.StatusBadRequest)).To(BeTrue(), "%v", err)
		})
	})
})
