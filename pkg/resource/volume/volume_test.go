package volume_test

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
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/volume"
)

const nodeUUID = "c2d8a1f4-7b3e-4e0a-9d5c-1a2b3c4d5e6f"

func decode(s string) map[string]any {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var m map[string]any
	Expect(dec.Decode(&m)).To(Succeed())
	return m
}

// asJSON is a rendered value as a client decodes it.
func asJSON(v any) map[string]any {
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	var m map[string]any
	Expect(json.Unmarshal(b, &m)).To(Succeed())
	return m
}

func ops(s string) []jsonpatch.Op {
	o, err := jsonpatch.Decode([]byte(s))
	Expect(err).NotTo(HaveOccurred())
	return o
}

var _ = Describe("create documents", func() {
	It("decodes a connector, generating a UUID and an empty extra", func() {
		c, err := volume.DecodeConnector(decode(`{"node_uuid": "` + nodeUUID + `", "type": "iqn", "connector_id": "iqn.x", "extra": null}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.UUID).To(HaveLen(36))
		Expect(c.NodeUUID).To(Equal(nodeUUID))
		Expect(c.Extra).To(BeEmpty())
		Expect(c.Extra).NotTo(BeNil())
	})

	It("decodes a target's integer boot index and keeps a given UUID", func() {
		t, err := volume.DecodeTarget(decode(`{"uuid": "0D5F3A2B-6C7E-4F80-91A2-B3C4D5E6F708", "node_uuid": "` + nodeUUID +
			`", "volume_type": "iscsi", "boot_index": 2, "volume_id": "v", "properties": {"a": 1}}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(t.UUID).To(Equal("0d5f3a2b-6c7e-4f80-91a2-b3c4d5e6f708"))
		Expect(t.BootIndex).To(Equal(2))
		Expect(t.Properties).To(HaveKey("a"))
	})

	DescribeTable("reports schema errors in Ironic's words",
		func(body, msg string) {
			_, err := volume.DecodeTarget(decode(body))
			Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
			Expect(errs.Message(err)).To(Equal(msg))
		},
		Entry("two unknown keys", `{"a": 1, "b": 2}`, "Schema error for target: Additional properties are not allowed ('a', 'b' were unexpected)"),
		Entry("null required", `{"node_uuid": null, "volume_type": "x", "boot_index": 0, "volume_id": "v"}`, "Schema error for target: 'node_uuid' is a required property"),
		Entry("boolean boot index", `{"node_uuid": "n", "volume_type": "x", "boot_index": true, "volume_id": "v"}`, "Schema error for target: True is not of type 'integer'"),
		Entry("huge boot index", `{"node_uuid": "n", "volume_type": "x", "boot_index": 99999999999, "volume_id": "v"}`, "Schema error for target: 99999999999 is not of type 'integer'"),
		Entry("empty volume type", `{"node_uuid": "n", "volume_type": "", "boot_index": 0, "volume_id": "v"}`, "Schema error for target: '' is too short"),
		Entry("object extra value shown as Python", `{"node_uuid": "n", "volume_type": "x", "boot_index": 0, "volume_id": "v", "extra": [{"k": null}]}`, "Schema error for target: [{'k': None}] is not of type 'object'"),
		Entry("node name", `{"node_uuid": "n", "volume_type": "x", "boot_index": 0, "volume_id": "v"}`, "Expected UUID for node_uuid: n"),
		Entry("negative boot index", `{"node_uuid": "n", "volume_type": "x", "boot_index": -1, "volume_id": "v"}`, "Schema error for target: -1 is less than the minimum of 0"),
	)

	It("accepts every known connector type and refuses any other", func() {
		for _, typ := range []string{"iqn", "ip", "mac", "wwnn", "wwpn", "net-id", "port", "portgroup"} {
			c, err := volume.DecodeConnector(decode(`{"node_uuid": "` + nodeUUID + `", "type": "` + typ + `", "connector_id": "x"}`))
			Expect(err).NotTo(HaveOccurred(), typ)
			Expect(c.Type).To(Equal(typ))
		}
		for _, typ := range []string{"IQN", "fc", "nqn", "iqn "} {
			_, err := volume.DecodeConnector(decode(`{"node_uuid": "` + nodeUUID + `", "type": "` + typ + `", "connector_id": "x"}`))
			Expect(errs.Status(err)).To(Equal(http.StatusBadRequest), typ)
			Expect(errs.Message(err)).To(Equal("Schema error for connector: '" + typ +
				"' is not one of ['iqn', 'ip', 'mac', 'wwnn', 'wwpn', 'net-id', 'port', 'portgroup']"))
		}
	})
})

var _ = Describe("patches", func() {
	base := &model.VolumeConnector{UUID: "u", NodeUUID: nodeUUID, Type: "iqn", ConnectorID: "iqn.a", Extra: model.JSONObject{"k": "v"}}

	It("patches a copy and leaves the original alone", func() {
		out, err := volume.ApplyConnector(base, ops(`[{"op": "remove", "path": "/extra/k"}, {"op": "replace", "path": "/type", "value": "ip"}]`))
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Extra).To(BeEmpty())
		Expect(out.Type).To(Equal("ip"))
		Expect(base.Extra).To(HaveKey("k"))
		Expect(base.Type).To(Equal("iqn"))
	})

	It("validates the result like a create", func() {
		_, err := volume.ApplyConnector(base, ops(`[{"op": "replace", "path": "/connector_id", "value": 5}]`))
		Expect(errs.Message(err)).To(Equal("Schema error for connector: 5 is not of type 'string'"))
		_, err = volume.ApplyTarget(&model.VolumeTarget{NodeUUID: nodeUUID, VolumeType: "iscsi", VolumeID: "v"}, ops(`[{"op": "remove", "path": "/boot_index"}]`))
		Expect(errs.Message(err)).To(Equal("Schema error for target: 'boot_index' is a required property"))
		_, err = volume.ApplyConnector(base, ops(`[{"op": "replace", "path": "/type", "value": "fc"}]`))
		Expect(errs.Message(err)).To(HavePrefix("Schema error for connector: 'fc' is not one of ["))
		_, err = volume.ApplyTarget(&model.VolumeTarget{NodeUUID: nodeUUID, VolumeType: "iscsi", VolumeID: "v"}, ops(`[{"op": "replace", "path": "/boot_index", "value": -2}]`))
		Expect(errs.Message(err)).To(Equal("Schema error for target: -2 is less than the minimum of 0"))
	})
})

var _ = Describe("representations", func() {
	t := &model.VolumeTarget{UUID: "u", NodeUUID: nodeUUID, VolumeType: "iscsi", VolumeID: "v",
		Properties: model.JSONObject{"auth_password": "pw", "target_iqn": "iqn.t", "list": []any{map[string]any{"token": "t"}}}}

	It("masks target credentials at any depth without touching the stored map", func() {
		out := asJSON(volume.RenderTarget("http://h", t, nil))
		props := out["properties"].(map[string]any)
		Expect(props).To(HaveKeyWithValue("auth_password", "******"))
		Expect(props).To(HaveKeyWithValue("target_iqn", "iqn.t"))
		Expect(props["list"].([]any)[0]).To(HaveKeyWithValue("token", "******"))
		Expect(t.Properties).To(HaveKeyWithValue("auth_password", "pw"))
		Expect(out["extra"]).To(Equal(map[string]any{}))
		Expect(out["updated_at"]).To(BeNil())
	})

	It("selects fields and always keeps links", func() {
		out := asJSON(volume.RenderTarget("http://h", t, []string{"boot_index"}))
		Expect(out).To(HaveLen(2))
		Expect(out["links"]).To(HaveLen(2))
		Expect(asJSON(volume.RenderTarget("http://h", t, []string{"links"}))).To(HaveLen(1))
		short := asJSON(volume.RenderTarget("http://h", t, volume.Targets.DefaultFields))
		Expect(short).To(HaveLen(6))
		Expect(short).NotTo(HaveKey("properties"))
		full := asJSON(volume.RenderConnector("http://h", &model.VolumeConnector{UUID: "c"}, nil))
		Expect(full).To(HaveLen(8))
		Expect(full).To(HaveKeyWithValue("extra", map[string]any{}))
	})

	It("appends byte for byte what encoding/json writes for each representation", func() {
		updated := time.Date(2026, 1, 2, 3, 4, 5, 678000, time.UTC)
		connectors := []*model.VolumeConnector{
			{UUID: "c", NodeUUID: nodeUUID, Type: "iqn", ConnectorID: "iqn.2026-01.org.example:a<b>&c"},
			{UUID: "d", NodeUUID: nodeUUID, Type: "wwpn", ConnectorID: "21:00:00:24:ff:4c:cd:01",
				Extra: model.JSONObject{"rack": "r\u00e9\"1\"", "n": 1.5}, CreatedAt: updated, UpdatedAt: &updated},
		}
		targets := []*model.VolumeTarget{t,
			{UUID: "w", NodeUUID: "n\u00e9", VolumeType: "fibre_channel", BootIndex: -3, VolumeID: "v<1>",
				Extra: model.JSONObject{"a": []any{nil, true}}, CreatedAt: updated, UpdatedAt: &updated}}
		for _, base := range []string{"http://h:6385", "http://h/<x>"} {
			for _, fields := range [][]string{nil, volume.Connectors.DefaultFields, {"extra", "uuid"}, {"links"}} {
				for _, c := range connectors {
					want, err := json.Marshal(volume.RenderConnector(base, c, fields))
					Expect(err).NotTo(HaveOccurred())
					Expect(volume.AppendConnector([]byte("x"), base, c, fields)).To(Equal(append([]byte("x"), want...)))
				}
			}
			for _, fields := range [][]string{nil, volume.Targets.DefaultFields, {"properties", "boot_index"}} {
				for _, vt := range targets {
					want, err := json.Marshal(volume.RenderTarget(base, vt, fields))
					Expect(err).NotTo(HaveOccurred())
					Expect(volume.AppendTarget(nil, base, vt, fields)).To(Equal(want))
				}
			}
		}
	})

	It("rejects unknown field names listing the valid ones", func() {
		Expect(volume.Connectors.CheckFields([]string{"uuid", "links"})).To(Succeed())
		err := volume.Connectors.CheckFields([]string{"node_id"})
		Expect(errs.Message(err)).To(Equal("Schema error for fields: 'node_id' is not one of ['connector_id', 'created_at', 'extra', 'links', 'node_uuid', 'type', 'updated_at', 'uuid']"))
		Expect(volume.Targets.Columns([]string{"links", "properties"})).To(Equal([]string{"uuid", "properties"}))
		Expect(volume.Targets.Columns(nil)).To(BeNil())
	})
})

// FuzzDecode checks that no body makes decoding panic or fail untyped.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{`{}`, `{"node_uuid": "` + nodeUUID + `", "type": "iqn", "connector_id": "x"}`,
		`{"node_uuid": "` + nodeUUID + `", "volume_type": "iscsi", "boot_index": 1e3, "volume_id": "v", "properties": {"a": [1]}}`,
		`{"uuid": 5}`, `{"boot_index": -1.0}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
		dec.UseNumber()
		var m map[string]any
		if dec.Decode(&m) != nil {
			return
		}
		for _, decodeOne := range []func(map[string]any) error{
			func(b map[string]any) error { _, err := volume.DecodeConnector(b); return err },
			func(b map[string]any) error { _, err := volume.DecodeTarget(b); return err },
		} {
			if err := decodeOne(m); err != nil {
				if _, typed := errs.As(err); !typed || errs.Status(err) != http.StatusBadRequest {
					t.Fatalf("body %q: untyped or non-400 error %v", raw, err)
				}
			}
		}
	})
}
