package ports_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/ports"
)

const nodeUUID = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"

func body(s string) map[string]any {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var m map[string]any
	Expect(dec.Decode(&m)).To(Succeed())
	return m
}

var v1_11, v1_19, v1_34, v1_53 = microversion.V1(11), microversion.V1(19), microversion.V1(34), microversion.V1(53)

var _ = Describe("DecodeCreate", func() {
	It("normalises the MAC and defaults pxe_enabled", func() {
		p, err := ports.DecodeCreate(body(`{"address": "AA-BB-CC-DD-EE-0F", "node_uuid": "`+nodeUUID+`"}`), v1_11)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Address).To(Equal("aa:bb:cc:dd:ee:0f"))
		Expect(p.NodeUUID).To(Equal(nodeUUID))
		Expect(p.PXEEnabled).To(BeTrue())
		Expect(p.UUID).NotTo(BeEmpty())
	})

	It("accepts local link connections from 1.19", func() {
		p, err := ports.DecodeCreate(body(`{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "`+nodeUUID+`", "pxe_enabled": false, "local_link_connection": {"switch_id": "0A:00:00:00:00:01", "port_id": "Eth1"}}`), v1_19)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.PXEEnabled).To(BeFalse())
		Expect(p.LocalLinkConnection).To(HaveKeyWithValue("switch_id", "0a:00:00:00:00:01"))
	})

	It("takes Smart NIC ports from 1.53, their local link naming the card's host", func() {
		p, err := ports.DecodeCreate(body(`{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "`+nodeUUID+`", "is_smartnic": true,
			"local_link_connection": {"hostname": "card-7", "port_id": "rep0-0"}}`), v1_53)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.IsSmartNIC).To(BeTrue())
		Expect(p.LocalLinkConnection).To(Equal(model.JSONObject{"hostname": "card-7", "port_id": "rep0-0"}))

		p, err = ports.DecodeCreate(body(`{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "`+nodeUUID+`"}`), v1_53)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.IsSmartNIC).To(BeFalse())
	})

	DescribeTable("rejects",
		func(raw string, v microversion.Version, code int, msg string) {
			_, err := ports.DecodeCreate(body(raw), v)
			Expect(errs.Status(err)).To(Equal(code))
			Expect(errs.Message(err)).To(ContainSubstring(msg))
		},
		Entry("a bad MAC", `{"address": "aa:bb", "node_uuid": "`+nodeUUID+`"}`, v1_11, 400, "Expected a MAC address but received aa:bb."),
		Entry("no address", `{"node_uuid": "`+nodeUUID+`"}`, v1_11, 400, "'address' is a required property"),
		Entry("no node", `{"address": "aa:bb:cc:dd:ee:ff"}`, v1_11, 400, "'node_uuid' is a required property"),
		Entry("a malformed node_uuid", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "x"}`, v1_11, 400, "Expected a UUID"),
		Entry("an unknown key", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "`+nodeUUID+`", "Extra": {}}`, v1_11, 400, "'Extra' was unexpected"),
		Entry("extra of a wrong type", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "`+nodeUUID+`", "extra": []}`, v1_11, 400, "is not of type 'object'"),
		Entry("a malformed uuid", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "`+nodeUUID+`", "uuid": "u"}`, v1_11, 400, "Expected a UUID but received u."),
		Entry("pxe_enabled before 1.19", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "`+nodeUUID+`", "pxe_enabled": true}`, v1_11, 406, ""),
		Entry("physical_network before 1.34", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "`+nodeUUID+`", "physical_network": "p"}`, v1_19, 406, ""),
		Entry("an incomplete local link", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "`+nodeUUID+`", "local_link_connection": {"port_id": "x"}}`, v1_19, 400, "switch_id"),
		Entry("is_smartnic before 1.53", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "`+nodeUUID+`", "is_smartnic": false}`, v1_34, 406, ""),
		Entry("a non-boolean is_smartnic", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "`+nodeUUID+`", "is_smartnic": "maybe"}`, v1_53, 400, "is_smartnic"),
		Entry("a Smart NIC without its host", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "`+nodeUUID+`", "is_smartnic": true,
			"local_link_connection": {"switch_id": "0a:00:00:00:00:01", "port_id": "Eth1"}}`, v1_53, 400,
			"Smart NIC port must have port_id and hostname in local_link_connection"),
		Entry("a Smart NIC without a local link", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "`+nodeUUID+`", "is_smartnic": true}`, v1_53, 400,
			"Smart NIC port must have port_id and hostname"),
		Entry("a host without a port", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "`+nodeUUID+`", "local_link_connection": {"hostname": "card-7"}}`, v1_53, 400,
			"port_id"),
		Entry("an empty physical network", `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "`+nodeUUID+`", "physical_network": ""}`, v1_34, 400, "physical_network"),
	)
})

