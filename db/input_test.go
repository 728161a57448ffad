package db

import (
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/model"
)

func inputSpecs(store func() *Store) {
	Describe("rows no JSON float decoder reads", func() {
		It("list and read with a number beyond float64 kept as its literal, and save it back unchanged", func(ctx SpecContext) {
			s := store()
			bad, good := newNode("bad"), newNode("good")
			Expect(s.CreateNode(ctx, bad)).To(Succeed())
			Expect(s.CreateNode(ctx, good)).To(Succeed())
			Expect(s.db.WithContext(ctx).Exec("UPDATE nodes SET extra = ?, properties = ? WHERE id = ?",
				`{"n": 1e400, "nested": [{"m": -2e999}], "ok": 1}`, `{"cpus": 8}`, bad.ID).Error).To(Succeed())

			nodes, err := s.ListNodes(ctx, NodeFilter{}, Page{}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(nodes).To(HaveLen(2))
			got, err := s.GetNode(ctx, bad.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Extra).To(HaveKeyWithValue("n", json.Number("1e400")))
			Expect(got.Extra).To(HaveKeyWithValue("ok", 1.0))
			Expect(got.Properties).To(HaveKeyWithValue("cpus", 8.0))
			Expect(got.Extra["nested"]).To(Equal([]any{map[string]any{"m": json.Number("-2e999")}}))

			got.Extra["added"] = "x"
			Expect(s.SaveNode(ctx, got)).To(Succeed())
			var stored string
			Expect(s.db.WithContext(ctx).Raw("SELECT extra FROM nodes WHERE id = ?", bad.ID).Row().Scan(&stored)).To(Succeed())
			Expect(stored).To(ContainSubstring(`"n":1e400`))
			Expect(stored).To(ContainSubstring(`"m":-2e999`))
			Expect(s.DestroyNode(ctx, bad.UUID)).To(Succeed())
		})
	})

	Describe("text longer than its column", func() {
		It("keeps the head of a last_error, cut on a character boundary", func(ctx SpecContext) {
			s := store()
			n := newNode("")
			Expect(s.CreateNode(ctx, n)).To(Succeed())
			long := strings.Repeat("e", model.MaxText-1) + "é" + strings.Repeat("x", 100)
			n.LastError = &long
			Expect(s.SaveNode(ctx, n)).To(Succeed())
			got, err := s.GetNode(ctx, n.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(*got.LastError).To(Equal(strings.Repeat("e", model.MaxText-1)))
		})
	})
}
