package conductor_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

var _ = Describe("Allocations", func() {
	onEveryBackend(func(e *env) {
		var (
			api rpc.Endpoint
			// class is a resource class of this spec's own: other specs'
			// available nodes never match it.
			class string
		)
		BeforeEach(func(ctx SpecContext) {
			api = e.api(e.start(ctx, "cond-"+e.group))
			class = "rc-" + e.group
			DeferCleanup(func(ctx SpecContext) {
				left, err := e.store.ListAllocations(ctx, db.AllocationFilter{
					Match: []filter.Condition{{Column: "resource_class", Op: filter.Contains, Value: class}}}, db.Page{}, []string{"uuid"})
				Expect(err).NotTo(HaveOccurred())
				for _, a := range left {
					Expect(e.store.DestroyAllocation(ctx, a.UUID)).To(Succeed())
				}
			})
		})
		availableNode := func(ctx context.Context, traits ...string) *model.Node {
			return e.createNode(ctx, states.Available, func(n *model.Node) {
				n.ResourceClass, n.PowerState = &class, ptr("power off")
				n.Traits = traits
			})
		}
		request := func(mods ...func(*model.Allocation)) model.Allocation {
			a := model.Allocation{ResourceClass: &class, Extra: model.JSONObject{}}
			for _, m := range mods {
				m(&a)
			}
			return a
		}
		allocate := func(ctx context.Context, a model.Allocation) model.Allocation {
			created, err := rpc.CreateAllocation.Call(ctx, api, rpc.AllocationArgs{Allocation: a})
			Expect(err).NotTo(HaveOccurred())
			Expect(created.State).To(Equal(model.AllocationAllocating))
			return created
		}
		settled := func(ctx context.Context, uuid string) *model.Allocation {
			GinkgoHelper()
			var a *model.Allocation
			Eventually(func(g Gomega) string {
				var err error
				a, err = e.store.GetAllocation(ctx, uuid)
				g.Expect(err).NotTo(HaveOccurred())
				return a.State
			}).ShouldNot(Equal(model.AllocationAllocating))
			return a
		}

		It("reserves an available node with the resource class and every trait asked for", func(ctx SpecContext) {
			e.createNode(ctx, states.Manageable, func(n *model.Node) { n.ResourceClass, n.Traits = &class, []string{"CUSTOM_GPU"} })
			availableNode(ctx)
			want := availableNode(ctx, "CUSTOM_GPU", "CUSTOM_NVME")
			a := settled(ctx, allocate(ctx, request(func(a *model.Allocation) { a.Traits = model.StringList{"CUSTOM_GPU"} })).UUID)
			Expect(a.State).To(Equal(model.AllocationActive))
			Expect(a.NodeUUID).To(HaveValue(Equal(want.UUID)))
			n := e.node(ctx, want.UUID)
			Expect(n.InstanceUUID).To(HaveValue(Equal(a.UUID)))
			Expect(n.InstanceInfo).To(HaveKeyWithValue("traits", []any{"CUSTOM_GPU"}))
			Expect(n.Reservation).To(BeNil(), "the allocation leaves no lock behind")
		})

		It("takes only a candidate node, the one named as the allocation first", func(ctx SpecContext) {
			availableNode(ctx)
			named := e.createNode(ctx, states.Available, func(n *model.Node) {
				n.ResourceClass, n.PowerState, n.Name = &class, ptr("power off"), ptr("host-"+e.group)
			})
			other := availableNode(ctx)
			a := settled(ctx, allocate(ctx, request(func(a *model.Allocation) {
				a.Name = ptr("host-" + e.group)
				a.CandidateNodes = model.StringList{other.UUID, named.UUID}
			})).UUID)
			Expect(a.NodeUUID).To(HaveValue(Equal(named.UUID)))
		})

		DescribeTable("fails with Ironic's reason when no node suits",
			func(ctx SpecContext, mod func(*model.Allocation), reason string) {
				availableNode(ctx)
				a := settled(ctx, allocate(ctx, request(mod)).UUID)
				Expect(a.State).To(Equal(model.AllocationError))
				Expect(a.NodeUUID).To(BeNil())
				Expect(a.LastError).To(HaveValue(Equal(fmt.Sprintf("Failed to process allocation %s: %s.", a.UUID,
					fmt.Sprintf(reason, *a.ResourceClass)))))
			},
			Entry("another resource class", func(a *model.Allocation) { a.ResourceClass = ptr(*a.ResourceClass + "-x") },
				"no available nodes match the resource class %s"),
			Entry("candidates that do not suit", func(a *model.Allocation) { a.CandidateNodes = model.StringList{newUUID()} },
				"none of the requested nodes are available and match the resource class %s"),
			Entry("a trait no node has", func(a *model.Allocation) { a.Traits = model.StringList{"CUSTOM_MISSING"} },
				"no suitable nodes have the requested traits CUSTOM_MISSING%.0s"),
		)

		It("gives concurrent allocations different nodes, and fails the one left over", func(ctx SpecContext) {
			availableNode(ctx)
			availableNode(ctx)
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				created []string
			)
			for range 3 {
				wg.Go(func() {
					defer GinkgoRecover()
					a := allocate(ctx, request())
					mu.Lock()
					created = append(created, a.UUID)
					mu.Unlock()
				})
			}
			wg.Wait()
			nodes := map[string]bool{}
			failed := 0
			for _, uuid := range created {
				a := settled(ctx, uuid)
				if a.State == model.AllocationError {
					failed++
					continue
				}
				Expect(nodes).NotTo(HaveKey(*a.NodeUUID))
				nodes[*a.NodeUUID] = true
			}
			Expect(nodes).To(HaveLen(2))
			Expect(failed).To(Equal(1))
		})

		It("retries a node that is locked, and gives up after the configured attempts", func(ctx SpecContext) {
			n := availableNode(ctx)
			_, err := e.store.ReserveNode(ctx, n.UUID, "someone-else", 1)
			Expect(err).NotTo(HaveOccurred())
			a := settled(ctx, allocate(ctx, request()).UUID)
			Expect(a.LastError).To(HaveValue(HaveSuffix("could not reserve any of 1 suitable nodes.")))
			Expect(e.store.ReleaseNode(ctx, n.UUID, "someone-else", 1)).To(Succeed())
			a = settled(ctx, allocate(ctx, request()).UUID)
			Expect(a.NodeUUID).To(HaveValue(Equal(n.UUID)))
		})

		It("deletes an allocation and releases its node, but not while the node is active", func(ctx SpecContext) {
			n := availableNode(ctx)
			a := settled(ctx, allocate(ctx, request()).UUID)
			Expect(a.NodeUUID).To(HaveValue(Equal(n.UUID)))
			Expect(e.store.SaveNode(ctx, withState(e.node(ctx, n.UUID), states.Active))).To(Succeed())
			err := rpc.DestroyAllocation.Call(ctx, api, rpc.AllocationArgs{Allocation: *a})
			Expect(errs.Is(err, errs.KindInvalidState)).To(BeTrue(), "got %v", err)
			Expect(e.node(ctx, n.UUID).InstanceUUID).To(HaveValue(Equal(a.UUID)))

			active := e.node(ctx, n.UUID)
			active.Maintenance = true
			Expect(e.store.SaveNode(ctx, active)).To(Succeed())
			Expect(rpc.DestroyAllocation.Call(ctx, api, rpc.AllocationArgs{Allocation: *a})).To(Succeed())
			released := e.node(ctx, n.UUID)
			Expect(released.InstanceUUID).To(BeNil())
			Expect(released.AllocationID).To(BeNil())
			_, err = e.store.GetAllocation(ctx, a.UUID)
			Expect(errs.Is(err, errs.KindNotFound)).To(BeTrue())
		})

		It("drops the allocation when the node is torn down or its instance_uuid removed", func(ctx SpecContext) {
			torn, patched := availableNode(ctx), availableNode(ctx)
			first := settled(ctx, allocate(ctx, request(func(a *model.Allocation) { a.CandidateNodes = model.StringList{torn.UUID} })).UUID)
			second := settled(ctx, allocate(ctx, request(func(a *model.Allocation) { a.CandidateNodes = model.StringList{patched.UUID} })).UUID)
			Expect(e.store.SaveNode(ctx, withState(e.node(ctx, torn.UUID), states.Active))).To(Succeed())

			Expect(rpc.DoNodeTearDown.Call(ctx, api, rpc.NodeArgs{NodeID: torn.UUID})).To(Succeed())
			Eventually(e.provisionState(ctx, torn.UUID)).Should(Equal(states.Available))
			Expect(e.node(ctx, torn.UUID).AllocationID).To(BeNil())
			_, err := e.store.GetAllocation(ctx, first.UUID)
			Expect(errs.Is(err, errs.KindNotFound)).To(BeTrue())

			_, err = rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{NodeID: patched.UUID, APIVersion: "1.52",
				Patch: []byte(`[{"op": "remove", "path": "/instance_uuid"}]`)})
			Expect(err).NotTo(HaveOccurred())
			Expect(e.node(ctx, patched.UUID).AllocationID).To(BeNil())
			_, err = e.store.GetAllocation(ctx, second.UUID)
			Expect(errs.Is(err, errs.KindNotFound)).To(BeTrue())
		})

		It("takes over an allocation its dead conductor left allocating", func(ctx SpecContext) {
			n := availableNode(ctx)
			orphan := &model.Allocation{State: model.AllocationAllocating, ResourceClass: &class, ConductorAffinity: ptr(int64(1 << 40))}
			Expect(e.store.CreateAllocation(ctx, orphan)).To(Succeed())
			e.start(ctx, "rescuer-"+e.group, func(cfg *config.Config) { cfg.Conductor.CheckAllocationsInterval = 100 * time.Millisecond })
			a := settled(ctx, orphan.UUID)
			Expect(a.NodeUUID).To(HaveValue(Equal(n.UUID)))
		})
	})
})

// withState returns n in provision state s, with no target.
func withState(n *model.Node, s states.State) *model.Node {
	n.SetState(s, "")
	return n
}