var _ = Describe("patching and rendering", func() {
	stored := func() *model.Port {
		return &model.Port{UUID: "9e3f0c11-5d3a-4a8e-b1c2-7d6e5f4a3b21", Address: "aa:bb:cc:dd:ee:ff", NodeUUID: nodeUUID,
			Extra: model.JSONObject{"a": "b"}, PXEEnabled: true}
	}
	patch := func(s string) []jsonpatch.Op {
		ops, err := jsonpatch.Decode([]byte(s))
		Expect(err).NotTo(HaveOccurred())
		return ops
	}

	It("patches a copy", func() {
		p := stored()
		out, err := ports.Apply(p, patch(`[{"op": "replace", "path": "/address", "value": "AA:BB:CC:DD:EE:00"}, {"op": "remove", "path": "/extra/a", "value": null}]`), v1_11)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Address).To(Equal("aa:bb:cc:dd:ee:00"))
		Expect(out.Extra).To(BeEmpty())
		Expect(p.Extra).To(HaveKey("a"))
	})

	DescribeTable("rejects patches",
		func(s string, code int) {
			_, err := ports.Apply(stored(), patch(s), v1_11)
			Expect(errs.Status(err)).To(Equal(code))
		},
		Entry("removing the address", `[{"op": "remove", "path": "/address"}]`, 400),
		Entry("a bad MAC", `[{"op": "replace", "path": "/address", "value": "zz"}]`, 400),
		Entry("the uuid", `[{"op": "replace", "path": "/uuid", "value": "x"}]`, 400),
		Entry("internal_info", `[{"op": "replace", "path": "/internal_info", "value": {}}]`, 400),
		Entry("pxe_enabled before 1.19", `[{"op": "replace", "path": "/pxe_enabled", "value": false}]`, 406),
		Entry("a missing key", `[{"op": "replace", "path": "/extra/zz", "value": 1}]`, 400),
	)

	It("keeps a Smart NIC port's local link naming the card", func() {
		p := stored()
		p.IsSmartNIC, p.LocalLinkConnection = true, model.JSONObject{"hostname": "card-7", "port_id": "rep0-0"}
		_, err := ports.Apply(p, patch(`[{"op": "replace", "path": "/local_link_connection", "value": {"switch_id": "0a:00:00:00:00:01", "port_id": "Eth1"}}]`), v1_53)
		Expect(errs.Message(err)).To(Equal("Smart NIC port must have port_id and hostname in local_link_connection"))
		_, err = ports.Apply(stored(), patch(`[{"op": "add", "path": "/is_smartnic", "value": true}]`), v1_53)
		Expect(errs.Status(err)).To(Equal(400))
		out, err := ports.Apply(p, patch(`[{"op": "replace", "path": "/is_smartnic", "value": false},
			{"op": "replace", "path": "/local_link_connection", "value": {"switch_id": "0a:00:00:00:00:01", "port_id": "Eth1"}}]`), v1_53)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.IsSmartNIC).To(BeFalse())
	})

	It("renders by version with links", func() {
		obj := ports.Resource.Render(catalogue.View[model.Port]{Version: microversion.V1(1), Base: "http://api"}, stored())
		Expect(obj).NotTo(HaveKey("pxe_enabled"))
		Expect(obj).NotTo(HaveKey("internal_info"))
		Expect(obj).To(HaveKeyWithValue("node_uuid", nodeUUID))
		obj = ports.Resource.Render(catalogue.View[model.Port]{Version: v1_19, Base: "http://api"}, stored())
		Expect(obj).To(HaveKeyWithValue("local_link_connection", map[string]any{}))
		Expect(obj).To(HaveKeyWithValue("internal_info", map[string]any{}))
		sel := ports.Resource.Render(catalogue.View[model.Port]{Version: v1_11, Base: "http://api", Fields: []string{"address"}}, stored())
		Expect(sel).To(HaveLen(2))
		Expect(sel).To(HaveKey("links"))
	})
})

