package catalogue_test

import (
	"encoding/json"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/present"
	"github.com/ferricbm/ferric/pkg/secrets"
)

// gadget is a resource made up for the specs: one row of each kind.
type gadget struct {
	UUID   string
	Name   *string
	Size   int
	Secret model.JSONObject
	Extra  model.JSONObject
	State  string
}

var v1, v5 = microversion.V1(1), microversion.V1(5)

func gadgets() *catalogue.Catalogue[gadget] {
	return catalogue.New(&catalogue.Catalogue[gadget]{Resource: "gadget",
		Fields: []catalogue.Field[gadget]{
			{Name: "uuid", Since: v1, Create: true, Sortable: true, Get: func(g *gadget) any { return g.UUID },
				Text: func(g *gadget) *string { return &g.UUID }},
			{Name: "name", Since: v1, Create: true, Patch: true, Required: true, Sortable: true,
				Filters: []catalogue.Filter{{}, {Param: "name_contains", Since: v5, Op: filter.Contains}},
				Get:     func(g *gadget) any { return present.Str(g.Name) },
				Text:    func(g *gadget) *string { return g.Name },
				Set:     catalogue.String("gadget", "name", 8, func(g *gadget) **string { return &g.Name })},
			{Name: "size", Since: v5, Create: true, Patch: true, Sortable: true, Get: func(g *gadget) any { return g.Size },
				Set: func(g *gadget, v any) error {
					switch t := v.(type) {
					case int:
						g.Size = t
					case float64:
						g.Size = int(t)
					case json.Number:
						n, err := t.Int64()
						if err != nil {
							return catalogue.TypeError("gadget", "size", v, "integer")
						}
						g.Size = int(n)
					default:
						return catalogue.TypeError("gadget", "size", v, "integer")
					}
					return nil
				}},
			{Name: "secret", Since: v1, Create: true, Patch: true, Masked: true,
				Get: func(g *gadget) any { return map[string]any(g.Secret) },
				Set: catalogue.Object("gadget", "secret", func(g *gadget) *model.JSONObject { return &g.Secret })},
			{Name: "extra", Since: v1, Create: true, Patch: true,
				Get:    func(g *gadget) any { return map[string]any(g.Extra) },
				Object: func(g *gadget) *model.JSONObject { return &g.Extra },
				Set:    catalogue.Object("gadget", "extra", func(g *gadget) *model.JSONObject { return &g.Extra })},
			{Name: "state", Since: v1, Get: func(g *gadget) any { return g.State },
				Show: func(g *gadget, v microversion.Version) any {
					if !v.AtLeast(v5) {
						return nil
					}
					return g.State
				}},
			{Name: "owner", Since: v1, Computed: true, Columns: []string{"state", "name"}, Get: func(*gadget) any { return nil },
				Filters: []catalogue.Filter{{}}},
			{Name: "future", Since: microversion.V1(999), Create: true, Patch: true, Filters: []catalogue.Filter{{Query: catalogue.QueryBool}}},
		},
		Defaults:   []string{"uuid", "name"},
		Path:       func(g *gadget) string { return "gadgets/" + g.UUID },
		UUID:       func(g *gadget) string { return g.UUID },
		NewUUID:    func(g *gadget) *string { return &g.UUID },
		SubLinks:   []catalogue.SubLink{{Name: "parts", Since: v5}},
		Unsortable: []string{"gizmos"},
	})
}

func body(s string) map[string]any {
	var m map[string]any
	Expect(json.Unmarshal([]byte(s), &m)).To(Succeed())
	return m
}

func message(err error) string {
	Expect(err).To(HaveOccurred())
	return errs.Message(err)
}

