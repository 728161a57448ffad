package apiservice_test

import (
	"context"
	"encoding/json"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/chassis"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/nodes"
	"github.com/ferricbm/ferric/pkg/resource/portgroups"
	"github.com/ferricbm/ferric/pkg/resource/ports"
	"github.com/ferricbm/ferric/pkg/resource/volume"
	"github.com/ferricbm/ferric/pkg/states"
)

// The single-object answers are written by the catalogue's encoder; a
// client must get exactly what encoding/json writes for the object's
// map, as it did when the handlers encoded the map.
var _ = Describe("single-object responses", func() {
	var (
		e    *env
		node string
	)
	ctx := context.Background()

	BeforeEach(func() {
		e, node = sqliteEnvWithNode(`, "name": "host-1", "driver_info": {"ipmi_password": "pw"}, "extra": {"note": "<b>&\"é\"</b> \u2028"}`)
	})

	// encodingJSON is what encoding/json writes for obj.
	encodingJSON := func(obj map[string]any) string {
		GinkgoHelper()
		raw, err := json.Marshal(obj)
		Expect(err).NotTo(HaveOccurred())
		return string(raw)
	}
	// expectSame checks the created, read (whole and a field selection)
	// and patched object; render is the object as stored, with fields.
	expectSame := func(path string, created response, fields string, render func(fields []string) map[string]any) {
		GinkgoHelper()
		Expect(created.status).To(Equal(http.StatusCreated), "%s", created.raw)
		Expect(string(created.raw)).To(Equal(encodingJSON(render(nil))))

		r := e.at("latest", http.MethodGet, path, "")
		Expect(r.status).To(Equal(http.StatusOK), "%s", r.raw)
		Expect(string(r.raw)).To(Equal(encodingJSON(render(nil))))

		r = e.at("latest", http.MethodGet, path+"?fields="+fields, "")
		Expect(r.status).To(Equal(http.StatusOK), "%s", r.raw)
		Expect(string(r.raw)).To(Equal(encodingJSON(render([]string{"uuid", "extra"}))))

		r = e.at("latest", http.MethodPatch, path, `[{"op": "add", "path": "/extra/more", "value": {"x<y": [1.5, null, "é"]}}]`)
		Expect(r.status).To(Equal(http.StatusOK), "%s", r.raw)
		Expect(string(r.raw)).To(Equal(encodingJSON(render(nil))))
		Expect(r.json()["extra"]).To(HaveKey("more"))
	}

	It("are what encoding/json writes for a node", func() {
		host := e.cfg.Default.Host
		render := func(fields []string) map[string]any {
			n, err := e.store.GetNode(ctx, node)
			Expect(err).NotTo(HaveOccurred())
			return nodes.View{Version: microversion.Max, Base: e.url, Fields: fields,
				Conductor: func(*model.Node) *string { return &host }}.Render(n)
		}
		created := e.at("latest", http.MethodPost, "/v1/nodes", `{"driver": "fake-hardware", "name": "host-2", "extra": {"a": "<&>"}}`)
		node = created.json()["uuid"].(string)
		expectSame("/v1/nodes/"+node, created, "uuid,extra", render)
	})

	It("are what encoding/json writes for a port and a port group", func() {
		created := e.at("latest", http.MethodPost, "/v1/portgroups", `{"node_uuid": "`+node+`", "name": "bond0", "address": "aa:bb:cc:dd:ee:00", "extra": {"a": "<&>"}}`)
		pg := created.json()["uuid"].(string)
		expectSame("/v1/portgroups/"+pg, created, "uuid,extra", func(fields []string) map[string]any {
			stored, err := e.store.GetPortgroup(ctx, pg)
			Expect(err).NotTo(HaveOccurred())
			return portgroups.Resource.Render(catalogue.View[model.Portgroup]{Version: microversion.Max, Base: e.url, Fields: fields}, stored)
		})

		created = e.at("latest", http.MethodPost, "/v1/ports", `{"node_uuid": "`+node+`", "address": "aa:bb:cc:dd:ee:01", "portgroup_uuid": "`+pg+`",
			"local_link_connection": {"switch_id": "aa:bb:cc:00:11:22", "port_id": "Eth1/1"}, "extra": {"a": "<&>"}}`)
		port := created.json()["uuid"].(string)
		expectSame("/v1/ports/"+port, created, "uuid,extra", func(fields []string) map[string]any {
			stored, err := e.store.GetPort(ctx, port)
			Expect(err).NotTo(HaveOccurred())
			return ports.Resource.Render(catalogue.View[model.Port]{Version: microversion.Max, Base: e.url, Fields: fields}, stored)
		})
	})

	It("are what encoding/json writes for a chassis", func() {
		created := e.at("latest", http.MethodPost, "/v1/chassis", `{"description": "rack <4> & \"row\"", "extra": {"a": 1}}`)
		uuid := created.json()["uuid"].(string)
		expectSame("/v1/chassis/"+uuid, created, "uuid,extra", func(fields []string) map[string]any {
			stored, err := e.store.GetChassis(ctx, uuid)
			Expect(err).NotTo(HaveOccurred())
			return chassis.Resource.Render(catalogue.View[model.Chassis]{Version: microversion.Min, Base: e.url, Fields: fields}, stored)
		})
	})

	It("are what encoding/json writes for a volume connector and target", func() {
		decoded := func(obj any) map[string]any {
			GinkgoHelper()
			m, ok := obj.(map[string]any)
			Expect(ok).To(BeTrue())
			return m
		}
		// Volumes change only while their node is powered off.
		e.setPower(node, states.PowerOff)
		created := e.at("latest", http.MethodPost, "/v1/volume/connectors", `{"node_uuid": "`+node+`", "type": "iqn", "connector_id": "iqn.2026-01.org:<n>", "extra": {"a": "<&>"}}`)
		vc := created.json()["uuid"].(string)
		expectSame("/v1/volume/connectors/"+vc, created, "uuid,extra", func(fields []string) map[string]any {
			stored, err := e.store.GetVolumeConnector(ctx, vc)
			Expect(err).NotTo(HaveOccurred())
			return decoded(volume.RenderConnector(e.url, stored, fields))
		})

		created = e.at("latest", http.MethodPost, "/v1/volume/targets", `{"node_uuid": "`+node+`", "volume_type": "iscsi", "boot_index": 0, "volume_id": "v<1>",
			"properties": {"target_lun": 0}, "extra": {"a": "<&>"}}`)
		vt := created.json()["uuid"].(string)
		expectSame("/v1/volume/targets/"+vt, created, "uuid,extra", func(fields []string) map[string]any {
			stored, err := e.store.GetVolumeTarget(ctx, vt)
			Expect(err).NotTo(HaveOccurred())
			return decoded(volume.RenderTarget(e.url, stored, fields))
		})
	})
})