var _ = Describe("CheckGroupPhysnet", func() {
	net := func(s string) *string { return &s }
	member := func(uuid string, physnet *string) model.Port { return model.Port{UUID: uuid, PhysicalNetwork: physnet} }

	It("lets a port join a group on its network, an empty group, or stay alone in its group", func() {
		p := member("p", net("physnet1"))
		Expect(ports.CheckGroupPhysnet(&p, "g", []model.Port{member("a", net("physnet1"))})).To(Succeed())
		Expect(ports.CheckGroupPhysnet(&p, "g", nil)).To(Succeed())
		Expect(ports.CheckGroupPhysnet(&p, "g", []model.Port{member("p", net("physnet2"))})).To(Succeed())
	})

	It("refuses a port on another network, and a group already split, with 409", func() {
		p := member("p", nil)
		err := ports.CheckGroupPhysnet(&p, "g", []model.Port{member("a", net("physnet1"))})
		Expect(errs.Status(err)).To(Equal(http.StatusConflict))
		Expect(errs.Message(err)).To(Equal("Port with physical network None cannot become a member of port group g which has ports in physical network physnet1."))
		err = ports.CheckGroupPhysnet(&p, "g", []model.Port{member("a", net("physnet1")), member("b", nil)})
		Expect(errs.Message(err)).To(Equal("Port group g has member ports with different physical networks (None, physnet1)."))
	})
})

func FuzzDecodeCreate(f *testing.F) {
	for _, seed := range []string{`{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "` + nodeUUID + `"}`,
		`{"address": 1}`, `{"address": "aa:bb:cc:dd:ee:ff", "node_uuid": "x", "local_link_connection": {"switch_id": 5}}`,
		`{"address": "0000.0000.0001", "node_uuid": "` + nodeUUID + `", "pxe_enabled": "no", "extra": {"k": [1, {"a": null}]}}`} {
		f.Add(seed, uint8(19))
	}
	f.Fuzz(func(t *testing.T, raw string, minor uint8) {
		dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
		dec.UseNumber()
		var m map[string]any
		if dec.Decode(&m) != nil {
			return
		}
		_, err := ports.DecodeCreate(m, microversion.V1(1+int(minor)%120))
		if err == nil {
			return
		}
		if _, typed := errs.As(err); !typed || errs.Status(err) < http.StatusBadRequest || errs.Status(err) > 499 {
			t.Fatalf("error is not a typed 4xx: %v", err)
		}
	})
}

var _ = Describe("View.AppendJSON", func() {
	It("writes exactly what encoding/json writes for Render", func() {
		updated := time.Date(2026, 5, 2, 1, 2, 3, 4000, time.UTC)
		busy := &model.Port{UUID: "9e3f0c11-5d3a-4a8e-b1c2-7d6e5f4a3b21", Address: "aa:bb:cc:dd:ee:ff", NodeUUID: nodeUUID,
			Extra:               model.JSONObject{"note": `<b>&"é"</b>`, "n": 1.5, "list": []any{"x<y", nil}},
			LocalLinkConnection: model.JSONObject{"switch_id": "aa:bb:cc:00:11:22", "port_id": "Eth1/1"},
			InternalInfo:        model.JSONObject{"tenant_vif_port_id": "vif"}, PhysicalNetwork: ptr("physnet \u2028 \xff"),
			CreatedAt: updated, UpdatedAt: &updated, PortgroupUUID: ptr("5d1e7c4a-6f0a-4c1e-9d3b-2b3a9e8f1c00")}
		for _, p := range []*model.Port{{UUID: "u"}, busy} {
			for _, v := range []microversion.Version{microversion.Min, v1_19, v1_34, microversion.Max} {
				for _, fields := range [][]string{nil, {"uuid"}, {"address", "extra", "local_link_connection"}} {
					vw := catalogue.View[model.Port]{Version: v, Base: "http://api:6385", Fields: fields}
					want, err := json.Marshal(ports.Resource.Render(vw, p))
					Expect(err).NotTo(HaveOccurred())
					got, err := ports.Resource.AppendJSON([]byte("prefix"), &vw, p)
					Expect(err).NotTo(HaveOccurred())
					Expect(string(got)).To(Equal("prefix"+string(want)), "version %s, fields %v", v, fields)
				}
			}
		}
	})
})

func ptr[T any](v T) *T { return &v }
