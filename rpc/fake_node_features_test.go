package rpc

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
)

// The fake refuses to remove a trait named "MISSING", rescues only with
// a password "good", and reports one BIOS setting.

func (f *fakeConductor) AddNodeTraits(ctx context.Context, args NodeTraitsArgs) error {
	f.record(ctx, MethodAddNodeTraits, args.NodeID)
	return nil
}

func (f *fakeConductor) RemoveNodeTraits(ctx context.Context, args NodeTraitsArgs) error {
	f.record(ctx, MethodRemoveNodeTraits, args.NodeID)
	for _, t := range args.Traits {
		if t == "MISSING" {
			return errs.New(errs.KindNotFound, "Node %s doesn't have a trait '%s'", args.NodeID, t)
		}
	}
	return nil
}

func (f *fakeConductor) DoNodeRescue(ctx context.Context, args RescueArgs) error {
	f.record(ctx, MethodDoNodeRescue, args.NodeID)
	if args.RescuePassword != "good" {
		return errs.InvalidParameterValue("bad password")
	}
	return nil
}

func (f *fakeConductor) DoNodeUnrescue(ctx context.Context, args NodeArgs) error {
	f.record(ctx, MethodDoNodeUnrescue, args.NodeID)
	return nil
}

func (f *fakeConductor) GetBIOSSettings(ctx context.Context, args NodeArgs) ([]BIOSSetting, error) {
	f.record(ctx, MethodGetBIOSSettings, args.NodeID)
	return []BIOSSetting{{Name: "BootMode", Value: "Uefi"}}, nil
}

var _ = Describe("traits, rescue and BIOS methods over the in-process transport", func() {
	var cond ConductorAPI
	var fake *fakeConductor

	BeforeEach(func() {
		t := NewInProcess()
		DeferCleanup(t.Close)
		fake = newFakeConductor()
		host := uniqueHost()
		stop, err := Serve(context.Background(), t, host, fake, testLogger())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
		cond = NewClient(t, 10*time.Second).Conductor(host)
	})

	It("reaches the conductor and carries typed errors back", func() {
		ctx := context.Background()
		Expect(cond.AddNodeTraits(ctx, NodeTraitsArgs{NodeID: "n1", Traits: []string{"CUSTOM_A"}, Replace: true})).To(Succeed())
		err := cond.RemoveNodeTraits(ctx, NodeTraitsArgs{NodeID: "n1", Traits: []string{"MISSING"}})
		e, ok := errs.As(err)
		Expect(ok).To(BeTrue())
		Expect(e.HTTPStatus()).To(Equal(http.StatusNotFound))
		Expect(cond.DoNodeRescue(ctx, RescueArgs{NodeID: "n1", RescuePassword: "good"})).To(Succeed())
		Expect(errs.Is(cond.DoNodeRescue(ctx, RescueArgs{NodeID: "n1", RescuePassword: "bad"}), errs.KindInvalidParameterValue)).To(BeTrue())
		Expect(cond.DoNodeUnrescue(ctx, NodeArgs{NodeID: "n1"})).To(Succeed())
		settings, err := cond.GetBIOSSettings(ctx, NodeArgs{NodeID: "n1"})
		Expect(err).NotTo(HaveOccurred())
		Expect(settings).To(Equal([]BIOSSetting{{Name: "BootMode", Value: "Uefi"}}))
		Expect(fake.callCount(MethodAddNodeTraits, "n1")).To(Equal(1))
		Expect(fake.callCount(MethodDoNodeRescue, "n1")).To(Equal(2))
	})
})
