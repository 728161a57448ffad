package db

import (
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/filter"
)

func portSpecs(backend string, store func() *Store) {
	Describe("ports", func() {
		var n1, n2 *model.Node
		BeforeEach(func(ctx SpecContext) {
			n1, n2 = newNode("p1"), newNode("p2")
			Expect(store().CreateNode(ctx, n1)).To(Succeed())
			Expect(store().CreateNode(ctx, n2)).To(Succeed())
		})

		It("creates, reads, saves and destroys a port", func(ctx SpecContext) {
			s := store()
			p := &model.Port{
				Address:             "52:54:00:12:34:56",
				NodeID:              n1.ID,
				LocalLinkConnection: model.JSONObject{"switch_id": "0a:1b:2c:3d:4e:5f", "port_id": "Eth1/1"},
				PXEEnabled:          false,
				PhysicalNetwork:     ptr("physnet1"),
			}
			Expect(s.CreatePort(ctx, p)).To(Succeed())
			Expect(p.ID).NotTo(BeZero())
			Expect(p.UUID).NotTo(BeEmpty())

			got, err := s.GetPort(ctx, p.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.NodeUUID).To(Equal(n1.UUID))
			Expect(got.NodeID).To(Equal(n1.ID))
			Expect(got.PXEEnabled).To(BeFalse(), "an explicit false is not replaced by the column default")
			Expect(got.LocalLinkConnection).To(Equal(p.LocalLinkConnection))
			Expect(got.Extra).To(BeEmpty())
			Expect(got.CreatedAt).To(Equal(p.CreatedAt))

			byMAC, err := s.GetPortByAddress(ctx, "52:54:00:12:34:56")
			Expect(err).NotTo(HaveOccurred())
			Expect(byMAC.UUID).To(Equal(p.UUID))

			got.NodeID = n2.ID
			got.PXEEnabled = true
			got.Extra = model.JSONObject{"k": "v"}
			Expect(s.SavePort(ctx, got)).To(Succeed())
			moved, err := s.GetPort(ctx, p.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(moved.NodeUUID).To(Equal(n2.UUID))
			Expect(moved.PXEEnabled).To(BeTrue())
			Expect(moved.Extra).To(Equal(model.JSONObject{"k": "v"}))
			Expect(moved.UpdatedAt).NotTo(BeNil())
			Expect(moved.CreatedAt).To(Equal(p.CreatedAt))

			Expect(s.DestroyPort(ctx, p.UUID)).To(Succeed())
			_, err = s.GetPort(ctx, p.UUID)
			expectErr(err, errs.KindPortNotFound, fmt.Sprintf("Port %s could not be found.", p.UUID), http.StatusNotFound)
			expectErr(s.DestroyPort(ctx, p.UUID), errs.KindPortNotFound, fmt.Sprintf("Port %s could not be found.", p.UUID), http.StatusNotFound)
			_, err = s.GetPortByAddress(ctx, "52:54:00:ff:ff:ff")
			expectErr(err, errs.KindPortNotFound, "Port 52:54:00:ff:ff:ff could not be found.", http.StatusNotFound)
			expectErr(s.SavePort(ctx, got), errs.KindPortNotFound, fmt.Sprintf("Port %s could not be found.", p.UUID), http.StatusNotFound)
		})

		It("maps duplicate uuid and address to 409, writing nothing", func(ctx SpecContext) {
			s := store()
			p := &model.Port{Address: "52:54:00:00:00:01", NodeID: n1.ID}
			Expect(s.CreatePort(ctx, p)).To(Succeed())

			dupMAC := &model.Port{Address: "52:54:00:00:00:01", NodeID: n2.ID}
			expectErr(s.CreatePort(ctx, dupMAC), errs.KindAlreadyExists, "A port with MAC address 52:54:00:00:00:01 already exists.", http.StatusConflict)
			Expect(dupMAC.ID).To(BeZero())

			dupUUID := &model.Port{UUID: p.UUID, Address: "52:54:00:00:00:02", NodeID: n2.ID}
			expectErr(s.CreatePort(ctx, dupUUID), errs.KindAlreadyExists, fmt.Sprintf("A port with UUID %s already exists.", p.UUID), http.StatusConflict)
			Expect(countRows(ctx, s, "ports")).To(Equal(int64(1)))

			other := &model.Port{Address: "52:54:00:00:00:03", NodeID: n2.ID}
			Expect(s.CreatePort(ctx, other)).To(Succeed())
			other.Address = "52:54:00:00:00:01"
			other.PhysicalNetwork = ptr("changed")
			expectErr(s.SavePort(ctx, other), errs.KindAlreadyExists, "A port with MAC address 52:54:00:00:00:01 already exists.", http.StatusConflict)
			stored, err := s.GetPort(ctx, other.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.Address).To(Equal("52:54:00:00:00:03"))
			Expect(stored.PhysicalNetwork).To(BeNil())
		})

		It("refuses a port on a node that does not exist", func(ctx SpecContext) {
			err := store().CreatePort(ctx, &model.Port{Address: "52:54:00:00:00:09", NodeID: 987654})
			Expect(errs.Is(err, errs.KindNodeNotFound)).To(BeTrue(), "%v", err)
			Expect(countRows(ctx, store(), "ports")).To(BeZero())
		})

		Describe("ListPorts", func() {
			var ports []*model.Port
			BeforeEach(func(ctx SpecContext) {
				ports = nil
				for i := range 5 {
					owner := n1
					if i%2 == 1 {
						owner = n2
					}
					p := &model.Port{Address: fmt.Sprintf("52:54:00:00:01:%02x", 5-i), NodeID: owner.ID, Extra: model.JSONObject{"i": float64(i)}}
					Expect(store().CreatePort(ctx, p)).To(Succeed())
					ports = append(ports, p)
				}
				statements[backend].reset()
			})

			It("fills node_uuid with one query, however many ports", func(ctx SpecContext) {
				got, err := store().ListPorts(ctx, PortFilter{}, Page{}, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(HaveLen(5))
				for i, p := range got {
					Expect(p.UUID).To(Equal(ports[i].UUID))
					Expect(p.NodeUUID).To(Equal(map[bool]string{true: n1.UUID, false: n2.UUID}[i%2 == 0]))
					Expect(p.Extra).To(Equal(model.JSONObject{"i": float64(i)}))
				}
				Expect(statements[backend].matching("ports")).To(HaveLen(1))
			})

			It("selects only the requested columns", func(ctx SpecContext) {
				got, err := store().ListPorts(ctx, PortFilter{}, Page{}, []string{"address", "node_uuid"})
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(HaveLen(5))
				Expect(got[0].Address).To(Equal(ports[0].Address))
				Expect(got[0].NodeUUID).To(Equal(n1.UUID))
				Expect(got[0].Extra).To(BeNil())
				sqls := statements[backend].matching("ports")
				Expect(sqls).To(HaveLen(1))
				selectList := strings.ToLower(sqls[0][:strings.Index(strings.ToLower(sqls[0]), " from ")])
				Expect(strings.Count(selectList, ",")).To(Equal(4), selectList) // id, uuid, address, node uuid, portgroup uuid
				Expect(selectList).NotTo(ContainSubstring("extra"))

				_, err = store().ListPorts(ctx, PortFilter{}, Page{}, []string{"portgroup_uuid", "bogus"})
				expectErr(err, errs.KindInvalidParameterValue, `Field(s) "bogus" are not valid`, http.StatusBadRequest)
			})

			It("filters by node id, node uuid and address", func(ctx SpecContext) {
				got, err := store().ListPorts(ctx, PortFilter{NodeID: &n2.ID}, Page{}, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(HaveLen(2))
				got, err = store().ListPorts(ctx, PortFilter{Match: []filter.Condition{{Column: "node_uuid", Value: n1.UUID}}}, Page{}, []string{"address"})
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(HaveLen(3))
				for _, p := range got {
					Expect(p.NodeUUID).To(Equal(n1.UUID))
				}
				got, err = store().ListPorts(ctx, PortFilter{Match: []filter.Condition{{Column: "address", Value: ports[3].Address}}}, Page{}, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(HaveLen(1))
				Expect(got[0].UUID).To(Equal(ports[3].UUID))
			})

			It("pages by address with a marker, and rejects an unknown one", func(ctx SpecContext) {
				var seen []string
				marker := ""
				for range 4 {
					page, err := store().ListPorts(ctx, PortFilter{}, Page{Limit: 2, Marker: marker, SortKey: "address"}, []string{"address"})
					Expect(err).NotTo(HaveOccurred())
					for _, p := range page {
						seen = append(seen, p.Address)
					}
					if len(page) < 2 {
						break
					}
					marker = page[len(page)-1].UUID
				}
				Expect(seen).To(Equal([]string{"52:54:00:00:01:01", "52:54:00:00:01:02", "52:54:00:00:01:03", "52:54:00:00:01:04", "52:54:00:00:01:05"}))

				_, err := store().ListPorts(ctx, PortFilter{}, Page{Marker: "nope"}, nil)
				expectErr(err, errs.KindPortNotFound, "Port nope could not be found.", http.StatusNotFound)
				_, err = store().ListPorts(ctx, PortFilter{}, Page{SortKey: "local_link_connection"}, nil)
				expectErr(err, errs.KindInvalidParameterValue, "The sort_key value local_link_connection is an invalid field for sorting", http.StatusBadRequest)
			})
		})
	})
}
