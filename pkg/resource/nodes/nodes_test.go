package nodes_test

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
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/nodes"
	"github.com/ferricbm/ferric/pkg/resource/present"
	"github.com/ferricbm/ferric/pkg/states"
)

func body(s string) map[string]any {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var m map[string]any
	Expect(dec.Decode(&m)).To(Succeed())
	return m
}

func ptr[T any](v T) *T { return &v }

var v1_1, v1_4, v1_5, v1_10, v1_11 = microversion.V1(1), microversion.V1(4), microversion.V1(5), microversion.V1(10), microversion.V1(11)

func storedNode() *model.Node {
	created := time.Date(2026, 5, 1, 10, 11, 12, 123456000, time.UTC)
	return &model.Node{
		UUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", Name: ptr("n1"), Driver: "fake-hardware",
		DriverInfo: model.JSONObject{"ipmi_address": "192.0.2.1", "ipmi_password": "s3cret",
			"ilo_username": "admin", "ilo_password": "s3cret", "redfish_password": "s3cret"},
		InstanceInfo:       model.JSONObject{"configdrive": "H4sI", "image_url": "http://u:p@img", "root_gb": 10},
		DriverInternalInfo: model.JSONObject{"agent_secret_token": "tok"},
		ProvisionState:     ptr(string(states.Available)), CreatedAt: created,
	}
}

