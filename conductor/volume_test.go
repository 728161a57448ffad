package conductor_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

var _ = Describe("Volume connector and target RPCs", func() {
	onEveryBackend(func(e *env) {
		var (
			api rpc.Endpoint
			ctx = context.Background()
			// mods configure the conductor a spec starts.
			mods []func(*config.Config)
		)
		BeforeEach(func() { mods = nil })
		JustBeforeEach(func(ctx SpecContext) {
			api = e.api(e.start(ctx, "vol-"+newUUID()[:8], mods...))
		})

		off := func(n *model.Node) { n.PowerState = ptr(states.PowerOff) }
		connector := func(n *model.Node, id string) model.VolumeConnector {
			GinkgoHelper()
			c := model.VolumeConnector{NodeID: n.ID, Type: "iqn", ConnectorID: id + "-" + n.UUID, Extra: model.JSONObject{}}
			Expect(e.store.CreateVolumeConnector(ctx, &c)).To(Succeed())
			c.NodeUUID = n.UUID
			return c
		}

		It("moves connectors both ways between two nodes at once without deadlock", func() {
			a := e.createNode(ctx, states.Manageable, off)
			b := e.createNode(ctx, states.Manageable, off)
			var wg sync.WaitGroup
			for i := range 10 {
				ca, cb := connector(a, fmt.Sprint("a", i)), connector(b, fmt.Sprint("b", i))
				ca.NodeUUID, cb.NodeUUID = b.UUID, a.UUID
				for _, c := range []model.VolumeConnector{ca, cb} {
					wg.Add(1)
					go func() {
						defer GinkgoRecover()
						defer wg.Done()
						for {
							out, err := rpc.UpdateVolumeConnector.Call(ctx, api, rpc.VolumeConnectorArgs{Connector: c})
							if errs.Is(err, errs.KindNodeLocked) {
								continue
							}
							Expect(err).NotTo(HaveOccurred())
							Expect(out.NodeUUID).To(Equal(c.NodeUUID))
							return
						}
					}()
				}
			}
			wg.Wait()
			for _, n := range []*model.Node{a, b} {
				Expect(e.node(ctx, n.UUID).Reservation).To(BeNil())
			}
			stored, err := e.store.GetVolumeConnector(ctx, connector(a, "check").UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.NodeUUID).To(Equal(a.UUID))
		})

		It("checks the power state of the node a connector moves to", func() {
			a := e.createNode(ctx, states.Manageable, off)
			b := e.createNode(ctx, states.Active, func(n *model.Node) { n.PowerState = ptr(states.PowerOn) })
			c := connector(a, "x")
			c.NodeUUID = b.UUID
			_, err := rpc.UpdateVolumeConnector.Call(ctx, api, rpc.VolumeConnectorArgs{Connector: c})
			Expect(errs.Message(err)).To(Equal(`The requested action "volume connector update" can not be performed on node "` + b.UUID + `" while it is in state "power on".`))
			Expect(e.node(ctx, a.UUID).Reservation).To(BeNil())
			Expect(e.node(ctx, b.UUID).Reservation).To(BeNil())

			c.NodeUUID = newUUID()
			_, err = rpc.UpdateVolumeConnector.Call(ctx, api, rpc.VolumeConnectorArgs{Connector: c})
			Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
			Expect(errs.Message(err)).To(ContainSubstring("Unable to apply the requested node_uuid"))
		})

		target := func(n *model.Node) model.VolumeTarget {
			GinkgoHelper()
			t := model.VolumeTarget{NodeID: n.ID, VolumeType: "iscsi", VolumeID: "v", Extra: model.JSONObject{}, Properties: model.JSONObject{}}
			Expect(e.store.CreateVolumeTarget(ctx, &t)).To(Succeed())
			t.NodeUUID = n.UUID
			return t
		}

		It("applies a patch to the record as stored, on the node the patch moves it to", func() {
			a := e.createNode(ctx, states.Manageable, off)
			b := e.createNode(ctx, states.Manageable, off)
			t, c := target(a), connector(a, "p")
			// Written after the API read them: the patch must not undo it.
			stored, err := e.store.GetVolumeTarget(ctx, t.UUID)
			Expect(err).NotTo(HaveOccurred())
			stored.Extra = model.JSONObject{"other": "kept"}
			Expect(e.store.SaveVolumeTarget(ctx, stored)).To(Succeed())
			storedC, err := e.store.GetVolumeConnector(ctx, c.UUID)
			Expect(err).NotTo(HaveOccurred())
			storedC.Extra = model.JSONObject{"other": "kept"}
			Expect(e.store.SaveVolumeConnector(ctx, storedC)).To(Succeed())

			move := `[{"op": "add", "path": "/extra/mine", "value": 1}, {"op": "replace", "path": "/node_uuid", "value": "` + b.UUID + `"}]`
			vt, err := rpc.UpdateVolumeTarget.Call(ctx, api, rpc.VolumeTargetArgs{VolumeTargetID: t.UUID, Patch: []byte(move), APIVersion: "1.32"})
			Expect(err).NotTo(HaveOccurred())
			Expect(vt.NodeUUID).To(Equal(b.UUID))
			Expect(vt.Extra).To(Equal(model.JSONObject{"other": "kept", "mine": float64(1)}))
			vc, err := rpc.UpdateVolumeConnector.Call(ctx, api, rpc.VolumeConnectorArgs{VolumeConnectorID: c.UUID, Patch: []byte(move), APIVersion: "1.32"})
			Expect(err).NotTo(HaveOccurred())
			Expect(vc.NodeUUID).To(Equal(b.UUID))
			Expect(vc.Extra).To(Equal(model.JSONObject{"other": "kept", "mine": float64(1)}))
			stored, err = e.store.GetVolumeTarget(ctx, t.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.NodeUUID).To(Equal(b.UUID))
			Expect(stored.Extra).To(HaveKey("other"))

			_, err = rpc.UpdateVolumeTarget.Call(ctx, api, rpc.VolumeTargetArgs{VolumeTargetID: t.UUID,
				Patch: []byte(`[{"op": "remove", "path": "/extra/gone"}]`), APIVersion: "1.32"})
			Expect(err).To(haveKind(errs.KindPatchError, http.StatusBadRequest))
			_, err = rpc.UpdateVolumeConnector.Call(ctx, api, rpc.VolumeConnectorArgs{VolumeConnectorID: c.UUID,
				Patch: []byte(`[{"op": "add", "path": "/extra/x", "value": 1}]`), APIVersion: "one"})
			Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
			Expect(e.node(ctx, a.UUID).Reservation).To(BeNil())
			Expect(e.node(ctx, b.UUID).Reservation).To(BeNil())
		})

		It("refuses updates and deletes unless the node is powered off, whatever its provision state", func() {
			for _, state := range []states.State{states.AdoptFail, states.Manageable, states.Enroll} {
				n := e.createNode(ctx, state, func(n *model.Node) { n.PowerState = ptr(states.PowerOn) })
				t, c := target(n), connector(n, "on")
				_, err := rpc.UpdateVolumeTarget.Call(ctx, api, rpc.VolumeTargetArgs{Target: t})
				Expect(errs.Message(err)).To(HaveSuffix(`while it is in state "power on".`))
				err = rpc.DestroyVolumeTarget.Call(ctx, api, rpc.VolumeTargetArgs{Target: t})
				Expect(errs.Status(err)).To(Equal(http.StatusBadRequest), state)
				Expect(errs.Message(err)).To(Equal(`The requested action "volume target deletion" can not be performed on node "` + n.UUID + `" while it is in state "power on".`))
				err = rpc.DestroyVolumeConnector.Call(ctx, api, rpc.VolumeConnectorArgs{Connector: c})
				Expect(errs.Message(err)).To(HaveSuffix(`while it is in state "power on".`), state)
				_, err = e.store.GetVolumeTarget(ctx, t.UUID)
				Expect(err).NotTo(HaveOccurred(), "the refused delete left the target")
				_, err = e.store.GetVolumeConnector(ctx, c.UUID)
				Expect(err).NotTo(HaveOccurred(), "the refused delete left the connector")
				Expect(e.node(ctx, n.UUID).Reservation).To(BeNil())
			}

			n := e.createNode(ctx, states.AdoptFail)
			t := target(n)
			err := rpc.DestroyVolumeTarget.Call(ctx, api, rpc.VolumeTargetArgs{Target: t})
			Expect(errs.Message(err)).To(HaveSuffix(`while it is in state "None".`), "an unknown power state is not off")

			off(n)
			Expect(e.store.SaveNode(ctx, n)).To(Succeed())
			Expect(rpc.DestroyVolumeTarget.Call(ctx, api, rpc.VolumeTargetArgs{Target: t})).To(Succeed())
			_, err = e.store.GetVolumeTarget(ctx, t.UUID)
			Expect(errs.Is(err, errs.KindVolumeTargetNotFound)).To(BeTrue())
		})

		Context("with allow_volume_delete_unless_powered_off", func() {
			BeforeEach(func() {
				mods = append(mods, func(cfg *config.Config) { cfg.Conductor.AllowVolumeDeleteUnlessOff = true })
			})

			It("deletes in manageable, enroll and adopt failed while powered on, and still not in active", func() {
				on := func(n *model.Node) { n.PowerState = ptr(states.PowerOn) }
				for _, state := range []states.State{states.AdoptFail, states.Manageable, states.Enroll} {
					n := e.createNode(ctx, state, on)
					c := connector(n, "on")
					_, err := rpc.UpdateVolumeConnector.Call(ctx, api, rpc.VolumeConnectorArgs{Connector: c})
					Expect(errs.Message(err)).To(HaveSuffix(`while it is in state "power on".`), "updates still need power off")
					Expect(rpc.DestroyVolumeConnector.Call(ctx, api, rpc.VolumeConnectorArgs{Connector: c})).To(Succeed(), state)
					_, err = e.store.GetVolumeConnector(ctx, c.UUID)
					Expect(errs.Is(err, errs.KindVolumeConnectorNotFound)).To(BeTrue())
				}
				t := target(e.createNode(ctx, states.Active, on))
				Expect(errs.Status(rpc.DestroyVolumeTarget.Call(ctx, api, rpc.VolumeTargetArgs{Target: t}))).To(Equal(http.StatusBadRequest))
			})
		})
	})
})
