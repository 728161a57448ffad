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

func portgroupSpecs(backend string, store func() *Store) {
	Describe("portgroups", func() {
		var n1, n2 *model.Node
		BeforeEach(func(ctx SpecContext) {
			n1, n2 = newNode("pg1"), newNode("pg2")
			Expect(store().CreateNode(ctx, n1)).To(Succeed())
			Expect(store().CreateNode(ctx, n2)).To(Succeed())
		})

		It("creates, reads, saves and destroys a port group", func(ctx SpecContext) {
			s := store()
			pg := &model.Portgroup{Name: ptr("bond0"), Address: ptr("52:54:00:aa:00:01"), NodeID: n1.ID,
				StandalonePortsSupported: false, Mode: ptr("802.3ad"), Properties: model.JSONObject{"miimon": "100"}}
			Expect(s.CreatePortgroup(ctx, pg)).To(Succeed())
			Expect(pg.ID).NotTo(BeZero())

			got, err := s.GetPortgroup(ctx, pg.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.NodeUUID).To(Equal(n1.UUID))
			Expect(got.StandalonePortsSupported).To(BeFalse(), "an explicit false is not replaced by the column default")
			Expect(*got.Mode).To(Equal("802.3ad"))
			Expect(got.Properties).To(Equal(model.JSONObject{"miimon": "100"}))
			Expect(got.Extra).To(Equal(model.JSONObject{}))
			byName, err := s.GetPortgroupByName(ctx, "bond0")
			Expect(err).NotTo(HaveOccurred())
			Expect(byName.UUID).To(Equal(pg.UUID))

			got.NodeID = n2.ID
			got.Address = nil
			got.StandalonePortsSupported = true
			Expect(s.SavePortgroup(ctx, got)).To(Succeed())
			Expect(got.NodeUUID).To(Equal(n2.UUID))
			moved, err := s.GetPortgroup(ctx, pg.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(moved.NodeUUID).To(Equal(n2.UUID))
			Expect(moved.Address).To(BeNil())
			Expect(moved.StandalonePortsSupported).To(BeTrue())
			Expect(moved.UpdatedAt).NotTo(BeNil())

			Expect(s.DestroyPortgroup(ctx, pg.UUID)).To(Succeed())
			missing := fmt.Sprintf("Portgroup %s could not be found.", pg.UUID)
			_, err = s.GetPortgroup(ctx, pg.UUID)
			expectErr(err, errs.KindNotFound, missing, http.StatusNotFound)
			expectErr(s.DestroyPortgroup(ctx, pg.UUID), errs.KindNotFound, missing, http.StatusNotFound)
			expectErr(s.SavePortgroup(ctx, moved), errs.KindNotFound, missing, http.StatusNotFound)
			_, err = s.GetPortgroupByName(ctx, "bond0")
			expectErr(err, errs.KindNotFound, "Portgroup bond0 could not be found.", http.StatusNotFound)
		})

		It("maps duplicate uuid, name and address to 409, writing nothing", func(ctx SpecContext) {
			s := store()
			pg := &model.Portgroup{Name: ptr("bond0"), Address: ptr("52:54:00:aa:00:01"), NodeID: n1.ID}
			Expect(s.CreatePortgroup(ctx, pg)).To(Succeed())
			expectErr(s.CreatePortgroup(ctx, &model.Portgroup{Name: ptr("bond0"), NodeID: n2.ID}),
				errs.KindDuplicateName, "A portgroup with name bond0 already exists.", http.StatusConflict)
			expectErr(s.CreatePortgroup(ctx, &model.Portgroup{Address: ptr("52:54:00:aa:00:01"), NodeID: n2.ID}),
				errs.KindAlreadyExists, "A portgroup with MAC address 52:54:00:aa:00:01 already exists.", http.StatusConflict)
			expectErr(s.CreatePortgroup(ctx, &model.Portgroup{UUID: pg.UUID, NodeID: n2.ID}),
				errs.KindAlreadyExists, fmt.Sprintf("A portgroup with UUID %s already exists.", pg.UUID), http.StatusConflict)
			Expect(countRows(ctx, s, "portgroups")).To(Equal(int64(1)))

			// Unnamed, address-less groups do not collide with each other.
			Expect(s.CreatePortgroup(ctx, &model.Portgroup{NodeID: n2.ID})).To(Succeed())
			other := &model.Portgroup{NodeID: n2.ID}
			Expect(s.CreatePortgroup(ctx, other)).To(Succeed())
			other.Name = ptr("bond0")
			other.Mode = ptr("changed")
			expectErr(s.SavePortgroup(ctx, other), errs.KindDuplicateName, "A portgroup with name bond0 already exists.", http.StatusConflict)
			stored, err := s.GetPortgroup(ctx, other.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.Name).To(BeNil())
			Expect(stored.Mode).To(BeNil())

			err = s.CreatePortgroup(ctx, &model.Portgroup{NodeID: 987654})
			Expect(errs.Is(err, errs.KindNodeNotFound)).To(BeTrue(), "%v", err)
		})

		It("links member ports and refuses to destroy a group that has any", func(ctx SpecContext) {
			s := store()
			pg := &model.Portgroup{NodeID: n1.ID}
			Expect(s.CreatePortgroup(ctx, pg)).To(Succeed())
			member := &model.Port{Address: "52:54:00:bb:00:01", NodeID: n1.ID, PortgroupID: &pg.ID}
			loose := &model.Port{Address: "52:54:00:bb:00:02", NodeID: n1.ID}
			Expect(s.CreatePort(ctx, member)).To(Succeed())
			Expect(s.CreatePort(ctx, loose)).To(Succeed())

			got, err := s.GetPort(ctx, member.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.PortgroupUUID).To(HaveValue(Equal(pg.UUID)))
			Expect(*got.PortgroupID).To(Equal(pg.ID))
			got, err = s.GetPort(ctx, loose.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.PortgroupUUID).To(BeNil())

			statements[backend].reset()
			members, err := s.ListPorts(ctx, PortFilter{PortgroupID: &pg.ID}, Page{}, []string{"portgroup_uuid"})
			Expect(err).NotTo(HaveOccurred())
			Expect(members).To(HaveLen(1))
			Expect(members[0].UUID).To(Equal(member.UUID))
			Expect(members[0].PortgroupUUID).To(HaveValue(Equal(pg.UUID)))
			Expect(statements[backend].matching("ports")).To(HaveLen(1))

			expectErr(s.DestroyPortgroup(ctx, pg.UUID), errs.KindInvalidState,
				fmt.Sprintf("Cannot complete the requested action because portgroup %s contains ports.", pg.UUID), http.StatusConflict)
			Expect(countRows(ctx, s, "portgroups")).To(Equal(int64(1)))

			got, err = s.GetPort(ctx, member.UUID)
			Expect(err).NotTo(HaveOccurred())
			got.PortgroupID = nil
			Expect(s.SavePort(ctx, got)).To(Succeed())
			Expect(s.DestroyPortgroup(ctx, pg.UUID)).To(Succeed())
		})

		It("goes with its node", func(ctx SpecContext) {
			s := store()
			pg := &model.Portgroup{NodeID: n1.ID}
			Expect(s.CreatePortgroup(ctx, pg)).To(Succeed())
			Expect(s.CreatePort(ctx, &model.Port{Address: "52:54:00:bb:00:03", NodeID: n1.ID, PortgroupID: &pg.ID})).To(Succeed())
			Expect(s.DestroyNode(ctx, n1.UUID)).To(Succeed())
			Expect(countRows(ctx, s, "portgroups")).To(BeZero())
			Expect(countRows(ctx, s, "ports")).To(BeZero())
		})

		It("lists by node and address, pages, and rejects JSON sort keys", func(ctx SpecContext) {
			s := store()
			var made []*model.Portgroup
			for i := range 5 {
				owner := n1
				if i%2 == 1 {
					owner = n2
				}
				pg := &model.Portgroup{Name: ptr(fmt.Sprintf("bond%d", 4-i)), Address: ptr(fmt.Sprintf("52:54:00:cc:00:%02x", i)), NodeID: owner.ID}
				Expect(s.CreatePortgroup(ctx, pg)).To(Succeed())
				made = append(made, pg)
			}
			got, err := s.ListPortgroups(ctx, PortgroupFilter{NodeID: &n2.ID}, Page{}, []string{"name"})
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(HaveLen(2))
			for _, pg := range got {
				Expect(pg.NodeUUID).To(Equal(n2.UUID))
			}
			got, err = s.ListPortgroups(ctx, PortgroupFilter{Match: []filter.Condition{{Column: "address", Value: *made[3].Address}}}, Page{}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(HaveLen(1))
			Expect(got[0].UUID).To(Equal(made[3].UUID))

			var seen []string
			marker := ""
			for range 4 {
				page, err := s.ListPortgroups(ctx, PortgroupFilter{}, Page{Limit: 2, Marker: marker, SortKey: "name"}, []string{"name"})
				Expect(err).NotTo(HaveOccurred())
				for _, pg := range page {
					seen = append(seen, *pg.Name)
				}
				if len(page) < 2 {
					break
				}
				marker = page[len(page)-1].UUID
			}
			Expect(seen).To(Equal([]string{"bond0", "bond1", "bond2", "bond3", "bond4"}))

			for _, key := range []string{"extra", "internal_info", "properties"} {
				_, err = s.ListPortgroups(ctx, PortgroupFilter{}, Page{SortKey: key}, nil)
				expectErr(err, errs.KindInvalidParameterValue, fmt.Sprintf("The sort_key value %s is an invalid field for sorting", key), http.StatusBadRequest)
			}
			_, err = s.ListPortgroups(ctx, PortgroupFilter{}, Page{Marker: "nope"}, nil)
			expectErr(err, errs.KindNotFound, "Portgroup nope could not be found.", http.StatusNotFound)
		})
	})
}
