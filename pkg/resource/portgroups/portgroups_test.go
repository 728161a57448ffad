package portgroups_test

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/portgroups"
)

const nodeUUID = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"

func body(s string) map[string]any {
	var m map[string]any
	Expect(json.Unmarshal([]byte(s), &m)).To(Succeed())
	return m
}

var (
	v1_23 = microversion.V1(23)
	v1_26 = microversion.V1(26)
)

var _ = Describe("port group rules", func() {
	It("decodes a create body with defaults", func() {
		pg, err := portgroups.DecodeCreate(body(`{"node_uuid": "`+nodeUUID+`", "address": "AA-BB-CC-DD-EE-FF", "name": "bond0.1"}`), v1_23)
		Expect(err).NotTo(HaveOccurred())
		Expect(pg.NodeUUID).To(Equal(nodeUUID))
		Expect(*pg.Address).To(Equal("aa:bb:cc:dd:ee:ff"))
		Expect(*pg.Name).To(Equal("bond0.1"))
		Expect(pg.StandalonePortsSupported).To(BeTrue())
		Expect(*pg.Mode).To(Equal(portgroups.DefaultMode))
		Expect(pg.Properties).To(Equal(model.JSONObject{}))

		pg, err = portgroups.DecodeCreate(body(`{"node_uuid": "`+nodeUUID+`", "mode": "802.3ad", "standalone_ports_supported": false}`), v1_26)
		Expect(err).NotTo(HaveOccurred())
		Expect(*pg.Mode).To(Equal("802.3ad"))
		Expect(pg.StandalonePortsSupported).To(BeFalse())
	})

	DescribeTable("rejects bad create bodies",
		func(raw string, v microversion.Version, status int, msg string) {
			_, err := portgroups.DecodeCreate(body(raw), v)
			Expect(errs.Status(err)).To(Equal(status))
			Expect(errs.Message(err)).To(ContainSubstring(msg))
		},
		Entry("mode before 1.26", `{"node_uuid": "`+nodeUUID+`", "mode": "x"}`, v1_23, 406, "Request not acceptable."),
		Entry("properties before 1.26", `{"node_uuid": "`+nodeUUID+`", "properties": {}}`, v1_23, 406, "Request not acceptable."),
		Entry("no node", `{}`, v1_26, 400, "'node_uuid' is a required property"),
		Entry("a reserved name", `{"node_uuid": "`+nodeUUID+`", "name": "detail"}`, v1_26, 400, "invalid portgroup name"),
		Entry("properties not an object", `{"node_uuid": "`+nodeUUID+`", "properties": []}`, v1_26, 400, "is not of type 'object'"),
	)

	It("patches a copy, gated by version", func() {
		orig := &model.Portgroup{UUID: "u", NodeUUID: nodeUUID, Properties: model.JSONObject{"a": "1"}}
		ops, err := jsonpatch.Decode([]byte(`[{"op": "add", "path": "/properties/b", "value": "2"}]`))
		Expect(err).NotTo(HaveOccurred())
		_, err = portgroups.Apply(orig, ops, v1_23)
		Expect(errs.Status(err)).To(Equal(406))
		out, err := portgroups.Apply(orig, ops, v1_26)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Properties).To(HaveLen(2))
		Expect(orig.Properties).To(HaveLen(1))
	})

	It("renders by version", func() {
		pg := &model.Portgroup{UUID: "u"}
		old := portgroups.Resource.Render(catalogue.View[model.Portgroup]{Version: v1_23, Base: "http://x"}, pg)
		Expect(old).NotTo(HaveKey("mode"))
		Expect(old).NotTo(HaveKey("ports"))
		Expect(old).To(HaveKeyWithValue("extra", map[string]any{}))
		cur := portgroups.Resource.Render(catalogue.View[model.Portgroup]{Version: v1_26, Base: "http://x"}, pg)
		Expect(cur).To(HaveKeyWithValue("mode", BeNil()))
		Expect(cur).To(HaveKey("ports"))
	})
})

var _ = Describe("View.AppendJSON", func() {
	It("writes exactly what encoding/json writes for Render", func() {
		updated := time.Date(2026, 5, 2, 1, 2, 3, 4000, time.UTC)
		name, mode, address := "bond0", "802.3ad", "aa:bb:cc:dd:ee:ff"
		busy := &model.Portgroup{UUID: "9e3f0c11-5d3a-4a8e-b1c2-7d6e5f4a3b21", Name: &name, Address: &address, Mode: &mode,
			NodeUUID: nodeUUID, Extra: model.JSONObject{"note": `<b>&"é"</b> \u2028`, "n": 2.0},
			Properties: model.JSONObject{"miimon": "100"}, InternalInfo: model.JSONObject{"k": []any{1.0, "v"}},
			StandalonePortsSupported: true, CreatedAt: updated, UpdatedAt: &updated}
		for _, pg := range []*model.Portgroup{{UUID: "u"}, busy} {
			for _, v := range []microversion.Version{microversion.Min, v1_23, v1_26, microversion.Max} {
				for _, fields := range [][]string{nil, {"uuid"}, {"name", "extra", "properties"}} {
					vw := catalogue.View[model.Portgroup]{Version: v, Base: "http://api:6385", Fields: fields}
					want, err := json.Marshal(portgroups.Resource.Render(vw, pg))
					Expect(err).NotTo(HaveOccurred())
					got, err := portgroups.Resource.AppendJSON([]byte("prefix"), &vw, pg)
					Expect(err).NotTo(HaveOccurred())
					Expect(string(got)).To(Equal("prefix"+string(want)), "version %s, fields %v", v, fields)
				}
			}
		}
	})
})