var _ = Describe("DecodeCreate", func() {
	It("builds a node with defaults", func() {
		n, err := nodes.DecodeCreate(body(`{"driver": "fake-hardware", "name": "node-1", "extra": {"a": 1}}`), v1_11)
		Expect(err).NotTo(HaveOccurred())
		Expect(n.UUID).To(MatchRegexp(`^[0-9a-f-]{36}$`))
		Expect(n.State()).To(Equal(states.Enroll))
		Expect(n.PowerState).To(BeNil())
		Expect(n.DriverInfo).NotTo(BeNil())
		Expect(n.Extra).To(HaveKeyWithValue("a", json.Number("1")))
	})

	It("starts nodes in available before 1.11", func() {
		n, err := nodes.DecodeCreate(body(`{"driver": "d"}`), microversion.V1(10))
		Expect(err).NotTo(HaveOccurred())
		Expect(n.State()).To(Equal(states.Available))
	})

	It("canonicalises a supplied UUID", func() {
		n, err := nodes.DecodeCreate(body(`{"driver": "d", "uuid": "1BE26C0B03F24D2EAE87C02D7F33C123"}`), v1_11)
		Expect(err).NotTo(HaveOccurred())
		Expect(n.UUID).To(Equal("1be26c0b-03f2-4d2e-ae87-c02d7f33c123"))
	})

	It("lower-cases the conductor group", func() {
		n, err := nodes.DecodeCreate(body(`{"driver": "d", "conductor_group": "Rack-1.A"}`), microversion.V1(46))
		Expect(err).NotTo(HaveOccurred())
		Expect(n.ConductorGroup).To(Equal("rack-1.a"))
	})

	It("accepts boolean strings", func() {
		n, err := nodes.DecodeCreate(body(`{"driver": "d", "maintenance": "True"}`), v1_11)
		Expect(err).NotTo(HaveOccurred())
		Expect(n.Maintenance).To(BeTrue())
	})

	It("tolerates name: null at any version", func() {
		_, err := nodes.DecodeCreate(body(`{"driver": "d", "name": null}`), v1_1)
		Expect(err).NotTo(HaveOccurred())
	})

	DescribeTable("rejects bad bodies with a 400",
		func(raw string, v microversion.Version, msg string) {
			_, err := nodes.DecodeCreate(body(raw), v)
			Expect(err).To(HaveOccurred())
			Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
			Expect(errs.Message(err)).To(ContainSubstring(msg))
		},
		Entry("unknown key", `{"driver": "d", "bogus": 1}`, v1_11, "Additional properties are not allowed ('bogus' was unexpected)"),
		Entry("read-only key", `{"driver": "d", "provision_state": "active"}`, v1_11, "'provision_state' was unexpected"),
		Entry("missing driver", `{"name": "x"}`, v1_11, "'driver' is a required property"),
		Entry("null driver", `{"driver": null}`, v1_11, "'driver' is a required property"),
		Entry("driver not a string", `{"driver": 5}`, v1_11, "is not of type 'string'"),
		Entry("extra not an object", `{"driver": "d", "extra": "x"}`, v1_11, "is not of type 'object'"),
		Entry("driver_info a list", `{"driver": "d", "driver_info": []}`, v1_11, "is not of type 'object'"),
		Entry("maintenance not a boolean", `{"driver": "d", "maintenance": "perhaps"}`, v1_11, "is not of type 'boolean'"),
		Entry("malformed uuid", `{"driver": "d", "uuid": "not-a-uuid"}`, v1_11, "Expected a UUID but received not-a-uuid."),
		Entry("uuid not a string", `{"driver": "d", "uuid": 7}`, v1_11, "is not of type 'string'"),
		Entry("malformed instance_uuid", `{"driver": "d", "instance_uuid": "zz"}`, v1_11, "Expected a UUID for instance_uuid"),
		Entry("name looking like a UUID", `{"driver": "d", "name": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"}`, v1_11, "invalid name"),
		Entry("reserved name", `{"driver": "d", "name": "detail"}`, v1_11, "invalid name"),
		Entry("non-hostname name before 1.10", `{"driver": "d", "name": "Node_1"}`, microversion.V1(9), "invalid name"),
		Entry("non-RFC3986 name", `{"driver": "d", "name": "a b"}`, v1_11, "invalid name"),
		Entry("bad conductor group", `{"driver": "d", "conductor_group": "a b"}`, microversion.V1(46), "Invalid conductor group"),
		Entry("too long resource class", `{"driver": "d", "resource_class": "`+string(bytes.Repeat([]byte("x"), 81))+`"}`, microversion.V1(21), "too long"),
	)

	It("accepts RFC 3986 names from 1.10", func() {
		_, err := nodes.DecodeCreate(body(`{"driver": "d", "name": "Node_1~x"}`), v1_10)
		Expect(err).NotTo(HaveOccurred())
	})

	DescribeTable("answers 406 for fields newer than the version",
		func(raw string, v microversion.Version) {
			_, err := nodes.DecodeCreate(body(raw), v)
			Expect(errs.Status(err)).To(Equal(http.StatusNotAcceptable))
		},
		Entry("name at 1.4", `{"driver": "d", "name": "x"}`, v1_4),
		Entry("resource_class at 1.20", `{"driver": "d", "resource_class": "x"}`, microversion.V1(20)),
		Entry("conductor_group at 1.11", `{"driver": "d", "conductor_group": "x"}`, v1_11),
		Entry("network_data (unstored) at 1.11", `{"driver": "d", "network_data": {}}`, v1_11),
		Entry("network_data (unstored) at its own version", `{"driver": "d", "network_data": {}}`, microversion.V1(66)),
	)
})

func patch(s string) []jsonpatch.Op {
	ops, err := jsonpatch.Decode([]byte(s))
	Expect(err).NotTo(HaveOccurred())
	return ops
}

