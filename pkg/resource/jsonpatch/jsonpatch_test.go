package jsonpatch_test

import (
	"encoding/json"
	"net/http"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
)

func decode(s string) ([]jsonpatch.Op, error) { return jsonpatch.Decode([]byte(s)) }

func doc() map[string]any {
	var d map[string]any
	Expect(json.Unmarshal([]byte(`{"driver": "ipmi", "name": null, "extra": {"a": 1, "nested": {"b": 2}, "list": [1, 2]}, "properties": {}}`), &d)).To(Succeed())
	return d
}

func apply(d map[string]any, patch string) error {
	ops, err := decode(patch)
	Expect(err).NotTo(HaveOccurred())
	return jsonpatch.Apply(d, ops)
}

func status(err error) int { return errs.Status(err) }

var _ = Describe("Decode", func() {
	It("reads add, replace and remove", func() {
		ops, err := decode(`[{"op": "add", "path": "/extra/x", "value": 1}, {"op": "replace", "path": "/driver", "value": "fake"}, {"op": "remove", "path": "/extra/a", "value": null}]`)
		Expect(err).NotTo(HaveOccurred())
		Expect(ops).To(HaveLen(3))
		Expect(ops[0].Field()).To(Equal("extra"))
		Expect(ops[2].HasValue).To(BeFalse(), "value is ignored on remove")
	})

	DescribeTable("rejects malformed patches with a 400",
		func(body string) {
			_, err := decode(body)
			Expect(err).To(HaveOccurred())
			Expect(status(err)).To(Equal(http.StatusBadRequest))
		},
		Entry("not JSON", `[{"op":`),
		Entry("an object, not an array", `{"op": "add", "path": "/extra", "value": {}}`),
		Entry("a non-object item", `["add"]`),
		Entry("move", `[{"op": "move", "from": "/extra/a", "path": "/extra/b"}]`),
		Entry("copy", `[{"op": "copy", "path": "/extra/b"}]`),
		Entry("test", `[{"op": "test", "path": "/extra/a", "value": 1}]`),
		Entry("an extra key", `[{"op": "add", "path": "/extra/a", "value": 1, "from": "/x"}]`),
		Entry("no op", `[{"path": "/extra/a", "value": 1}]`),
		Entry("no path", `[{"op": "remove"}]`),
		Entry("a non-string op", `[{"op": 1, "path": "/extra"}]`),
		Entry("a path with a dot", `[{"op": "add", "path": "/extra/a.b", "value": 1}]`),
		Entry("a path with a tilde escape", `[{"op": "add", "path": "/extra/a~1b", "value": 1}]`),
		Entry("a path with a space", `[{"op": "add", "path": "/extra/a b", "value": 1}]`),
		Entry("a path without a leading slash", `[{"op": "add", "path": "extra", "value": 1}]`),
		Entry("a trailing slash", `[{"op": "add", "path": "/extra/", "value": 1}]`),
		Entry("the root", `[{"op": "replace", "path": "/", "value": {}}]`),
		Entry("add without a value", `[{"op": "add", "path": "/extra/a"}]`),
		Entry("trailing data", `[] []`),
	)
})

