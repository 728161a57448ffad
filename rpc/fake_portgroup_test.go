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

// The fake answers port group updates with the object it was sent, its
// updated_at set, and refuses deletions as for a group with ports.

func (f *fakeConductor) UpdatePortgroup(ctx context.Context, args PortgroupArgs) (model.Portgroup, error) {
	pg := args.Portgroup
	now := time.Now().UTC()
	pg.UpdatedAt = &now
	return pg, nil
}

func (f *fakeConductor) DestroyPortgroup(ctx context.Context, args PortgroupArgs) error {
	return errs.New(errs.KindInvalidState, "Cannot complete the requested action because portgroup %s contains ports.", args.Portgroup.UUID)
}

var _ = Describe("port group methods over the in-process transport", func() {
	var cond Endpoint
	var fake *fakeConductor

	BeforeEach(func() {
		fake, cond = serveFake()
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
})