var _ = Describe("patching", func() {
	It("applies to a copy and leaves the node untouched", func() {
		n := storedNode()
		out, err := nodes.Apply(n, patch(`[{"op": "add", "path": "/driver_info/ipmi_username", "value": "admin"}, {"op": "replace", "path": "/name", "value": "n2"}, {"op": "remove", "path": "/instance_info"}]`), v1_11)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.DriverInfo).To(HaveKeyWithValue("ipmi_username", "admin"))
		Expect(*out.Name).To(Equal("n2"))
		Expect(out.InstanceInfo).To(BeEmpty())
		Expect(n.DriverInfo).NotTo(HaveKey("ipmi_username"))
		Expect(*n.Name).To(Equal("n1"))
		Expect(n.InstanceInfo).To(HaveKey("root_gb"))
	})

	DescribeTable("rejects invalid results with a 400",
		func(p string, msg string) {
			_, err := nodes.Apply(storedNode(), patch(p), v1_11)
			Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
			Expect(errs.Message(err)).To(ContainSubstring(msg))
		},
		Entry("removing the driver", `[{"op": "remove", "path": "/driver"}]`, "'driver' is a required property"),
		Entry("extra set to a string", `[{"op": "replace", "path": "/extra", "value": "x"}]`, "is not of type 'object'"),
		Entry("an invalid name", `[{"op": "replace", "path": "/name", "value": "a b"}]`, "invalid name"),
		Entry("a missing nested key", `[{"op": "remove", "path": "/extra/none"}]`, "Couldn't apply patch"),
		Entry("a malformed instance_uuid", `[{"op": "add", "path": "/instance_uuid", "value": "x"}]`, "Expected a UUID"),
	)

	DescribeTable("CheckPatch rejects paths",
		func(p string, v microversion.Version, code int) {
			Expect(errs.Status(nodes.CheckPatch(patch(p), v))).To(Equal(code))
		},
		Entry("read-only uuid", `[{"op": "replace", "path": "/uuid", "value": "x"}]`, v1_11, http.StatusBadRequest),
		Entry("read-only provision_state", `[{"op": "replace", "path": "/provision_state", "value": "x"}]`, v1_11, http.StatusBadRequest),
		Entry("traits", `[{"op": "add", "path": "/traits", "value": []}]`, v1_11, http.StatusBadRequest),
		Entry("unknown", `[{"op": "add", "path": "/bogus", "value": 1}]`, v1_11, http.StatusBadRequest),
		Entry("name at 1.4", `[{"op": "replace", "path": "/name", "value": "x"}]`, v1_4, http.StatusNotAcceptable),
		Entry("owner at 1.11", `[{"op": "replace", "path": "/owner", "value": "x"}]`, v1_11, http.StatusNotAcceptable),
		Entry("chassis removal at 1.24", `[{"op": "remove", "path": "/chassis_uuid"}]`, microversion.V1(24), http.StatusNotAcceptable),
		Entry("an unstored field at its own version", `[{"op": "add", "path": "/shard", "value": "s"}]`, microversion.V1(82), http.StatusNotAcceptable),
	)

	It("lists the patchable fields in the error", func() {
		err := nodes.CheckPatch(patch(`[{"op": "replace", "path": "/uuid", "value": "x"}]`), v1_11)
		Expect(errs.Message(err)).To(HavePrefix("Cannot patch /uuid. Only the following can be updated: automated_clean, bios_interface, boot_interface, chassis_uuid,"))
	})

	Describe("CheckUpdatable", func() {
		It("refuses a node in transition", func() {
			n := storedNode()
			n.ProvisionState, n.TargetProvisionState = ptr(string(states.Deploying)), ptr(string(states.Active))
			err := nodes.CheckUpdatable(n, patch(`[{"op": "add", "path": "/extra/a", "value": 1}]`), v1_11)
			Expect(errs.Status(err)).To(Equal(http.StatusConflict))
			Expect(errs.Message(err)).To(Equal("Node 1be26c0b-03f2-4d2e-ae87-c02d7f33c123 can not be updated while a state transition is in progress."))
		})

		It("allows removing instance_uuid from a node in maintenance even in transition", func() {
			n := storedNode()
			n.ProvisionState, n.TargetProvisionState, n.Maintenance = ptr(string(states.Deploying)), ptr(string(states.Active)), true
			Expect(nodes.CheckUpdatable(n, patch(`[{"op": "remove", "path": "/instance_uuid"}]`), v1_11)).To(Succeed())
		})

		It("allows failed states with a target", func() {
			n := storedNode()
			n.ProvisionState, n.TargetProvisionState = ptr(string(states.DeployFail)), ptr(string(states.Active))
			Expect(nodes.CheckUpdatable(n, patch(`[{"op": "add", "path": "/extra/a", "value": 1}]`), v1_11)).To(Succeed())
		})

		It("refuses inspecting nodes from 1.39", func() {
			n := storedNode()
			n.ProvisionState = ptr(string(states.Inspecting))
			ops := patch(`[{"op": "add", "path": "/extra/a", "value": 1}]`)
			Expect(nodes.CheckUpdatable(n, ops, v1_11)).To(Succeed())
			Expect(errs.Status(nodes.CheckUpdatable(n, ops, microversion.V1(39)))).To(Equal(http.StatusConflict))
		})
	})

	It("refuses a driver change while the console is enabled", func() {
		n := storedNode()
		n.ConsoleEnabled = true
		_, err := nodes.Apply(n, patch(`[{"op": "replace", "path": "/driver", "value": "other"}]`), v1_11)
		Expect(errs.Status(err)).To(Equal(http.StatusConflict))
	})
})