var _ = Describe("Apply", func() {
	It("adds a key inside a dict, overwriting an existing one", func() {
		d := doc()
		Expect(apply(d, `[{"op": "add", "path": "/extra/new", "value": "x"}, {"op": "add", "path": "/extra/a", "value": 5}]`)).To(Succeed())
		Expect(d["extra"]).To(HaveKeyWithValue("new", "x"))
		Expect(d["extra"]).To(HaveKeyWithValue("a", json.Number("5")))
	})

	It("treats add on an existing top-level field as replace", func() {
		d := doc()
		Expect(apply(d, `[{"op": "add", "path": "/driver", "value": "fake"}]`)).To(Succeed())
		Expect(d["driver"]).To(Equal("fake"))
	})

	It("replaces a nested value and a null top-level field", func() {
		d := doc()
		Expect(apply(d, `[{"op": "replace", "path": "/extra/nested/b", "value": 3}, {"op": "replace", "path": "/name", "value": "n1"}]`)).To(Succeed())
		Expect(d["extra"].(map[string]any)["nested"]).To(HaveKeyWithValue("b", json.Number("3")))
		Expect(d["name"]).To(Equal("n1"))
	})

	It("clears a top-level field on remove", func() {
		d := doc()
		Expect(apply(d, `[{"op": "remove", "path": "/extra"}]`)).To(Succeed())
		Expect(d).To(HaveKeyWithValue("extra", BeNil()))
	})

	It("removes a nested key", func() {
		d := doc()
		Expect(apply(d, `[{"op": "remove", "path": "/extra/a"}]`)).To(Succeed())
		Expect(d["extra"]).NotTo(HaveKey("a"))
	})

	It("edits lists by index and appends with -", func() {
		d := doc()
		Expect(apply(d, `[{"op": "add", "path": "/extra/list/-", "value": 3}, {"op": "replace", "path": "/extra/list/0", "value": 0}, {"op": "remove", "path": "/extra/list/1"}]`)).To(Succeed())
		Expect(d["extra"].(map[string]any)["list"]).To(Equal([]any{json.Number("0"), json.Number("3")}))
	})

	DescribeTable("fails with a PatchError naming the op",
		func(patch, reason string) {
			d := doc()
			err := apply(d, patch)
			Expect(err).To(HaveOccurred())
			Expect(errs.Is(err, errs.KindPatchError)).To(BeTrue())
			Expect(status(err)).To(Equal(http.StatusBadRequest))
			Expect(errs.Message(err)).To(HavePrefix("Couldn't apply patch '"))
			Expect(errs.Message(err)).To(ContainSubstring(reason))
		},
		Entry("replace of a missing key", `[{"op": "replace", "path": "/extra/nope", "value": 1}]`, "non-existent"),
		Entry("remove of a missing key", `[{"op": "remove", "path": "/extra/nope"}]`, "non-existent"),
		Entry("add of a new root attribute", `[{"op": "add", "path": "/bogus", "value": 1}]`, "Adding a new attribute (/bogus) to the root of the resource is not allowed"),
		Entry("a missing intermediate key", `[{"op": "add", "path": "/extra/no/such", "value": 1}]`, "not found"),
		Entry("a path through a scalar", `[{"op": "add", "path": "/driver/x", "value": 1}]`, "not an object"),
		Entry("a list index out of range", `[{"op": "replace", "path": "/extra/list/7", "value": 1}]`, "out of range"),
	)

	It("stops at the first failing op", func() {
		d := doc()
		err := apply(d, `[{"op": "replace", "path": "/extra/nope", "value": 1}, {"op": "replace", "path": "/driver", "value": "x"}]`)
		Expect(err).To(HaveOccurred())
		Expect(d["driver"]).To(Equal("ipmi"))
	})
})

var _ = Describe("CheckFields", func() {
	It("accepts allowed first segments and names the allowed list otherwise", func() {
		ops, err := decode(`[{"op": "replace", "path": "/extra/a", "value": 1}]`)
		Expect(err).NotTo(HaveOccurred())
		Expect(jsonpatch.CheckFields(ops, []string{"driver", "extra"})).To(Succeed())
		ops, err = decode(`[{"op": "replace", "path": "/uuid", "value": "x"}]`)
		Expect(err).NotTo(HaveOccurred())
		err = jsonpatch.CheckFields(ops, []string{"driver", "extra"})
		Expect(status(err)).To(Equal(http.StatusBadRequest))
		Expect(errs.Message(err)).To(Equal("Cannot patch /uuid. Only the following can be updated: driver, extra"))
	})
})

func FuzzApply(f *testing.F) {
	f.Add(`[{"op": "add", "path": "/extra/a", "value": 1}]`)
	f.Add(`[{"op": "remove", "path": "/extra/list/0"}]`)
	f.Add(`[{"op": "add", "path": "/extra/list/-", "value": [1]}]`)
	f.Add(`[{"op": "replace", "path": "/extra/nested/b/c", "value": null}]`)
	f.Add(`{"op": "move"}`)
	f.Add(`[{"op": "remove", "path": "/extra/list/-"}]`)
	f.Fuzz(func(t *testing.T, patch string) {
		ops, err := jsonpatch.Decode([]byte(patch))
		if err == nil {
			d := map[string]any{"driver": "x", "extra": map[string]any{"a": 1.0, "list": []any{1.0}, "nested": map[string]any{"b": map[string]any{}}}}
			err = jsonpatch.Apply(d, ops)
		}
		if err == nil {
			return
		}
		if _, typed := errs.As(err); !typed || errs.Status(err) < 400 || errs.Status(err) > 499 {
			t.Fatalf("error is not a typed 4xx: %v", err)
		}
	})
}
