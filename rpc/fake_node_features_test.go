package rpc

import (
	"context"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
)

// The fake refuses to remove a trait named "MISSING", rescues only with
// a password "good", and reports one BIOS setting.

func (f *fakeConductor) AddNodeTraits(ctx context.Context, args NodeTraitsArgs) error {
	return nil
}

func (f *fakeConductor) RemoveNodeTraits(ctx context.Context, args NodeTraitsArgs) error {
	for _, t := range args.Traits {
		if t == "MISSING" {
			return errs.New(errs.KindNotFound, "Node %s doesn't have a trait '%s'", args.NodeID, t)
		}
	}
	return nil
}

func (f *fakeConductor) DoNodeRescue(ctx context.Context, args RescueArgs) error {
	if args.RescuePassword != "good" {
		return errs.InvalidParameterValue("bad password")
	}
	return nil
}

func (f *fakeConductor) DoNodeUnrescue(ctx context.Context, args NodeArgs) error {
	return nil
}

func (f *fakeConductor) GetBIOSSettings(ctx context.Context, args NodeArgs) ([]BIOSSetting, error) {
	return []BIOSSetting{{Name: "BootMode", Value: "Uefi"}}, nil
}

var _ = Describe("traits, rescue and BIOS methods over the in-process transport", func() {
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
})