var _ = Describe("View", func() {
	render := func(v microversion.Version, fields []string) map[string]any {
		obj := nodes.View{Version: v, Base: "http://api", Fields: fields}.Render(storedNode())
		raw, err := json.Marshal(obj)
		Expect(err).NotTo(HaveOccurred())
		var out map[string]any
		Expect(json.Unmarshal(raw, &out)).To(Succeed())
		return out
	}

	It("masks secrets, shows dicts as {} and renders timestamps with offset and microseconds", func() {
		out := render(v1_11, nil)
		Expect(out["driver_info"]).To(HaveKeyWithValue("ipmi_password", "******"))
		Expect(out["driver_info"]).To(HaveKeyWithValue("ilo_password", "******"))
		Expect(out["driver_info"]).To(HaveKeyWithValue("redfish_password", "******"))
		Expect(out["driver_info"]).To(HaveKeyWithValue("ilo_username", "admin"))
		Expect(out["driver_info"]).To(HaveKeyWithValue("ipmi_address", "192.0.2.1"))
		Expect(out["instance_info"]).To(HaveKeyWithValue("configdrive", "******"))
		Expect(out["instance_info"]).To(HaveKeyWithValue("image_url", "******"))
		Expect(out["driver_internal_info"]).To(HaveKeyWithValue("agent_secret_token", "******"))
		Expect(out["extra"]).To(Equal(map[string]any{}))
		Expect(out["properties"]).To(Equal(map[string]any{}))
		Expect(out["created_at"]).To(Equal("2026-05-01T10:11:12.123456+00:00"))
		Expect(out["updated_at"]).To(BeNil())
		Expect(out["links"]).To(Equal([]any{
			map[string]any{"href": "http://api/v1/nodes/1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "rel": "self"},
			map[string]any{"href": "http://api/nodes/1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "rel": "bookmark"},
		}))
		Expect(out).To(HaveKey("ports"))
	})

	It("hides fields below their version and shows available as null at 1.1", func() {
		out := render(v1_1, nil)
		Expect(out).NotTo(HaveKey("driver_internal_info"))
		Expect(out).NotTo(HaveKey("name"))
		Expect(out).NotTo(HaveKey("clean_step"))
		Expect(out).NotTo(HaveKey("states"))
		Expect(out).To(HaveKeyWithValue("provision_state", BeNil()))
		Expect(render(microversion.V1(2), nil)).To(HaveKeyWithValue("provision_state", "available"))
		Expect(render(v1_5, nil)).To(HaveKeyWithValue("name", "n1"))
	})

	It("never shows attributes newer than the maximum version", func() {
		out := render(microversion.Max, nil)
		for _, hidden := range []string{"retired", "lessee"} {
			Expect(out).NotTo(HaveKey(hidden))
		}
		for _, shown := range []string{"traits", "conductor_group", "protected", "fault", "conductor", "owner", "description"} {
			Expect(out).To(HaveKey(shown))
		}
	})

	It("selects fields, keeping links and dropping sub-collection links", func() {
		out := render(v1_11, []string{"uuid", "driver_info"})
		Expect(out).To(HaveLen(3))
		Expect(out).To(HaveKey("links"))
		Expect(out["driver_info"]).To(HaveKeyWithValue("ipmi_password", "******"))
	})

	It("shows inspect wait as inspecting before 1.39", func() {
		Expect(nodes.ProvisionStateAt(ptr(string(states.InspectWait)), v1_11)).To(Equal(string(states.Inspecting)))
		Expect(nodes.ProvisionStateAt(ptr(string(states.InspectWait)), microversion.V1(39))).To(Equal(string(states.InspectWait)))
	})

	It("validates ?fields= against the catalogue", func() {
		Expect(present.CheckFields([]string{"uuid", "name"}, nodes.OutputFields(), v1_11)).To(Succeed())
		err := present.CheckFields([]string{"uuid", "nope"}, nodes.OutputFields(), v1_11)
		Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
		Expect(errs.Message(err)).To(Equal(`Field(s) "nope" are not valid`))
		Expect(errs.Status(present.CheckFields([]string{"name"}, nodes.OutputFields(), v1_4))).To(Equal(http.StatusNotAcceptable))
	})

	It("backs every field of a negotiable version with storage", func() {
		for _, f := range nodes.Catalogue {
			if microversion.Max.AtLeast(f.Since) {
				Expect(f.Implemented()).To(BeTrue(), f.Name)
			}
		}
	})
})

func FuzzDecodeCreate(f *testing.F) {
	for _, seed := range []string{`{"driver": "d"}`, `{"driver": "d", "name": "x", "extra": {"a": [1]}}`,
		`{"driver": 1}`, `{"uuid": "z"}`, `{"driver": "d", "maintenance": "yes", "network_data": null}`, `[]`, `{"driver": "d", "instance_uuid": "1be26c0b03f24d2eae87c02d7f33c123"}`, `{"driver": "d", "network_data": {}, "shard": "x"}`} {
		f.Add(seed, 11)
	}
	f.Fuzz(func(t *testing.T, raw string, minor int) {
		dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
		dec.UseNumber()
		var m map[string]any
		if dec.Decode(&m) != nil {
			return
		}
		v := microversion.V1(1 + int(uint(minor)%120))
		n, err := nodes.DecodeCreate(m, v)
		if err == nil {
			if n.Driver == "" && m["driver"] != "" {
				t.Fatalf("accepted a node without a driver: %s", raw)
			}
			return
		}
		if _, typed := errs.As(err); !typed || errs.Status(err) < 400 || errs.Status(err) > 499 {
			t.Fatalf("error is not a typed 4xx: %v", err)
		}
	})
}

func FuzzPatch(f *testing.F) {
	for _, seed := range []string{`[{"op": "add", "path": "/extra/a", "value": 1}]`, `[{"op": "remove", "path": "/driver"}]`,
		`[{"op": "replace", "path": "/name", "value": "x y"}]`, `[{"op": "add", "path": "/shard", "value": "s"}]`,
		`[{"op": "replace", "path": "/driver_info/ipmi_password", "value": null}]`, `[{"op": "add", "path": "/maintenance", "value": "on"}]`} {
		f.Add(seed, uint8(11))
	}
	f.Fuzz(func(t *testing.T, raw string, minor uint8) {
		v := microversion.V1(1 + int(minor)%120)
		ops, err := jsonpatch.Decode([]byte(raw))
		if err == nil {
			err = nodes.CheckPatch(ops, v)
		}
		n := storedNode()
		if err == nil {
			err = nodes.CheckUpdatable(n, ops, v)
		}
		if err == nil {
			_, err = nodes.Apply(n, ops, v)
		}
		if err == nil {
			return
		}
		if _, typed := errs.As(err); !typed || errs.Status(err) < 400 || errs.Status(err) > 499 {
			t.Fatalf("error is not a typed 4xx: %v", err)
		}
	})
}

var _ = Describe("protection", func() {
	reason := func(s string) *string { return &s }
	It("needs protected for a new reason but lets a reason lapse with it", func() {
		plain := &model.Node{UUID: "n"}
		Expect(errs.Status(nodes.CheckProtection(plain, &model.Node{UUID: "n", ProtectedReason: reason("x")}))).To(Equal(http.StatusBadRequest))
		Expect(nodes.CheckProtection(plain, &model.Node{UUID: "n", Protected: true, ProtectedReason: reason("x")})).To(Succeed())
		held := &model.Node{UUID: "n", Protected: true, ProtectedReason: reason("x")}
		Expect(nodes.CheckProtection(held, &model.Node{UUID: "n", ProtectedReason: reason("x")})).To(Succeed())
	})
})
