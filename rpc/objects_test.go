package rpc

import (
	"context"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

var _ = Describe("traits, rescue, BIOS, port group and volume methods over the in-process transport", func() {
	var cond Endpoint
	var fake *fakeConductor

	BeforeEach(func() {
		fake, cond = serveFake()
	})

	It("reaches the conductor and carries typed errors back", func() {
		ctx := context.Background()
		Expect(AddNodeTraits.Call(ctx, cond, NodeTraitsArgs{NodeID: "n1", Traits: []string{"CUSTOM_A"}, Replace: true})).To(Succeed())
		err := RemoveNodeTraits.Call(ctx, cond, NodeTraitsArgs{NodeID: "n1", Traits: []string{"MISSING"}})
		e, ok := errs.As(err)
		Expect(ok).To(BeTrue())
		Expect(e.HTTPStatus()).To(Equal(http.StatusNotFound))
		Expect(DoNodeRescue.Call(ctx, cond, RescueArgs{NodeID: "n1", RescuePassword: "good"})).To(Succeed())
		Expect(errs.Is(DoNodeRescue.Call(ctx, cond, RescueArgs{NodeID: "n1", RescuePassword: "bad"}), errs.KindInvalidParameterValue)).To(BeTrue())
		Expect(DoNodeUnrescue.Call(ctx, cond, NodeArgs{NodeID: "n1"})).To(Succeed())
		settings, err := GetBIOSSettings.Call(ctx, cond, NodeArgs{NodeID: "n1"})
		Expect(err).NotTo(HaveOccurred())
		Expect(settings).To(Equal([]BIOSSetting{{Name: "BootMode", Value: "Uefi"}}))
		Expect(fake.callCount(AddNodeTraits.Name, "n1")).To(Equal(1))
		Expect(fake.callCount(DoNodeRescue.Name, "n1")).To(Equal(2))
	})

	It("carries a port group both ways", func() {
		name, mode := "bond0", "802.3ad"
		in := model.Portgroup{UUID: "pg1", NodeUUID: "n1", Name: &name, Mode: &mode, StandalonePortsSupported: true,
			Properties: model.JSONObject{"miimon": "100"}}
		out, err := UpdatePortgroup.Call(context.Background(), cond, PortgroupArgs{Portgroup: in})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.UUID).To(Equal("pg1"))
		Expect(out.NodeUUID).To(Equal("n1"))
		Expect(out.Name).To(HaveValue(Equal("bond0")))
		Expect(out.Mode).To(HaveValue(Equal("802.3ad")))
		Expect(out.StandalonePortsSupported).To(BeTrue())
		Expect(out.Properties).To(HaveKeyWithValue("miimon", "100"))
		Expect(out.UpdatedAt).NotTo(BeNil())
		Expect(fake.callCount(UpdatePortgroup.Name, "pg1")).To(Equal(1))
	})

	It("keeps the kind and status of the conductor's errors", func() {
		err := DestroyPortgroup.Call(context.Background(), cond, PortgroupArgs{Portgroup: model.Portgroup{UUID: "pg1"}})
		e := errorOf(err)
		Expect(e.Kind).To(Equal(errs.KindInvalidState))
		Expect(e.HTTPStatus()).To(Equal(http.StatusConflict))
		Expect(e.Message).To(ContainSubstring("portgroup pg1 contains ports"))
		Expect(fake.callCount(DestroyPortgroup.Name, "pg1")).To(Equal(1))
	})

	It("carries a connector both ways", func() {
		in := model.VolumeConnector{UUID: "c1", NodeUUID: "n1", Type: "iqn", ConnectorID: "iqn.x", Extra: model.JSONObject{"a": "b"}}
		out, err := UpdateVolumeConnector.Call(context.Background(), cond, VolumeConnectorArgs{Connector: in})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.UUID).To(Equal("c1"))
		Expect(out.NodeUUID).To(Equal("n1"))
		Expect(out.ConnectorID).To(Equal("iqn.x"))
		Expect(out.Extra).To(HaveKeyWithValue("a", "b"))
		Expect(out.UpdatedAt).NotTo(BeNil())
		Expect(fake.callCount(UpdateVolumeConnector.Name, "c1")).To(Equal(1))
	})

	It("carries a target's properties and boot index", func() {
		in := model.VolumeTarget{UUID: "t1", NodeUUID: "n1", VolumeType: "iscsi", BootIndex: 3, VolumeID: "v",
			Properties: model.JSONObject{"auth_password": "pw", "target_lun": 1.0}}
		out, err := UpdateVolumeTarget.Call(context.Background(), cond, VolumeTargetArgs{Target: in})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.BootIndex).To(Equal(3))
		Expect(out.Properties).To(HaveKeyWithValue("auth_password", "pw"))
	})

	It("keeps the kind and status of the conductor's errors", func() {
		err := DestroyVolumeConnector.Call(context.Background(), cond, VolumeConnectorArgs{Connector: model.VolumeConnector{UUID: "c1", NodeUUID: "n1"}})
		e := errorOf(err)
		Expect(e.Kind).To(Equal(errs.KindInvalidStateRequested))
		Expect(e.HTTPStatus()).To(Equal(http.StatusBadRequest))
		Expect(e.Message).To(ContainSubstring(`"volume connector deletion"`))

		err = DestroyVolumeTarget.Call(context.Background(), cond, VolumeTargetArgs{Target: model.VolumeTarget{UUID: "t1", NodeUUID: "n1"}})
		e = errorOf(err)
		Expect(e.Kind).To(Equal(errs.KindNodeLocked))
		Expect(e.HTTPStatus()).To(Equal(http.StatusConflict))
	})
})
