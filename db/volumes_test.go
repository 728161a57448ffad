package db

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

func connectorUUIDs(cs []model.VolumeConnector) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.UUID
	}
	return out
}

func targetUUIDs(ts []model.VolumeTarget) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UUID
	}
	return out
}

// selectList is the lower-cased column list of the one recorded query on
// table.
func selectList(backend, table string) string {
	GinkgoHelper()
	sqls := statements[backend].matching(table)
	Expect(sqls).To(HaveLen(1), "one query, node uuid joined in")
	q := strings.ToLower(sqls[0])
	return q[:strings.Index(q, " from ")]
}

func volumeSpecs(backend string, store func() *Store) {
	Describe("volume connectors", func() {
		var n1, n2 *model.Node
		BeforeEach(func(ctx SpecContext) {
			n1, n2 = newNode("v1"), newNode("v2")
			Expect(store().CreateNode(ctx, n1)).To(Succeed())
			Expect(store().CreateNode(ctx, n2)).To(Succeed())
		})

		It("creates, reads, saves and destroys a connector", func(ctx SpecContext) {
			s := store()
			c := &model.VolumeConnector{NodeID: n1.ID, Type: "iqn", ConnectorID: "iqn.2004-06.example.net:node-07",
				Extra: model.JSONObject{"fabric": "A"}}
			Expect(s.CreateVolumeConnector(ctx, c)).To(Succeed())
			Expect(c.ID).NotTo(BeZero())
			Expect(c.UUID).To(MatchRegexp(`^[0-9a-f-]{36}$`))
			Expect(c.UpdatedAt).To(BeNil())

			got, err := s.GetVolumeConnector(ctx, c.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.NodeUUID).To(Equal(n1.UUID))
			Expect(got.NodeID).To(Equal(n1.ID))
			Expect(got.Type).To(Equal("iqn"))
			Expect(got.ConnectorID).To(Equal("iqn.2004-06.example.net:node-07"))
			Expect(got.Extra).To(Equal(model.JSONObject{"fabric": "A"}))
			Expect(got.CreatedAt).To(Equal(c.CreatedAt))
			Expect(got.UpdatedAt).To(BeNil())

			got.NodeID = n2.ID
			got.ConnectorID = "iqn.2004-06.example.net:node-08"
			got.Extra = nil
			Expect(s.SaveVolumeConnector(ctx, got)).To(Succeed())
			Expect(got.NodeUUID).To(Equal(n2.UUID), "Save refreshes the owner's uuid")
			moved, err := s.GetVolumeConnector(ctx, c.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(moved.NodeUUID).To(Equal(n2.UUID))
			Expect(moved.ConnectorID).To(Equal("iqn.2004-06.example.net:node-08"))
			Expect(moved.Extra).NotTo(BeNil())
			Expect(moved.Extra).To(BeEmpty())
			Expect(moved.UpdatedAt).To(Equal(got.UpdatedAt))
			Expect(moved.CreatedAt).To(Equal(c.CreatedAt))

			Expect(s.DestroyVolumeConnector(ctx, c.UUID)).To(Succeed())
			msg := fmt.Sprintf("Volume connector %s could not be found.", c.UUID)
			_, err = s.GetVolumeConnector(ctx, c.UUID)
			expectErr(err, errs.KindVolumeConnectorNotFound, msg, http.StatusNotFound)
			expectErr(s.DestroyVolumeConnector(ctx, c.UUID), errs.KindVolumeConnectorNotFound, msg, http.StatusNotFound)
			expectErr(s.SaveVolumeConnector(ctx, got), errs.KindVolumeConnectorNotFound, msg, http.StatusNotFound)
		})

		It("maps duplicate uuid and (type, connector_id) to 409 on create and save, writing nothing", func(ctx SpecContext) {
			s := store()
			c := &model.VolumeConnector{NodeID: n1.ID, Type: "wwpn", ConnectorID: "21:00:00:1b:21:aa:bb:cc"}
			Expect(s.CreateVolumeConnector(ctx, c)).To(Succeed())

			// Unique across nodes, not per node.
			dup := &model.VolumeConnector{NodeID: n2.ID, Type: "wwpn", ConnectorID: "21:00:00:1b:21:aa:bb:cc"}
			expectErr(s.CreateVolumeConnector(ctx, dup), errs.KindAlreadyExists,
				"A volume connector with type wwpn and connector ID 21:00:00:1b:21:aa:bb:cc already exists.", http.StatusConflict)
			Expect(dup.ID).To(BeZero())

			dupUUID := &model.VolumeConnector{UUID: c.UUID, NodeID: n2.ID, Type: "iqn", ConnectorID: "iqn.x"}
			expectErr(s.CreateVolumeConnector(ctx, dupUUID), errs.KindAlreadyExists,
				fmt.Sprintf("A volume connector with UUID %s already exists.", c.UUID), http.StatusConflict)
			Expect(countRows(ctx, s, "volume_connectors")).To(Equal(int64(1)))

			// The same connector_id under another type is another initiator.
			other := &model.VolumeConnector{NodeID: n2.ID, Type: "wwnn", ConnectorID: "21:00:00:1b:21:aa:bb:cc"}
			Expect(s.CreateVolumeConnector(ctx, other)).To(Succeed())
			other.Type = "wwpn"
			other.Extra = model.JSONObject{"changed": true}
			expectErr(s.SaveVolumeConnector(ctx, other), errs.KindAlreadyExists,
				"A volume connector with type wwpn and connector ID 21:00:00:1b:21:aa:bb:cc already exists.", http.StatusConflict)
			stored, err := s.GetVolumeConnector(ctx, other.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.Type).To(Equal("wwnn"))
			Expect(stored.Extra).To(BeEmpty())
			Expect(stored.UpdatedAt).To(BeNil())
		})

		It("refuses a connector on a node that does not exist, on create and on save", func(ctx SpecContext) {
			s := store()
			err := s.CreateVolumeConnector(ctx, &model.VolumeConnector{NodeID: 987654, NodeUUID: "5f1b0c8e-0000-4000-8000-000000000001", Type: "iqn", ConnectorID: "iqn.x"})
			expectErr(err, errs.KindNodeNotFound, "Node 5f1b0c8e-0000-4000-8000-000000000001 could not be found.", http.StatusNotFound)
			err = s.CreateVolumeConnector(ctx, &model.VolumeConnector{NodeID: 987654, Type: "iqn", ConnectorID: "iqn.x"})
			expectErr(err, errs.KindNodeNotFound, "Node 987654 could not be found.", http.StatusNotFound)
			Expect(countRows(ctx, s, "volume_connectors")).To(BeZero())

			c := &model.VolumeConnector{NodeID: n1.ID, Type: "iqn", ConnectorID: "iqn.y"}
			Expect(s.CreateVolumeConnector(ctx, c)).To(Succeed())
			c.NodeID = 987654
			Expect(errs.Is(s.SaveVolumeConnector(ctx, c), errs.KindNodeNotFound)).To(BeTrue())
			stored, err := s.GetVolumeConnector(ctx, c.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.NodeUUID).To(Equal(n1.UUID))
		})

		It("lets exactly one of 50 concurrent creators of the same connector win", func(ctx SpecContext) {
			s := store()
			const n = 50
			results := make([]error, n)
			attempts := make([]*model.VolumeConnector, n)
			var wg sync.WaitGroup
			for i := range n {
				owner := n1
				if i%2 == 1 {
					owner = n2
				}
				attempts[i] = &model.VolumeConnector{NodeID: owner.ID, Type: "iqn", ConnectorID: "iqn.2004-06.example.net:shared",
					Extra: model.JSONObject{"attempt": float64(i)}}
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = s.CreateVolumeConnector(ctx, attempts[i])
				}()
			}
			wg.Wait()
			winner := -1
			for i, err := range results {
				if err == nil {
					Expect(winner).To(Equal(-1), "a second creator succeeded")
					winner = i
					continue
				}
				expectErr(err, errs.KindAlreadyExists,
					"A volume connector with type iqn and connector ID iqn.2004-06.example.net:shared already exists.", http.StatusConflict)
			}
			Expect(winner).NotTo(Equal(-1))

			all, err := s.ListVolumeConnectors(ctx, VolumeFilter{}, Page{}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(all).To(HaveLen(1))
			w := attempts[winner]
			Expect(all[0].UUID).To(Equal(w.UUID))
			Expect(all[0].ID).To(Equal(w.ID))
			Expect(all[0].NodeID).To(Equal(w.NodeID))
			Expect(all[0].Extra).To(Equal(model.JSONObject{"attempt": float64(winner)}), "the stored row is the winner's, whole")
		})

		Describe("ListVolumeConnectors", func() {
			var made []*model.VolumeConnector
			BeforeEach(func(ctx SpecContext) {
				made = nil
				types := []string{"wwpn", "iqn", "wwnn", "iqn", "ip"}
				for i := range 5 {
					owner := n1
					if i%2 == 1 {
						owner = n2
					}
					c := &model.VolumeConnector{NodeID: owner.ID, Type: types[i], ConnectorID: fmt.Sprintf("id-%d", 5-i),
						Extra: model.JSONObject{"i": float64(i)}}
					Expect(store().CreateVolumeConnector(ctx, c)).To(Succeed())
					made = append(made, c)
				}
				statements[backend].reset()
			})

			It("fills node_uuid in the same query, in creation order by default", func(ctx SpecContext) {
				got, err := store().ListVolumeConnectors(ctx, VolumeFilter{}, Page{}, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(HaveLen(5))
				for i, c := range got {
					Expect(c.UUID).To(Equal(made[i].UUID))
					Expect(c.NodeUUID).To(Equal(map[bool]string{true: n1.UUID, false: n2.UUID}[i%2 == 0]))
					Expect(c.Extra).To(Equal(model.JSONObject{"i": float64(i)}))
				}
				Expect(statements[backend].matching("volume_connectors")).To(HaveLen(1))
			})

			It("filters by node", func(ctx SpecContext) {
				got, err := store().ListVolumeConnectors(ctx, VolumeFilter{NodeID: &n2.ID}, Page{}, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(connectorUUIDs(got)).To(Equal([]string{made[1].UUID, made[3].UUID}))
				none := int64(424242)
				got, err = store().ListVolumeConnectors(ctx, VolumeFilter{NodeID: &none}, Page{}, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(got).NotTo(BeNil())
				Expect(got).To(BeEmpty())
			})

			It("selects only the requested columns", func(ctx SpecContext) {
				got, err := store().ListVolumeConnectors(ctx, VolumeFilter{}, Page{}, []string{"type", "node_uuid"})
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(HaveLen(5))
				Expect(got[0].Type).To(Equal("wwpn"))
				Expect(got[0].NodeUUID).To(Equal(n1.UUID))
				Expect(got[0].ConnectorID).To(BeEmpty())
				Expect(got[0].Extra).To(BeNil())
				list := selectList(backend, "volume_connectors")
				Expect(strings.Count(list, ",")).To(Equal(3), list) // id, uuid, type, node uuid
				Expect(list).NotTo(ContainSubstring("extra"))
				Expect(list).NotTo(ContainSubstring("connector_id"))

				_, err = store().ListVolumeConnectors(ctx, VolumeFilter{}, Page{}, []string{"type", "links"})
				expectErr(err, errs.KindInvalidParameterValue, `Field(s) "links" are not valid`, http.StatusBadRequest)
			})

			DescribeTable("pages through every connector exactly once, in order",
				func(ctx SpecContext, key, dir string, want func() []string) {
					var seen []string
					marker := ""
					for pages := 0; pages < 10; pages++ {
						page, err := store().ListVolumeConnectors(ctx, VolumeFilter{}, Page{Limit: 2, Marker: marker, SortKey: key, SortDir: dir}, []string{"type"})
						Expect(err).NotTo(HaveOccurred())
						seen = append(seen, connectorUUIDs(page)...)
						if len(page) < 2 {
							break
						}
						marker = page[len(page)-1].UUID
					}
					Expect(seen).To(Equal(want()))
				},
				Entry("by id", "", "", func() []string { return connectorUUIDs(deref(made)) }),
				Entry("by type with ties", "type", "asc", func() []string {
					return []string{made[4].UUID, made[1].UUID, made[3].UUID, made[2].UUID, made[0].UUID}
				}),
				Entry("by connector_id, desc", "connector_id", "desc", func() []string {
					return []string{made[0].UUID, made[1].UUID, made[2].UUID, made[3].UUID, made[4].UUID}
				}),
			)

			It("rejects an unknown marker and forbidden or unknown sort keys", func(ctx SpecContext) {
				_, err := store().ListVolumeConnectors(ctx, VolumeFilter{}, Page{Marker: "0b0e61a4-2a4e-4c3b-9b1e-0c1d2e3f4a5b"}, nil)
				expectErr(err, errs.KindVolumeConnectorNotFound, "Volume connector 0b0e61a4-2a4e-4c3b-9b1e-0c1d2e3f4a5b could not be found.", http.StatusNotFound)
				_, err = store().ListVolumeConnectors(ctx, VolumeFilter{}, Page{SortKey: "extra"}, nil)
				expectErr(err, errs.KindInvalidParameterValue, "The sort_key value extra is an invalid field for sorting", http.StatusBadRequest)
				_, err = store().ListVolumeConnectors(ctx, VolumeFilter{}, Page{SortKey: "node_uuid"}, nil)
				expectErr(err, errs.KindInvalidParameterValue, `The sort_key value "node_uuid" is an invalid field for sorting`, http.StatusBadRequest)
				for _, key := range []string{"id", "uuid", "type", "connector_id", "node_id", "created_at", "updated_at"} {
					_, err = store().ListVolumeConnectors(ctx, VolumeFilter{}, Page{SortKey: key}, nil)
					Expect(err).NotTo(HaveOccurred(), key)
				}
			})
		})
	})

	Describe("volume targets", func() {
		var n1, n2 *model.Node
		BeforeEach(func(ctx SpecContext) {
			n1, n2 = newNode("t1"), newNode("t2")
			Expect(store().CreateNode(ctx, n1)).To(Succeed())
			Expect(store().CreateNode(ctx, n2)).To(Succeed())
		})

		newTarget := func(node *model.Node, bootIndex int) *model.VolumeTarget {
			return &model.VolumeTarget{NodeID: node.ID, VolumeType: "iscsi", BootIndex: bootIndex,
				VolumeID: fmt.Sprintf("a1b2c3d4-e5f6-4711-8899-%012d", bootIndex)}
		}

		It("creates, reads, saves and destroys a target, credentials stored as given", func(ctx SpecContext) {
			s := store()
			t := newTarget(n1, 0)
			t.Properties = model.JSONObject{"target_iqn": "iqn.2010-10.org.example:vol-a1b2", "target_lun": float64(0),
				"auth_username": "node07", "auth_password": "s3cr3t"}
			Expect(s.CreateVolumeTarget(ctx, t)).To(Succeed())
			Expect(t.ID).NotTo(BeZero())

			got, err := s.GetVolumeTarget(ctx, t.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.NodeUUID).To(Equal(n1.UUID))
			Expect(got.VolumeType).To(Equal("iscsi"))
			Expect(got.BootIndex).To(Equal(0))
			Expect(got.VolumeID).To(Equal(t.VolumeID))
			Expect(got.Properties).To(Equal(t.Properties), "masking is the API's job; the store keeps the secret")
			Expect(got.Extra).NotTo(BeNil())
			Expect(got.CreatedAt).To(Equal(t.CreatedAt))

			got.NodeID = n2.ID
			got.BootIndex = 3
			got.Extra = model.JSONObject{"k": "v"}
			Expect(s.SaveVolumeTarget(ctx, got)).To(Succeed())
			Expect(got.NodeUUID).To(Equal(n2.UUID))
			moved, err := s.GetVolumeTarget(ctx, t.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(moved.NodeUUID).To(Equal(n2.UUID))
			Expect(moved.BootIndex).To(Equal(3))
			Expect(moved.Extra).To(Equal(model.JSONObject{"k": "v"}))
			Expect(moved.UpdatedAt).NotTo(BeNil())

			Expect(s.DestroyVolumeTarget(ctx, t.UUID)).To(Succeed())
			msg := fmt.Sprintf("Volume target %s could not be found.", t.UUID)
			_, err = s.GetVolumeTarget(ctx, t.UUID)
			expectErr(err, errs.KindVolumeTargetNotFound, msg, http.StatusNotFound)
			expectErr(s.DestroyVolumeTarget(ctx, t.UUID), errs.KindVolumeTargetNotFound, msg, http.StatusNotFound)
			expectErr(s.SaveVolumeTarget(ctx, got), errs.KindVolumeTargetNotFound, msg, http.StatusNotFound)
		})

		It("maps duplicate uuid and (node, boot_index) to 409 on create and save, writing nothing", func(ctx SpecContext) {
			s := store()
			t := newTarget(n1, 0)
			Expect(s.CreateVolumeTarget(ctx, t)).To(Succeed())
			expectErr(s.CreateVolumeTarget(ctx, newTarget(n1, 0)), errs.KindAlreadyExists,
				"A volume target with boot index '0' for the same node already exists.", http.StatusConflict)
			dupUUID := newTarget(n2, 5)
			dupUUID.UUID = t.UUID
			expectErr(s.CreateVolumeTarget(ctx, dupUUID), errs.KindAlreadyExists,
				fmt.Sprintf("A volume target with UUID %s already exists.", t.UUID), http.StatusConflict)
			Expect(countRows(ctx, s, "volume_targets")).To(Equal(int64(1)))

			// Boot indexes are per node; volume ids are not unique at all.
			Expect(s.CreateVolumeTarget(ctx, newTarget(n2, 0))).To(Succeed())
			second := newTarget(n1, 1)
			second.VolumeID = t.VolumeID
			Expect(s.CreateVolumeTarget(ctx, second)).To(Succeed())

			second.BootIndex = 0
			second.VolumeType = "fibre_channel"
			expectErr(s.SaveVolumeTarget(ctx, second), errs.KindAlreadyExists,
				"A volume target with boot index '0' for the same node already exists.", http.StatusConflict)
			stored, err := s.GetVolumeTarget(ctx, second.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.BootIndex).To(Equal(1))
			Expect(stored.VolumeType).To(Equal("iscsi"))
		})

		It("refuses a target on a node that does not exist", func(ctx SpecContext) {
			t := newTarget(n1, 0)
			t.NodeID = 987654
			expectErr(store().CreateVolumeTarget(ctx, t), errs.KindNodeNotFound, "Node 987654 could not be found.", http.StatusNotFound)
			Expect(countRows(ctx, store(), "volume_targets")).To(BeZero())
		})

		It("keeps boot indexes unique under concurrent saves on one node", func(ctx SpecContext) {
			s := store()
			const targets, writers = 4, 40
			var made []*model.VolumeTarget
			for i := range targets {
				t := newTarget(n1, i)
				Expect(s.CreateVolumeTarget(ctx, t)).To(Succeed())
				made = append(made, t)
			}
			// Every writer moves one target to a boot index in [0, 6):
			// some collide with a sibling's, and must fail whole.
			type write struct {
				uuid      string
				bootIndex int
				volumeID  string
				err       error
			}
			writes := make([]write, writers)
			var wg sync.WaitGroup
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					src := made[i%targets]
					t := *src
					t.BootIndex = rand.IntN(6)
					t.VolumeID = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
					writes[i] = write{uuid: t.UUID, bootIndex: t.BootIndex, volumeID: t.VolumeID, err: s.SaveVolumeTarget(ctx, &t)}
				}()
			}
			wg.Wait()

			succeeded := 0
			for _, w := range writes {
				if w.err == nil {
					succeeded++
					continue
				}
				expectErr(w.err, errs.KindAlreadyExists,
					fmt.Sprintf("A volume target with boot index '%d' for the same node already exists.", w.bootIndex), http.StatusConflict)
			}
			Expect(succeeded).To(BeNumerically(">", 0))

			stored, err := s.ListVolumeTargets(ctx, VolumeFilter{NodeID: &n1.ID}, Page{}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored).To(HaveLen(targets))
			indexes := map[int]bool{}
			for _, t := range stored {
				Expect(indexes).NotTo(HaveKey(t.BootIndex), "boot index %d twice", t.BootIndex)
				indexes[t.BootIndex] = true
				// Each row is either untouched or exactly one successful
				// write: boot index and volume id always travel together.
				var matched bool
				for _, w := range writes {
					if w.err == nil && w.uuid == t.UUID && w.volumeID == t.VolumeID {
						Expect(t.BootIndex).To(Equal(w.bootIndex))
						matched = true
					}
				}
				if !matched {
					Expect(t.UpdatedAt).To(BeNil(), "a row changed by no successful write")
				}
			}
		})

		It("DestroyVolumeTargetsOfNode removes that node's targets only, and keeps connectors", func(ctx SpecContext) {
			s := store()
			for i := range 3 {
				Expect(s.CreateVolumeTarget(ctx, newTarget(n1, i))).To(Succeed())
			}
			kept := newTarget(n2, 0)
			Expect(s.CreateVolumeTarget(ctx, kept)).To(Succeed())
			Expect(s.CreateVolumeConnector(ctx, &model.VolumeConnector{NodeID: n1.ID, Type: "iqn", ConnectorID: "iqn.keep"})).To(Succeed())

			Expect(s.DestroyVolumeTargetsOfNode(ctx, n1.ID)).To(Succeed())
			Expect(s.DestroyVolumeTargetsOfNode(ctx, n1.ID)).To(Succeed(), "nothing left to remove is fine")
			left, err := s.ListVolumeTargets(ctx, VolumeFilter{}, Page{}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(targetUUIDs(left)).To(Equal([]string{kept.UUID}))
			Expect(countRows(ctx, s, "volume_connectors")).To(Equal(int64(1)))
		})

		Describe("ListVolumeTargets", func() {
			var made []*model.VolumeTarget
			BeforeEach(func(ctx SpecContext) {
				made = nil
				for i, bi := range []int{2, 0, 1, 1, 0} {
					owner := n1
					if i >= 3 {
						owner = n2
					}
					t := newTarget(owner, bi)
					t.Properties = model.JSONObject{"auth_password": "pw"}
					Expect(store().CreateVolumeTarget(ctx, t)).To(Succeed())
					made = append(made, t)
				}
				statements[backend].reset()
			})

			It("filters by node, with node_uuid joined", func(ctx SpecContext) {
				got, err := store().ListVolumeTargets(ctx, VolumeFilter{NodeID: &n2.ID}, Page{}, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(targetUUIDs(got)).To(Equal([]string{made[3].UUID, made[4].UUID}))
				for _, t := range got {
					Expect(t.NodeUUID).To(Equal(n2.UUID))
				}
				Expect(statements[backend].matching("volume_targets")).To(HaveLen(1))
			})

			It("selects only the requested columns", func(ctx SpecContext) {
				got, err := store().ListVolumeTargets(ctx, VolumeFilter{}, Page{}, []string{"boot_index", "volume_id", "node_uuid"})
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(HaveLen(5))
				Expect(got[0].BootIndex).To(Equal(2))
				Expect(got[0].VolumeID).To(Equal(made[0].VolumeID))
				Expect(got[0].Properties).To(BeNil(), "properties are not read unless asked for")
				list := selectList(backend, "volume_targets")
				Expect(strings.Count(list, ",")).To(Equal(4), list)
				Expect(list).NotTo(ContainSubstring("properties"))
			})

			It("pages by boot index across nodes", func(ctx SpecContext) {
				var seen []string
				marker := ""
				for range 5 {
					page, err := store().ListVolumeTargets(ctx, VolumeFilter{}, Page{Limit: 2, Marker: marker, SortKey: "boot_index", SortDir: "desc"}, []string{"boot_index"})
					Expect(err).NotTo(HaveOccurred())
					seen = append(seen, targetUUIDs(page)...)
					if len(page) < 2 {
						break
					}
					marker = page[len(page)-1].UUID
				}
				Expect(seen).To(Equal([]string{made[0].UUID, made[3].UUID, made[2].UUID, made[4].UUID, made[1].UUID}))
			})

			It("rejects an unknown marker and forbidden sort keys", func(ctx SpecContext) {
				_, err := store().ListVolumeTargets(ctx, VolumeFilter{}, Page{Marker: "nope"}, nil)
				expectErr(err, errs.KindVolumeTargetNotFound, "Volume target nope could not be found.", http.StatusNotFound)
				for _, key := range []string{"extra", "properties"} {
					_, err = store().ListVolumeTargets(ctx, VolumeFilter{}, Page{SortKey: key}, nil)
					expectErr(err, errs.KindInvalidParameterValue, "The sort_key value "+key+" is an invalid field for sorting", http.StatusBadRequest)
				}
				for _, key := range []string{"id", "uuid", "volume_type", "volume_id", "boot_index", "node_id", "created_at", "updated_at"} {
					_, err = store().ListVolumeTargets(ctx, VolumeFilter{}, Page{SortKey: key}, nil)
					Expect(err).NotTo(HaveOccurred(), key)
				}
			})
		})
	})

	Describe("volume records and their node", func() {
		It("DestroyNode removes the node's connectors and targets, and nothing else", func(ctx SpecContext) {
			s := store()
			doomed, kept := newNode("doomed-v"), newNode("kept-v")
			Expect(s.CreateNode(ctx, doomed)).To(Succeed())
			Expect(s.CreateNode(ctx, kept)).To(Succeed())
			for i, owner := range []*model.Node{doomed, doomed, kept} {
				Expect(s.CreateVolumeConnector(ctx, &model.VolumeConnector{NodeID: owner.ID, Type: "iqn", ConnectorID: fmt.Sprintf("iqn.%d", i)})).To(Succeed())
				Expect(s.CreateVolumeTarget(ctx, &model.VolumeTarget{NodeID: owner.ID, VolumeType: "iscsi", BootIndex: i, VolumeID: "v"})).To(Succeed())
			}
			Expect(s.CreatePort(ctx, &model.Port{Address: "52:54:00:00:0a:01", NodeID: doomed.ID})).To(Succeed())

			Expect(s.DestroyNode(ctx, doomed.UUID)).To(Succeed())
			cs, err := s.ListVolumeConnectors(ctx, VolumeFilter{}, Page{}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(cs).To(HaveLen(1))
			Expect(cs[0].NodeUUID).To(Equal(kept.UUID))
			ts, err := s.ListVolumeTargets(ctx, VolumeFilter{}, Page{}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(ts).To(HaveLen(1))
			Expect(ts[0].NodeUUID).To(Equal(kept.UUID))
			Expect(countRows(ctx, s, "ports")).To(BeZero())
		})

		It("is tied to the node by a foreign key the database enforces", func(ctx SpecContext) {
			s := store()
			n := newNode("fk")
			Expect(s.CreateNode(ctx, n)).To(Succeed())
			Expect(s.CreateVolumeTarget(ctx, &model.VolumeTarget{NodeID: n.ID, VolumeType: "iscsi", VolumeID: "v"})).To(Succeed())
			err := s.db.WithContext(ctx).Exec("DELETE FROM nodes WHERE id = ?", n.ID).Error
			Expect(err).To(MatchError(MatchRegexp(`(?i)foreign key`)))
			Expect(countRows(ctx, s, "nodes")).To(Equal(int64(1)))
		})

		It("upgrades a version-1 database with data to the volume schema", func(ctx SpecContext) {
			s := freshStore(ctx, backend, "v1tov2")
			first := migrations[0].sqlite
			migrationsTable := sqliteMigrationsTable
			if backend == DialectMySQL {
				first, migrationsTable = migrations[0].mysql, mysqlMigrationsTable
			}
			for _, stmt := range append([]string{migrationsTable}, first...) {
				Expect(s.db.WithContext(ctx).Exec(stmt).Error).To(Succeed())
			}
			Expect(s.db.WithContext(ctx).Exec("INSERT INTO schema_migrations (version, applied_at) VALUES (1, ?)", now()).Error).To(Succeed())
			n := newNode("old")
			Expect(s.CreateNode(ctx, n)).To(Succeed())

			Expect(s.Upgrade(ctx)).To(Succeed())
			v, err := s.SchemaVersion(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(v).To(Equal(LatestSchemaVersion()))
			Expect(s.CreateVolumeConnector(ctx, &model.VolumeConnector{NodeID: n.ID, Type: "iqn", ConnectorID: "iqn.old"})).To(Succeed())
			got, err := s.ListVolumeConnectors(ctx, VolumeFilter{NodeID: &n.ID}, Page{}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(HaveLen(1))
			Expect(got[0].NodeUUID).To(Equal(n.UUID))
		})
	})
}

func deref[T any](ps []*T) []T {
	out := make([]T, len(ps))
	for i, p := range ps {
		out[i] = *p
	}
	return out
}
