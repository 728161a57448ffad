package db

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/filter"
)

func allocationSpecs(_ string, store func() *Store) {
	Describe("allocations", func() {
		const conductorID = int64(7)
		var node *model.Node
		BeforeEach(func(ctx SpecContext) {
			node = newNode("alloc-node")
			node.ProvisionState, node.ResourceClass = ptr("available"), ptr("gold")
			node.Traits = model.StringList{"CUSTOM_A", "CUSTOM_B"}
			node.InstanceInfo = model.JSONObject{"image_source": "http://img"}
			Expect(store().CreateNode(ctx, node)).To(Succeed())
		})
		newAllocation := func(ctx context.Context, name string) *model.Allocation {
			a := &model.Allocation{State: model.AllocationAllocating, ResourceClass: ptr("gold"),
				Traits: model.StringList{"CUSTOM_A"}, Extra: model.JSONObject{}, ConductorAffinity: ptr(conductorID)}
			if name != "" {
				a.Name = ptr(name)
			}
			Expect(store().CreateAllocation(ctx, a)).To(Succeed())
			return a
		}
		readNode := func(ctx context.Context) *model.Node {
			n, err := store().GetNode(ctx, node.UUID)
			Expect(err).NotTo(HaveOccurred())
			return n
		}

		It("creates, reads by uuid, name and node, lists, saves and destroys an allocation", func(ctx SpecContext) {
			s := store()
			a := newAllocation(ctx, "alloc-1")
			got, err := s.GetAllocation(ctx, a.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.State).To(Equal(model.AllocationAllocating))
			Expect(got.NodeUUID).To(BeNil())
			Expect(got.Traits).To(Equal(model.StringList{"CUSTOM_A"}))
			byName, err := s.GetAllocationByName(ctx, "alloc-1")
			Expect(err).NotTo(HaveOccurred())
			Expect(byName.UUID).To(Equal(a.UUID))

			Expect(s.ReserveForAllocation(ctx, a, node.ID, conductorID)).To(Succeed())
			mine, err := s.GetNodeAllocation(ctx, node.ID, "alloc-node")
			Expect(err).NotTo(HaveOccurred())
			Expect(mine.UUID).To(Equal(a.UUID))
			Expect(*mine.NodeUUID).To(Equal(node.UUID))
			listed, err := s.ListAllocations(ctx, AllocationFilter{Match: []filter.Condition{{Column: "state", Value: "active"}}}, Page{}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(listed).To(HaveLen(1))
			Expect(*listed[0].NodeUUID).To(Equal(node.UUID))

			mine.Name, mine.Extra = ptr("renamed"), model.JSONObject{"k": "v"}
			Expect(s.SaveAllocation(ctx, mine)).To(Succeed())
			saved, err := s.GetAllocation(ctx, a.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(*saved.Name).To(Equal("renamed"))
			Expect(saved.Extra).To(Equal(model.JSONObject{"k": "v"}))

			Expect(s.DestroyAllocation(ctx, a.UUID)).To(Succeed())
			n := readNode(ctx)
			Expect(n.InstanceUUID).To(BeNil(), "destroying the allocation releases its node")
			Expect(n.AllocationID).To(BeNil())
			missing := fmt.Sprintf("Allocation %s could not be found.", a.UUID)
			_, err = s.GetAllocation(ctx, a.UUID)
			expectErr(err, errs.KindNotFound, missing, http.StatusNotFound)
			expectErr(s.DestroyAllocation(ctx, a.UUID), errs.KindNotFound, missing, http.StatusNotFound)
			_, err = s.GetNodeAllocation(ctx, node.ID, "alloc-node")
			expectErr(err, errs.KindNotFound, "Allocation for node alloc-node was not found", http.StatusNotFound)
		})

		It("maps a duplicate uuid or name to 409, writing nothing", func(ctx SpecContext) {
			s := store()
			a := newAllocation(ctx, "dup")
			expectErr(s.CreateAllocation(ctx, &model.Allocation{Name: ptr("dup"), State: model.AllocationAllocating}),
				errs.KindDuplicateName, "An allocation with name dup already exists.", http.StatusConflict)
			expectErr(s.CreateAllocation(ctx, &model.Allocation{UUID: a.UUID, State: model.AllocationAllocating}),
				errs.KindAlreadyExists, fmt.Sprintf("An allocation with UUID %s already exists.", a.UUID), http.StatusConflict)
			Expect(countRows(ctx, s, "allocations")).To(Equal(int64(1)))
		})

		It("reserves the node and activates the allocation in one step", func(ctx SpecContext) {
			a := newAllocation(ctx, "")
			Expect(store().ReserveForAllocation(ctx, a, node.ID, conductorID)).To(Succeed())
			Expect(a.State).To(Equal(model.AllocationActive))
			n := readNode(ctx)
			Expect(*n.InstanceUUID).To(Equal(a.UUID))
			Expect(*n.AllocationID).To(Equal(a.ID))
			Expect(n.InstanceInfo).To(Equal(model.JSONObject{"image_source": "http://img", "traits": []any{"CUSTOM_A"}}))
			stored, err := store().GetAllocation(ctx, a.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.State).To(Equal(model.AllocationActive))
			Expect(*stored.NodeUUID).To(Equal(node.UUID))
		})

		DescribeTable("changes neither row when the node or the allocation no longer qualifies",
			func(ctx SpecContext, change func(ctx context.Context, a *model.Allocation), want func(error) bool) {
				a := newAllocation(ctx, "")
				change(ctx, a)
				err := store().ReserveForAllocation(ctx, a, node.ID, conductorID)
				Expect(want(err)).To(BeTrue(), "got %v", err)
				n := readNode(ctx)
				Expect(n.AllocationID).To(BeNil())
				stored, err := store().GetAllocation(ctx, a.UUID)
				if err == nil {
					Expect(stored.NodeID).To(BeNil())
				}
			},
			Entry("the node is locked", func(ctx context.Context, _ *model.Allocation) {
				_, err := store().ReserveNode(ctx, node.UUID, "other-host", 1)
				Expect(err).NotTo(HaveOccurred())
			}, func(err error) bool { return errs.Is(err, errs.KindNodeLocked) }),
			Entry("the node went into maintenance", func(ctx context.Context, _ *model.Allocation) {
				Expect(store().db.WithContext(ctx).Exec("UPDATE nodes SET maintenance = ? WHERE id = ?", true, node.ID).Error).To(Succeed())
			}, func(err error) bool { return errors.Is(err, ErrNodeUnsuitable) }),
			Entry("the node lacks a trait", func(_ context.Context, a *model.Allocation) {
				a.Traits = model.StringList{"CUSTOM_C"}
			}, func(err error) bool { return errors.Is(err, ErrNodeUnsuitable) }),
			Entry("another conductor took the allocation over", func(ctx context.Context, a *model.Allocation) {
				won, err := store().TakeOverAllocation(ctx, a.ID, a.ConductorAffinity, conductorID+1)
				Expect(err).NotTo(HaveOccurred())
				Expect(won).To(BeTrue())
			}, func(err error) bool { return errors.Is(err, ErrAllocationTaken) }),
			Entry("the allocation was deleted", func(ctx context.Context, a *model.Allocation) {
				Expect(store().DestroyAllocation(ctx, a.UUID)).To(Succeed())
			}, func(err error) bool { return errors.Is(err, ErrAllocationTaken) }),
		)

		It("fails an allocation once, for its own conductor only", func(ctx SpecContext) {
			a := newAllocation(ctx, "")
			Expect(errors.Is(store().FailAllocation(ctx, a, conductorID+1, "nope"), ErrAllocationTaken)).To(BeTrue())
			Expect(store().FailAllocation(ctx, a, conductorID, "no available nodes")).To(Succeed())
			stored, err := store().GetAllocation(ctx, a.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.State).To(Equal(model.AllocationError))
			Expect(*stored.LastError).To(Equal("no available nodes"))
			Expect(errors.Is(store().FailAllocation(ctx, a, conductorID, "again"), ErrAllocationTaken)).To(BeTrue())
		})

		It("finds the allocations no live conductor processes, and lets one conductor take each over", func(ctx SpecContext) {
			s := store()
			live := &model.Conductor{Hostname: "live"}
			Expect(s.RegisterConductor(ctx, live, nil)).To(Succeed())
			mine := newAllocation(ctx, "")
			Expect(s.db.WithContext(ctx).Exec("UPDATE allocations SET conductor_affinity = ? WHERE id = ?", live.ID, mine.ID).Error).To(Succeed())
			orphan := newAllocation(ctx, "")

			found, err := s.OrphanedAllocations(ctx, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(HaveLen(1))
			Expect(found[0].UUID).To(Equal(orphan.UUID))

			won, err := s.TakeOverAllocation(ctx, orphan.ID, orphan.ConductorAffinity, live.ID)
			Expect(err).NotTo(HaveOccurred())
			Expect(won).To(BeTrue())
			won, err = s.TakeOverAllocation(ctx, orphan.ID, orphan.ConductorAffinity, live.ID+1)
			Expect(err).NotTo(HaveOccurred())
			Expect(won).To(BeFalse(), "the second conductor loses the race")
			found, err = s.OrphanedAllocations(ctx, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(BeEmpty())
		})

		It("deletes a node's allocations with the node", func(ctx SpecContext) {
			a := newAllocation(ctx, "")
			Expect(store().ReserveForAllocation(ctx, a, node.ID, conductorID)).To(Succeed())
			Expect(store().DestroyNode(ctx, node.UUID)).To(Succeed())
			Expect(countRows(ctx, store(), "allocations")).To(BeZero())
		})
	})
}
