package db

import (
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/filter"
)

func chassisSpecs(store func() *Store) {
	Describe("chassis", func() {
		It("creates, reads, saves and destroys a chassis", func(ctx SpecContext) {
			s := store()
			c := &model.Chassis{Description: ptr("rack 12"), Extra: model.JSONObject{"row": "b"}}
			Expect(s.CreateChassis(ctx, c)).To(Succeed())
			Expect(c.ID).NotTo(BeZero())
			Expect(c.UUID).NotTo(BeEmpty())

			got, err := s.GetChassis(ctx, c.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(*got.Description).To(Equal("rack 12"))
			Expect(got.Extra).To(Equal(model.JSONObject{"row": "b"}))
			Expect(got.CreatedAt).To(Equal(c.CreatedAt))
			Expect(got.UpdatedAt).To(BeNil())

			got.Description = nil
			got.Extra = nil
			Expect(s.SaveChassis(ctx, got)).To(Succeed())
			saved, err := s.GetChassis(ctx, c.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(saved.Description).To(BeNil())
			Expect(saved.Extra).To(Equal(model.JSONObject{}))
			Expect(saved.UpdatedAt).NotTo(BeNil())

			Expect(s.DestroyChassis(ctx, c.UUID)).To(Succeed())
			missing := fmt.Sprintf("Chassis %s could not be found.", c.UUID)
			_, err = s.GetChassis(ctx, c.UUID)
			expectErr(err, errs.KindNotFound, missing, http.StatusNotFound)
			expectErr(s.DestroyChassis(ctx, c.UUID), errs.KindNotFound, missing, http.StatusNotFound)
			expectErr(s.SaveChassis(ctx, saved), errs.KindNotFound, missing, http.StatusNotFound)
		})

		It("maps a duplicate uuid to 409", func(ctx SpecContext) {
			c := &model.Chassis{}
			Expect(store().CreateChassis(ctx, c)).To(Succeed())
			expectErr(store().CreateChassis(ctx, &model.Chassis{UUID: c.UUID}), errs.KindAlreadyExists,
				fmt.Sprintf("A chassis with UUID %s already exists.", c.UUID), http.StatusConflict)
			Expect(countRows(ctx, store(), "chassis")).To(Equal(int64(1)))
		})

		It("refuses to destroy a chassis that still holds nodes", func(ctx SpecContext) {
			s := store()
			c := &model.Chassis{}
			Expect(s.CreateChassis(ctx, c)).To(Succeed())
			n := newNode("in-rack")
			n.ChassisUUID = &c.UUID
			Expect(s.CreateNode(ctx, n)).To(Succeed())

			expectErr(s.DestroyChassis(ctx, c.UUID), errs.KindInvalid,
				fmt.Sprintf("Cannot complete the requested action because chassis %s contains nodes.", c.UUID), http.StatusBadRequest)
			Expect(countRows(ctx, s, "chassis")).To(Equal(int64(1)))

			got, err := s.ListNodes(ctx, NodeFilter{Match: []filter.Condition{{Column: "chassis_uuid", Value: c.UUID}}}, Page{}, []string{"uuid"})
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(HaveLen(1))

			Expect(s.DestroyNode(ctx, n.UUID)).To(Succeed())
			Expect(s.DestroyChassis(ctx, c.UUID)).To(Succeed())
		})

		It("pages chassis by description and rejects bad sort keys and markers", func(ctx SpecContext) {
			s := store()
			var made []*model.Chassis
			for i := range 5 {
				c := &model.Chassis{Description: ptr(fmt.Sprintf("c%d", 4-i))}
				Expect(s.CreateChassis(ctx, c)).To(Succeed())
				made = append(made, c)
			}
			var seen []string
			marker := ""
			for range 4 {
				page, err := s.ListChassis(ctx, Page{Limit: 2, Marker: marker, SortKey: "description", SortDir: "desc"}, []string{"description"})
				Expect(err).NotTo(HaveOccurred())
				for _, c := range page {
					seen = append(seen, *c.Description)
					Expect(c.Extra).To(BeNil(), "extra was not selected")
				}
				if len(page) < 2 {
					break
				}
				marker = page[len(page)-1].UUID
			}
			Expect(seen).To(Equal([]string{"c4", "c3", "c2", "c1", "c0"}))

			all, err := s.ListChassis(ctx, Page{}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(all).To(HaveLen(5))
			Expect(all[0].UUID).To(Equal(made[0].UUID))

			_, err = s.ListChassis(ctx, Page{SortKey: "extra"}, nil)
			expectErr(err, errs.KindInvalidParameterValue, "The sort_key value extra is an invalid field for sorting", http.StatusBadRequest)
			_, err = s.ListChassis(ctx, Page{Marker: "nope"}, nil)
			expectErr(err, errs.KindNotFound, "Chassis nope could not be found.", http.StatusNotFound)
			_, err = s.ListChassis(ctx, Page{}, []string{"nodes"})
			expectErr(err, errs.KindInvalidParameterValue, `Field(s) "nodes" are not valid`, http.StatusBadRequest)
		})
	})
}