var _ = Describe("Catalogue", func() {
	c := gadgets()

	It("derives the list filters from the rows: parameter, version, column", func() {
		Expect(c.FilterParams()).To(Equal(map[string]microversion.Version{
			"name": v1, "name_contains": v5, "owner": v1, "future": microversion.V1(999)}))
		Expect(c.FilterParams("owner")).NotTo(HaveKey("owner"))
		Expect(c.Filters()).To(Equal([]catalogue.Filter{
			{Param: "name", Since: v1, Column: "name"},
			{Param: "name_contains", Since: v5, Op: filter.Contains, Column: "name"},
			{Param: "owner", Since: v1},
			{Param: "future", Since: microversion.V1(999), Query: catalogue.QueryBool},
		}), "a computed or unstored field's filter matches no column")
	})

	Describe("Decode", func() {
		It("sets the body in catalogue order and gives a new object a UUID", func() {
			var g gadget
			Expect(c.Decode(&g, body(`{"name": "a", "size": 3, "extra": null}`), v5)).To(Succeed())
			Expect(*g.Name).To(Equal("a"))
			Expect(g.Size).To(Equal(3))
			Expect(g.Extra).To(BeEmpty())
			Expect(g.UUID).To(HaveLen(36))
		})

		It("refuses unknown and read-only keys (400), newer and unstored ones (406), missing required ones", func() {
			var g gadget
			Expect(message(c.Decode(&g, body(`{"name": "a", "zz": 1, "state": "x"}`), v5))).To(Equal(
				"Schema error for gadget: Additional properties are not allowed ('state', 'zz' was unexpected)"))
			Expect(errs.Status(c.Decode(&g, body(`{"name": "a", "size": 1}`), v1))).To(Equal(http.StatusNotAcceptable))
			Expect(errs.Status(c.Decode(&g, body(`{"name": "a", "future": 1}`), microversion.Max))).To(Equal(http.StatusNotAcceptable))
			Expect(message(c.Decode(&g, body(`{"size": 1}`), v5))).To(Equal("Schema error for gadget: 'name' is a required property"))
			Expect(message(c.Decode(&g, body(`{"name": "123456789"}`), v5))).To(Equal(
				"Schema error for gadget: 'name' is too long (maximum 8 characters)"))
			Expect(message(c.Decode(&g, body(`{"name": "a", "secret": []}`), v5))).To(Equal(
				"Schema error for gadget: [] is not of type 'object' (field 'secret')"))
		})
	})

	Describe("Patch", func() {
		g := &gadget{UUID: "u", Name: ptr("a"), Extra: model.JSONObject{"k": "v"}}

		It("patches a copy with the create rules and leaves the original alone", func() {
			out, err := c.Patch(g, ops(`[{"op": "add", "path": "/extra/n", "value": 1}, {"op": "replace", "path": "/name", "value": "b"}]`), v5)
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Extra).To(Equal(model.JSONObject{"k": "v", "n": json.Number("1")}))
			Expect(*out.Name).To(Equal("b"))
			Expect(g.Extra).To(Equal(model.JSONObject{"k": "v"}))
			Expect(*g.Name).To(Equal("a"))
			// Each touched field's Set decides what a removal means.
			out, err = c.Patch(g, ops(`[{"op": "remove", "path": "/name"}]`), v5)
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Name).To(BeNil())
			_, err = c.Patch(g, ops(`[{"op": "replace", "path": "/secret", "value": 1}]`), v5)
			Expect(message(err)).To(Equal("Schema error for gadget: 1 is not of type 'object' (field 'secret')"))
		})

		It("refuses read-only paths (400) and paths newer than the version (406)", func() {
			_, err := c.Patch(g, ops(`[{"op": "replace", "path": "/state", "value": "x"}]`), v5)
			Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
			_, err = c.Patch(g, ops(`[{"op": "replace", "path": "/size", "value": 2}]`), v1)
			Expect(errs.Status(err)).To(Equal(http.StatusNotAcceptable))
		})

		It("validates the whole object after a patch when asked to", func() {
			out, err := c.ApplyWhole(g, ops(`[{"op": "replace", "path": "/size", "value": 7}]`))
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Size).To(Equal(7))
			// A removed attribute is null, which the volume schemas take for missing.
			whole := gadgets()
			whole.RequiredWhenNull = true
			_, err = whole.ApplyWhole(g, ops(`[{"op": "remove", "path": "/name"}]`))
			Expect(message(err)).To(Equal("Schema error for gadget: 'name' is a required property"))
		})
	})

	It("checks ?fields and sort keys against the rows and the version", func() {
		Expect(c.CheckOutputFields([]string{"uuid", "owner", "state"}, v1)).To(Succeed())
		Expect(message(c.CheckOutputFields([]string{"uuid", "future"}, microversion.Max))).To(Equal(`Field(s) "future" are not valid`))
		Expect(errs.Status(c.CheckOutputFields([]string{"size"}, v1))).To(Equal(http.StatusNotAcceptable))
		Expect(c.CheckSortKey("id", v1)).To(Succeed())
		Expect(c.CheckSortKey("size", v5)).To(Succeed())
		Expect(errs.Status(c.CheckSortKey("size", v1))).To(Equal(http.StatusNotAcceptable))
		Expect(message(c.CheckSortKey("extra", v5))).To(Equal("The sort_key value extra is an invalid field for sorting"))
		Expect(message(c.CheckSortKey("secret", v5))).To(Equal(`The sort_key value "secret" is an invalid field for sorting`))
		Expect(message(c.CheckSortKey("gizmos", v5))).To(Equal("The sort_key value gizmos is an invalid field for sorting"))
		Expect(c.PatchableNames()).To(Equal([]string{"extra", "future", "name", "secret", "size"}))
	})

	It("reads the uuid, each selected column and what computed fields derive from", func() {
		Expect(c.Columns(nil)).To(BeNil())
		Expect(c.Columns([]string{"owner", "size", "links"})).To(Equal([]string{"uuid", "state", "name", "size"}))
	})

	Describe("representation", func() {
		g := &gadget{UUID: "7d1e", Name: ptr(`<"é">`), Size: 4, State: "on",
			Secret: model.JSONObject{"password": "pw", "user": "u"}, Extra: model.JSONObject{"list": []any{1.5, nil}}}
		owner := func(_ string, g *gadget) any { return "owner of " + g.UUID }

		It("masks, shows by version, computes and links", func() {
			full := c.Render(catalogue.View[gadget]{Version: v5, Base: "http://h", Computed: owner}, g)
			Expect(full["secret"]).To(Equal(map[string]any{"password": secrets.Masked, "user": "u"}))
			Expect(full["state"]).To(Equal("on"))
			Expect(full["owner"]).To(Equal("owner of 7d1e"))
			Expect(full).To(HaveKey("parts"))
			Expect(full).NotTo(HaveKey("future"))
			Expect(g.Secret["password"]).To(Equal("pw"))
			old := c.Render(catalogue.View[gadget]{Version: v1, Base: "http://h"}, &gadget{UUID: "x", State: "on"})
			Expect(old["state"]).To(BeNil())
			Expect(old["owner"]).To(BeNil())
			Expect(old["extra"]).To(Equal(map[string]any{}))
			Expect(old).NotTo(HaveKey("size"))
			Expect(old).NotTo(HaveKey("parts"))
			sel := c.Render(catalogue.View[gadget]{Version: v5, Base: "http://h", Fields: []string{"size"}}, g)
			Expect(sel).To(HaveLen(2))
			Expect(sel).To(HaveKey("links"))
		})

		It("encodes exactly what encoding/json writes for Render, for every version and selection", func() {
			for _, m := range []*gadget{g, {UUID: "empty"}} {
				for _, v := range []microversion.Version{v1, v5} {
					for _, fields := range [][]string{nil, c.Defaults, {"secret", "owner", "state"}, {"size"}, {}} {
						for _, computed := range []func(string, *gadget) any{nil, owner} {
							vw := catalogue.View[gadget]{Version: v, Base: "http://h:1/<x>", Fields: fields, Computed: computed}
							want, err := json.Marshal(c.Render(vw, m))
							Expect(err).NotTo(HaveOccurred())
							got, err := c.AppendJSON([]byte("x"), &vw, m)
							Expect(err).NotTo(HaveOccurred())
							Expect(string(got)).To(Equal("x"+string(want)), "version %s, fields %v", v, fields)
						}
					}
				}
			}
		})
	})
})

func ops(s string) []jsonpatch.Op {
	o, err := jsonpatch.Decode([]byte(s))
	Expect(err).NotTo(HaveOccurred())
	return o
}

func ptr(s string) *string { return &s }
