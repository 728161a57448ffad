package db

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/filter"
)

func uuidsOf(nodes []model.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.UUID
	}
	return out
}

func listSpecs(backend string, store func() *Store) {
	Describe("ListNodes", func() {
		Describe("filters", func() {
			var a, b, c, d *model.Node
			old := time.Now().Add(-time.Hour)
			BeforeEach(func(ctx SpecContext) {
				s := store()
				a = &model.Node{Name: ptr("a"), Driver: "ipmi", ProvisionState: ptr("available"), ResourceClass: ptr("gold"),
					ConductorGroup: "g1", Owner: ptr("alice"), Lessee: ptr("bob"), Description: ptr("Rack 12, 100% ready_now"),
					InstanceUUID: ptr("9a7c1c1e-2b07-4b5e-9d4e-6a1f0b5d2e01"), ChassisUUID: ptr("c0c0c0c0-0000-4000-8000-000000000001")}
				b = &model.Node{Name: ptr("b"), Driver: "redfish", ProvisionState: ptr("active"), Maintenance: true, Fault: ptr("power failure")}
				c = &model.Node{Name: ptr("c"), Driver: "ipmi", ProvisionState: ptr("clean wait"), Retired: true, ProvisionUpdatedAt: &old}
				d = &model.Node{Driver: "ipmi", ProvisionState: ptr("enroll"), Description: ptr("rack 1 spare")}
				for _, n := range []*model.Node{a, b, c, d} {
					Expect(s.CreateNode(ctx, n)).To(Succeed())
				}
				_, err := s.ReserveNode(ctx, b.UUID, "cond-1", 1)
				Expect(err).NotTo(HaveOccurred())
				_, err = s.ReserveNode(ctx, c.UUID, "cond-2", 1)
				Expect(err).NotTo(HaveOccurred())
			})

			It("takes a project's marker only among the project's nodes", func(ctx SpecContext) {
				alice := NodeFilter{Project: ptr("alice")}
				got, err := store().ListNodes(ctx, alice, Page{Marker: a.UUID}, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(BeEmpty())
				_, err = store().ListNodes(ctx, alice, Page{Marker: b.UUID, SortKey: "name"}, nil)
				expectErr(err, errs.KindNodeNotFound, "Node "+b.UUID+" could not be found.", http.StatusNotFound)
			})

			DescribeTable("select the matching nodes",
				func(ctx SpecContext, f func() NodeFilter, want func() []*model.Node) {
					got, err := store().ListNodes(ctx, f(), Page{}, nil)
					Expect(err).NotTo(HaveOccurred())
					uuids := []string{}
					for _, n := range want() {
						uuids = append(uuids, n.UUID)
					}
					Expect(uuidsOf(got)).To(Equal(uuids))
				},
				Entry("none", func() NodeFilter { return NodeFilter{} }, func() []*model.Node { return []*model.Node{a, b, c, d} }),
				Entry("provision states", func() NodeFilter { return NodeFilter{ProvisionStates: []string{"active", "enroll"}} },
					func() []*model.Node { return []*model.Node{b, d} }),
				Entry("an empty state list matches nothing", func() NodeFilter { return NodeFilter{ProvisionStates: []string{}} },
					func() []*model.Node { return nil }),
				Entry("driver", func() NodeFilter { return NodeFilter{Match: []filter.Condition{{Column: "driver", Value: "ipmi"}}} }, func() []*model.Node { return []*model.Node{a, c, d} }),
				Entry("resource class", func() NodeFilter {
					return NodeFilter{Match: []filter.Condition{{Column: "resource_class", Value: "gold"}}}
				}, func() []*model.Node { return []*model.Node{a} }),
				Entry("conductor group", func() NodeFilter {
					return NodeFilter{Match: []filter.Condition{{Column: "conductor_group", Value: ""}}}
				}, func() []*model.Node { return []*model.Node{b, c, d} }),
				Entry("chassis", func() NodeFilter {
					return NodeFilter{Match: []filter.Condition{{Column: "chassis_uuid", Value: *a.ChassisUUID}}}
				}, func() []*model.Node { return []*model.Node{a} }),
				Entry("instance", func() NodeFilter {
					return NodeFilter{Match: []filter.Condition{{Column: "instance_uuid", Value: *a.InstanceUUID}}}
				}, func() []*model.Node { return []*model.Node{a} }),
				Entry("owner", func() NodeFilter { return NodeFilter{Match: []filter.Condition{{Column: "owner", Value: "alice"}}} }, func() []*model.Node { return []*model.Node{a} }),
				Entry("lessee", func() NodeFilter { return NodeFilter{Match: []filter.Condition{{Column: "lessee", Value: "bob"}}} }, func() []*model.Node { return []*model.Node{a} }),
				Entry("fault", func() NodeFilter {
					return NodeFilter{Match: []filter.Condition{{Column: "fault", Value: "power failure"}}}
				}, func() []*model.Node { return []*model.Node{b} }),
				Entry("description, case-insensitive", func() NodeFilter {
					return NodeFilter{Match: []filter.Condition{{Column: "description", Op: filter.Contains, Value: "RACK 1"}}}
				},
					func() []*model.Node { return []*model.Node{a, d} }),
				Entry("description with LIKE wildcards taken literally", func() NodeFilter {
					return NodeFilter{Match: []filter.Condition{{Column: "description", Op: filter.Contains, Value: "100% ready_"}}}
				},
					func() []*model.Node { return []*model.Node{a} }),
				Entry("description wildcard that must not match", func() NodeFilter {
					return NodeFilter{Match: []filter.Condition{{Column: "description", Op: filter.Contains, Value: "rack_1"}}}
				},
					func() []*model.Node { return nil }),
				Entry("associated", func() NodeFilter {
					return NodeFilter{Match: []filter.Condition{{Column: "instance_uuid", Op: filter.Set, Value: true}}}
				}, func() []*model.Node { return []*model.Node{a} }),
				Entry("not associated", func() NodeFilter {
					return NodeFilter{Match: []filter.Condition{{Column: "instance_uuid", Op: filter.Set, Value: false}}}
				}, func() []*model.Node { return []*model.Node{b, c, d} }),
				Entry("maintenance", func() NodeFilter { return NodeFilter{Maintenance: ptr(true)} }, func() []*model.Node { return []*model.Node{b} }),
				Entry("not maintenance", func() NodeFilter { return NodeFilter{Maintenance: ptr(false)} }, func() []*model.Node { return []*model.Node{a, c, d} }),
				Entry("retired", func() NodeFilter { return NodeFilter{Match: []filter.Condition{{Column: "retired", Value: true}}} }, func() []*model.Node { return []*model.Node{c} }),
				Entry("reserved", func() NodeFilter { return NodeFilter{Reserved: ptr(true)} }, func() []*model.Node { return []*model.Node{b, c} }),
				Entry("not reserved", func() NodeFilter { return NodeFilter{Reserved: ptr(false)} }, func() []*model.Node { return []*model.Node{a, d} }),
				Entry("reserved by", func() NodeFilter { return NodeFilter{ReservedBy: []string{"cond-2", "cond-9"}} }, func() []*model.Node { return []*model.Node{c} }),
				Entry("provision updated before", func() NodeFilter { return NodeFilter{ProvisionUpdatedBefore: ptr(time.Now().Add(-time.Minute))} },
					func() []*model.Node { return []*model.Node{c} }),
				Entry("uuids", func() NodeFilter { return NodeFilter{UUIDs: []string{d.UUID, b.UUID}} }, func() []*model.Node { return []*model.Node{b, d} }),
				Entry("combined (timeout query)", func() NodeFilter {
					return NodeFilter{ProvisionStates: []string{"clean wait", "active"}, Maintenance: ptr(false), Reserved: ptr(true),
						ProvisionUpdatedBefore: ptr(time.Now())}
				}, func() []*model.Node { return []*model.Node{c} }),
			)
		})

		Describe("pagination", func() {
			// 9 nodes: drivers with ties, names with NULLs, created in
			// an order that differs from both.
			var all []model.Node
			BeforeEach(func(ctx SpecContext) {
				s := store()
				drivers := []string{"b", "a", "c", "a", "b", "a", "c", "b", "a"}
				names := []*string{ptr("n5"), nil, ptr("n3"), ptr("n9"), nil, ptr("n1"), ptr("n2"), nil, ptr("n4")}
				for i := range drivers {
					Expect(s.CreateNode(ctx, &model.Node{Driver: drivers[i], Name: names[i]})).To(Succeed())
				}
				var err error
				all, err = s.ListNodes(ctx, NodeFilter{}, Page{}, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(all).To(HaveLen(9))
			})

			// expected orders all nodes by key then id, as the database
			// should, with NULL before any value.
			expected := func(key func(model.Node) *string, desc bool) []string {
				sorted := slices.Clone(all)
				slices.SortFunc(sorted, func(x, y model.Node) int {
					kx, ky := key(x), key(y)
					c := 0
					switch {
					case kx == nil && ky != nil:
						c = -1
					case kx != nil && ky == nil:
						c = 1
					case kx != nil && ky != nil:
						c = strings.Compare(*kx, *ky)
					}
					if c == 0 {
						c = cmp.Compare(x.ID, y.ID)
					}
					if desc {
						return -c
					}
					return c
				})
				return uuidsOf(sorted)
			}
			walk := func(ctx SpecContext, sortKey, sortDir string, limit int) []string {
				var seen []string
				marker := ""
				for pages := 0; ; pages++ {
					Expect(pages).To(BeNumerically("<", 20))
					page, err := store().ListNodes(ctx, NodeFilter{}, Page{Limit: limit, Marker: marker, SortKey: sortKey, SortDir: sortDir}, []string{"driver", "name"})
					Expect(err).NotTo(HaveOccurred())
					Expect(len(page)).To(BeNumerically("<=", limit))
					seen = append(seen, uuidsOf(page)...)
					if len(page) < limit {
						return seen
					}
					marker = page[len(page)-1].UUID
				}
			}
			byDriver := func(n model.Node) *string { return &n.Driver }
			byName := func(n model.Node) *string { return n.Name }

			DescribeTable("pages through every node exactly once, in order",
				func(ctx SpecContext, sortKey, sortDir string, limit int) {
					key, desc := byDriver, strings.EqualFold(sortDir, "desc")
					if sortKey == "name" {
						key = byName
					}
					want := expected(key, desc)
					if sortKey == "" || sortKey == "id" {
						want = expected(func(model.Node) *string { return nil }, desc)
					}
					Expect(walk(ctx, sortKey, sortDir, limit)).To(Equal(want))
				},
				Entry("default order", "", "", 2),
				Entry("id desc", "id", "desc", 4),
				Entry("ties, asc", "driver", "asc", 2),
				Entry("ties, desc", "driver", "desc", 2),
				Entry("ties, page of 1", "driver", "asc", 1),
				Entry("NULLs, asc", "name", "asc", 2),
				Entry("NULLs, desc", "name", "desc", 2),
				Entry("NULLs, desc, page of 1", "name", "DESC", 1),
				Entry("one page exactly", "driver", "asc", 9),
			)

			It("rejects an unknown marker with NodeNotFound", func(ctx SpecContext) {
				_, err := store().ListNodes(ctx, NodeFilter{}, Page{Marker: "no-such-node"}, nil)
				expectErr(err, errs.KindNodeNotFound, "Node no-such-node could not be found.", http.StatusNotFound)
				_, err = store().ListNodes(ctx, NodeFilter{}, Page{Limit: 2, Marker: "no-such-node", SortDir: "desc"}, nil)
				expectErr(err, errs.KindNodeNotFound, "Node no-such-node could not be found.", http.StatusNotFound)
			})

			It("answers an empty page after the last node's marker", func(ctx SpecContext) {
				all := expected(func(model.Node) *string { return nil }, false)
				page, err := store().ListNodes(ctx, NodeFilter{}, Page{Limit: 2, Marker: all[len(all)-1]}, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(page).To(BeEmpty())
			})

			It("validates sort keys and directions", func(ctx SpecContext) {
				_, err := store().ListNodes(ctx, NodeFilter{}, Page{SortKey: "bogus"}, nil)
				expectErr(err, errs.KindInvalidParameterValue, `The sort_key value "bogus" is an invalid field for sorting`, http.StatusBadRequest)
				_, err = store().ListNodes(ctx, NodeFilter{}, Page{SortKey: "driver_info"}, nil)
				expectErr(err, errs.KindInvalidParameterValue, `The sort_key value driver_info is an invalid field for sorting`, http.StatusBadRequest)
				_, err = store().ListNodes(ctx, NodeFilter{}, Page{SortKey: "name; DROP TABLE nodes"}, nil)
				Expect(errs.Is(err, errs.KindInvalidParameterValue)).To(BeTrue())
				_, err = store().ListNodes(ctx, NodeFilter{}, Page{SortDir: "up"}, nil)
				expectErr(err, errs.KindInvalidParameterValue, `Invalid sort direction: up. Acceptable values are 'asc' or 'desc'`, http.StatusBadRequest)
			})

			It("sorts by time columns across pages", func(ctx SpecContext) {
				s := store()
				for i, n := range all {
					if i%3 == 0 {
						continue
					}
					Expect(s.TouchProvisioning(ctx, n.UUID)).To(Succeed())
				}
				full, err := s.ListNodes(ctx, NodeFilter{}, Page{SortKey: "provision_updated_at", SortDir: "desc"}, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(full).To(HaveLen(9))
				for i := 1; i < len(full); i++ {
					prev, cur := full[i-1].ProvisionUpdatedAt, full[i].ProvisionUpdatedAt
					if prev != nil && cur != nil {
						Expect(!cur.After(*prev)).To(BeTrue())
					}
					Expect(prev == nil && cur != nil).To(BeFalse(), "NULLs come last in descending order")
				}
				var paged []string
				marker := ""
				for range 5 {
					page, err := s.ListNodes(ctx, NodeFilter{}, Page{Limit: 2, Marker: marker, SortKey: "provision_updated_at", SortDir: "desc"}, []string{"provision_updated_at"})
					Expect(err).NotTo(HaveOccurred())
					paged = append(paged, uuidsOf(page)...)
					if len(page) < 2 {
						break
					}
					marker = page[len(page)-1].UUID
				}
				Expect(paged).To(Equal(uuidsOf(full)))
			})
		})

		Describe("column selection", func() {
			BeforeEach(func(ctx SpecContext) {
				n := newNode("sel")
				n.DriverInfo = model.JSONObject{"ipmi_password": "pw"}
				n.Maintenance = true
				Expect(store().CreateNode(ctx, n)).To(Succeed())
				statements[backend].reset()
			})

			It("loads only the requested columns, plus id and uuid", func(ctx SpecContext) {
				nodes, err := store().ListNodes(ctx, NodeFilter{}, Page{}, []string{"name", "provision_state", "maintenance"})
				Expect(err).NotTo(HaveOccurred())
				Expect(nodes).To(HaveLen(1))
				n := nodes[0]
				Expect(n.ID).NotTo(BeZero())
				Expect(n.UUID).NotTo(BeEmpty())
				Expect(n.Name).To(Equal(ptr("sel")))
				Expect(n.ProvisionState).To(Equal(ptr("enroll")))
				Expect(n.Maintenance).To(BeTrue())
				Expect(n.DriverInfo).To(BeNil(), "an unselected JSON column is not loaded")
				Expect(n.Driver).To(BeEmpty())
				Expect(n.PowerState).To(BeNil())

				sqls := statements[backend].matching("nodes")
				Expect(sqls).To(HaveLen(1))
				selectList := strings.ToLower(sqls[0][:strings.Index(strings.ToLower(sqls[0]), " from ")])
				for _, c := range []string{"id", "uuid", "name", "provision_state", "maintenance"} {
					Expect(selectList).To(ContainSubstring(c))
				}
				Expect(strings.Count(selectList, ",")).To(Equal(4), selectList)
				Expect(selectList).NotTo(ContainSubstring("driver_info"))
			})

			It("loads every column when none are named", func(ctx SpecContext) {
				nodes, err := store().ListNodes(ctx, NodeFilter{}, Page{}, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(nodes[0].DriverInfo).To(Equal(model.JSONObject{"ipmi_password": "pw"}))
				Expect(nodes[0].Driver).To(Equal("ipmi"))
			})

			It("rejects unknown columns", func(ctx SpecContext) {
				_, err := store().ListNodes(ctx, NodeFilter{}, Page{}, []string{"name", "links", "conductor"})
				expectErr(err, errs.KindInvalidParameterValue, `Field(s) "links, conductor" are not valid`, http.StatusBadRequest)
			})
		})

		It("returns an empty, non-nil list when nothing matches", func(ctx SpecContext) {
			nodes, err := store().ListNodes(ctx, NodeFilter{Match: []filter.Condition{{Column: "driver", Value: "none"}}}, Page{Limit: 10}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(nodes).NotTo(BeNil())
			Expect(nodes).To(BeEmpty())
		})
	})
}
