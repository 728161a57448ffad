package chassis_test

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/chassis"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
)

func body(s string) map[string]any {
	var m map[string]any
	Expect(json.Unmarshal([]byte(s), &m)).To(Succeed())
	return m
}

var _ = Describe("chassis rules", func() {
	It("decodes a create body, generating a uuid and defaulting extra", func() {
		c, err := chassis.DecodeCreate(body(`{"description": "rack"}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.UUID).To(HaveLen(36))
		Expect(*c.Description).To(Equal("rack"))
		Expect(c.Extra).To(Equal(model.JSONObject{}))
	})

	DescribeTable("rejects bad create bodies with 400",
		func(raw, msg string) {
			_, err := chassis.DecodeCreate(body(raw))
			Expect(errs.Status(err)).To(Equal(400))
			Expect(errs.Message(err)).To(ContainSubstring(msg))
		},
		Entry("unknown key", `{"nodes": []}`, "('nodes' was unexpected)"),
		Entry("created_at", `{"created_at": "x"}`, "('created_at' was unexpected)"),
		Entry("long description", `{"description": "`+longText+`"}`, "too long"),
		Entry("numeric description", `{"description": 5}`, "is not of type 'string'"),
		Entry("bad uuid", `{"uuid": "x"}`, "Expected a UUID"),
	)

	It("patches a copy and leaves the original alone", func() {
		orig := &model.Chassis{UUID: "u", Extra: model.JSONObject{"a": "1"}}
		ops, err := jsonpatch.Decode([]byte(`[{"op": "add", "path": "/extra/b", "value": "2"}, {"op": "add", "path": "/description", "value": "d"}]`))
		Expect(err).NotTo(HaveOccurred())
		out, err := chassis.Apply(orig, ops)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Extra).To(Equal(model.JSONObject{"a": "1", "b": "2"}))
		Expect(*out.Description).To(Equal("d"))
		Expect(orig.Extra).To(Equal(model.JSONObject{"a": "1"}))
		Expect(orig.Description).To(BeNil())

		ops, _ = jsonpatch.Decode([]byte(`[{"op": "replace", "path": "/created_at", "value": "x"}]`))
		_, err = chassis.Apply(orig, ops)
		Expect(errs.Message(err)).To(Equal("Cannot patch /created_at. Only the following can be updated: description, extra"))
	})

	It("renders the nodes link only for full objects", func() {
		c := &model.Chassis{UUID: "u"}
		full := chassis.Resource.Render(catalogue.View[model.Chassis]{Version: microversion.Min, Base: "http://x"}, c)
		Expect(full).To(HaveKeyWithValue("extra", map[string]any{}))
		Expect(full).To(HaveKey("nodes"))
		sub := chassis.Resource.Render(catalogue.View[model.Chassis]{Version: microversion.Min, Base: "http://x", Fields: []string{"uuid"}}, c)
		Expect(sub).To(HaveLen(2))
		Expect(sub).NotTo(HaveKey("nodes"))
	})
})

const longText = "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789" +
	"0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789" +
	"01234567890123456789012345678901234567890123456789012345"

var _ = Describe("View.AppendJSON", func() {
	It("writes exactly what encoding/json writes for Render", func() {
		updated := time.Date(2026, 5, 2, 1, 2, 3, 4000, time.UTC)
		description := `rack <4> & "row" é \u2028`
		busy := &model.Chassis{UUID: "9e3f0c11-5d3a-4a8e-b1c2-7d6e5f4a3b21", Description: &description,
			Extra: model.JSONObject{"a": []any{1.5, map[string]any{"b": nil}}}, CreatedAt: updated, UpdatedAt: &updated}
		for _, c := range []*model.Chassis{{UUID: "u"}, busy} {
			for _, fields := range [][]string{nil, {"uuid"}, {"description", "extra"}} {
				vw := catalogue.View[model.Chassis]{Version: microversion.Min, Base: "http://api:6385", Fields: fields}
				want, err := json.Marshal(chassis.Resource.Render(vw, c))
				Expect(err).NotTo(HaveOccurred())
				got, err := chassis.Resource.AppendJSON([]byte("prefix"), &vw, c)
				Expect(err).NotTo(HaveOccurred())
				Expect(string(got)).To(Equal("prefix"+string(want)), "fields %v", fields)
			}
		}
	})
})
