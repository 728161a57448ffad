package rpc

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// The fake answers volume updates with the object it was sent, its
// updated_at set, and refuses deletions as a node powered on would.

func (f *fakeConductor) UpdateVolumeConnector(ctx context.Context, args VolumeConnectorArgs) (model.VolumeConnector, error) {
	c := args.Connector
	now := time.Now().UTC()
	c.UpdatedAt = &now
	return c, nil
}

func (f *fakeConductor) DestroyVolumeConnector(ctx context.Context, args VolumeConnectorArgs) error {
	return errs.InvalidStateRequested("volume connector deletion", args.Connector.NodeUUID, "power on")
}

func (f *fakeConductor) UpdateVolumeTarget(ctx context.Context, args VolumeTargetArgs) (model.VolumeTarget, error) {
	t := args.Target
	now := time.Now().UTC()
	t.UpdatedAt = &now
	return t, nil
}

func (f *fakeConductor) DestroyVolumeTarget(ctx context.Context, args VolumeTargetArgs) error {
	return errs.NodeLocked(args.Target.NodeUUID, "other-host")
}

var _ = Describe("volume methods over the in-process transport", func() {
	var cond Endpoint
	var fake *fakeConductor

	BeforeEach(func() {
		fake, cond = serveFake()
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
