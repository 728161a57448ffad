package conductor_test

import (
	"context"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

var _ = Describe("Port group RPCs", func() {
	onEveryBackend(func(e *env) {
		var (
			api    rpc.Endpoint
			n1, n2 *model.Node
		)
		BeforeEach(func(ctx SpecContext) {
			api = e.api(e.start(ctx, "cond-"+e.group))
			n1 = e.createNode(ctx, states.Manageable)
			n2 = e.createNode(ctx, states.Manageable)
		})
		newGroup := func(ctx context.Context, n *model.Node) *model.Portgroup {
			mac := randomMAC()
			pg := &model.Portgroup{NodeID: n.ID, Address: &mac, StandalonePortsSupported: true}
			Expect(e.store.CreatePortgroup(ctx, pg)).To(Succeed())
			got, err := e.store.GetPortgroup(ctx, pg.UUID)
			Expect(err).NotTo(HaveOccurred())
			return got
		}
		member := func(ctx context.Context, n *model.Node, pg *model.Portgroup) *model.Port {
			p := &model.Port{Address: randomMAC(), NodeID: n.ID, PortgroupID: &pg.ID, PXEEnabled: true}
			Expect(e.store.CreatePort(ctx, p)).To(Succeed())
			got, err := e.store.GetPort(ctx, p.UUID)
			Expect(err).NotTo(HaveOccurred())
			return got
		}

		It("saves the client's fields and keeps internal_info", func(ctx SpecContext) {
			pg := newGroup(ctx, n1)
			Expect(e.store.SavePortgroup(ctx, &model.Portgroup{ID: pg.ID, UUID: pg.UUID, NodeID: n1.ID, Address: pg.Address,
				InternalInfo: model.JSONObject{"k": "v"}})).To(Succeed())
			in := *pg
			in.Name, in.Mode = ptr("bond0"), ptr("802.3ad")
			in.Properties = model.JSONObject{"miimon": "100"}
			in.StandalonePortsSupported = false
			in.InternalInfo = model.JSONObject{"forged": true}
			out, err := rpc.UpdatePortgroup.Call(ctx, api, rpc.PortgroupArgs{Portgroup: in})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Name).To(HaveValue(Equal("bond0")))
			Expect(out.NodeUUID).To(Equal(n1.UUID))
			stored, err := e.store.GetPortgroup(ctx, pg.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(*stored.Mode).To(Equal("802.3ad"))
			Expect(stored.StandalonePortsSupported).To(BeFalse())
			Expect(stored.Properties).To(Equal(model.JSONObject{"miimon": "100"}))
			Expect(stored.InternalInfo).To(Equal(model.JSONObject{"k": "v"}))
			Expect(e.node(ctx, n1.UUID).Reservation).To(BeNil())
		})

		It("moves a group without ports, and refuses to move or delete one with ports", func(ctx SpecContext) {
			pg := newGroup(ctx, n1)
			p := member(ctx, n1, pg)
			in := *pg
			in.NodeUUID = n2.UUID
			_, err := rpc.UpdatePortgroup.Call(ctx, api, rpc.PortgroupArgs{Portgroup: in})
			Expect(err).To(haveKind(errs.KindInvalidState, http.StatusConflict))
			Expect(rpc.DestroyPortgroup.Call(ctx, api, rpc.PortgroupArgs{Portgroup: *pg})).To(haveKind(errs.KindInvalidState, http.StatusConflict))
			stored, err := e.store.GetPortgroup(ctx, pg.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.NodeUUID).To(Equal(n1.UUID))

			Expect(e.store.DestroyPort(ctx, p.UUID)).To(Succeed())
			out, err := rpc.UpdatePortgroup.Call(ctx, api, rpc.PortgroupArgs{Portgroup: in})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.NodeUUID).To(Equal(n2.UUID))
			Expect(e.node(ctx, n1.UUID).Reservation).To(BeNil())
			Expect(e.node(ctx, n2.UUID).Reservation).To(BeNil())

			in.NodeUUID = newUUID()
			_, err = rpc.UpdatePortgroup.Call(ctx, api, rpc.PortgroupArgs{Portgroup: in})
			Expect(err).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))

			Expect(rpc.DestroyPortgroup.Call(ctx, api, rpc.PortgroupArgs{Portgroup: *pg})).To(Succeed())
			_, err = e.store.GetPortgroup(ctx, pg.UUID)
			Expect(err).To(haveKind(errs.KindNotFound, http.StatusNotFound))
			Expect(rpc.DestroyPortgroup.Call(ctx, api, rpc.PortgroupArgs{Portgroup: *pg})).To(haveKind(errs.KindNotFound, http.StatusNotFound))
		})

		It("keeps the address of a group on a deployed node", func(ctx SpecContext) {
			active := e.createNode(ctx, states.Active, func(n *model.Node) { n.InstanceUUID = ptr(newUUID()) })
			pg := newGroup(ctx, active)
			in := *pg
			in.Address = ptr(randomMAC())
			_, err := rpc.UpdatePortgroup.Call(ctx, api, rpc.PortgroupArgs{Portgroup: in})
			Expect(err).To(haveKind(errs.KindInvalidState, http.StatusConflict))
			in.Address = pg.Address
			in.Extra = model.JSONObject{"ok": true}
			_, err = rpc.UpdatePortgroup.Call(ctx, api, rpc.PortgroupArgs{Portgroup: in})
			Expect(err).NotTo(HaveOccurred())
		})

		It("waits for the node lock and gives up with NodeLocked", func(ctx SpecContext) {
			pg := newGroup(ctx, n1)
			_, err := e.store.ReserveNode(ctx, n1.UUID, "someone-else", 1)
			Expect(err).NotTo(HaveOccurred())
			Expect(rpc.DestroyPortgroup.Call(ctx, api, rpc.PortgroupArgs{Portgroup: *pg})).To(haveKind(errs.KindNodeLocked, http.StatusConflict))
			Expect(e.store.ReleaseNode(ctx, n1.UUID, "someone-else", 1)).To(Succeed())
			_, err = e.store.GetPortgroup(ctx, pg.UUID)
			Expect(err).NotTo(HaveOccurred())
		})

		It("puts a port in a group of its own node only", func(ctx SpecContext) {
			mine, theirs := newGroup(ctx, n1), newGroup(ctx, n2)
			p := &model.Port{Address: randomMAC(), NodeID: n1.ID, PXEEnabled: true}
			Expect(e.store.CreatePort(ctx, p)).To(Succeed())
			in, err := e.store.GetPort(ctx, p.UUID)
			Expect(err).NotTo(HaveOccurred())

			in.PortgroupUUID = &theirs.UUID
			_, err = rpc.UpdatePort.Call(ctx, api, rpc.PortArgs{Port: *in})
			Expect(err).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
			in.PortgroupUUID = ptr(newUUID())
			_, err = rpc.UpdatePort.Call(ctx, api, rpc.PortArgs{Port: *in})
			Expect(err).To(haveKind(errs.KindInvalidParameterValue, http.StatusBadRequest))
			stored, err := e.store.GetPort(ctx, p.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.PortgroupUUID).To(BeNil())

			in.PortgroupUUID = &mine.UUID
			out, err := rpc.UpdatePort.Call(ctx, api, rpc.PortArgs{Port: *in})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.PortgroupUUID).To(HaveValue(Equal(mine.UUID)))
			stored, err = e.store.GetPort(ctx, p.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(*stored.PortgroupID).To(Equal(mine.ID))

			closed := newGroup(ctx, n1)
			closed.StandalonePortsSupported = false
			Expect(e.store.SavePortgroup(ctx, closed)).To(Succeed())
			in.PortgroupUUID = &closed.UUID
			_, err = rpc.UpdatePort.Call(ctx, api, rpc.PortArgs{Port: *in})
			Expect(err).To(haveKind(errs.KindConflict, http.StatusConflict))
			in.PXEEnabled = false
			_, err = rpc.UpdatePort.Call(ctx, api, rpc.PortArgs{Port: *in})
			Expect(err).NotTo(HaveOccurred())
			in.PXEEnabled = true
			_, err = rpc.UpdatePort.Call(ctx, api, rpc.PortArgs{Port: *in})
			Expect(err).To(haveKind(errs.KindConflict, http.StatusConflict))
			stored, err = e.store.GetPort(ctx, p.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.PXEEnabled).To(BeFalse())

			in.PortgroupUUID = nil
			_, err = rpc.UpdatePort.Call(ctx, api, rpc.PortArgs{Port: *in})
			Expect(err).NotTo(HaveOccurred())
			stored, err = e.store.GetPort(ctx, p.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.PortgroupID).To(BeNil())
		})
	})
})
