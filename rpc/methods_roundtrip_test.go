package rpc

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
)

var _ = Describe("RAID, console, NMI, vendor, lookup and VIF methods", func() {
	var (
		fake *fakeConductor
		cond Endpoint
		ctx  context.Context
	)
	BeforeEach(func() {
		ctx = context.Background()
		fake, cond = serveFake()
	})

	It("round-trips arguments, results and typed errors", func() {
		Expect(SetTargetRAIDConfig.Call(ctx, cond, SetTargetRAIDConfigArgs{NodeID: "n1",
			Config: map[string]any{"logical_disks": []any{map[string]any{"raid_level": "1", "size_gb": 10.0}}}})).To(Succeed())
		Expect(errorOf(SetTargetRAIDConfig.Call(ctx, cond, SetTargetRAIDConfigArgs{NodeID: "n1"})).Kind).To(Equal(errs.KindInvalidParameterValue))

		props, err := GetRAIDLogicalDiskProperties.Call(ctx, cond, DriverArgs{DriverName: "fake-hardware"})
		Expect(err).NotTo(HaveOccurred())
		Expect(props).To(Equal(map[string]string{"raid_level": "level of fake-hardware"}))
		props, err = GetDriverProperties.Call(ctx, cond, DriverArgs{DriverName: "ipmi"})
		Expect(err).NotTo(HaveOccurred())
		Expect(props).To(Equal(map[string]string{"deploy_kernel": "kernel of ipmi"}))

		Expect(SetConsoleMode.Call(ctx, cond, SetConsoleModeArgs{NodeID: "n2", Enabled: true})).To(Succeed())
		info, err := GetConsoleInformation.Call(ctx, cond, NodeArgs{NodeID: "n2"})
		Expect(err).NotTo(HaveOccurred())
		Expect(info).To(Equal(map[string]any{"type": "fake", "url": "fake://n2"}))

		Expect(errorOf(InjectNMI.Call(ctx, cond, NodeArgs{NodeID: "n3"})).Kind).To(Equal(errs.KindUnsupportedDriverExtension))

		methods, err := GetNodeVendorPassthruMethods.Call(ctx, cond, NodeArgs{NodeID: "n4"})
		Expect(err).NotTo(HaveOccurred())
		Expect(methods["m"].Async).To(BeTrue())
		Expect(methods["m"].RequireExclusiveLock).To(HaveValue(BeTrue()))
		dmethods, err := GetDriverVendorPassthruMethods.Call(ctx, cond, DriverArgs{DriverName: "d"})
		Expect(err).NotTo(HaveOccurred())
		Expect(dmethods["d"].HTTPMethods).To(Equal([]string{"GET"}))
		Expect(dmethods["d"].RequireExclusiveLock).To(BeNil())
		res, err := DriverVendorPassthru.Call(ctx, cond, DriverVendorPassthruArgs{DriverName: "d", Method: "x", HTTPMethod: "GET", Info: map[string]any{"a": "b"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Return).To(Equal(map[string]any{"a": "b"}))

		nt, err := GetNodeWithToken.Call(ctx, cond, LookupArgs{NodeID: "n5"})
		Expect(err).NotTo(HaveOccurred())
		Expect(nt.Node.UUID).To(Equal("n5"))
		Expect(nt.AgentToken).To(Equal("tok-n5"))

		vifs, err := VIFList.Call(ctx, cond, NodeArgs{NodeID: "n6"})
		Expect(err).NotTo(HaveOccurred())
		Expect(vifs).To(Equal([]VIF{{ID: "vif-n6"}}))
		Expect(VIFAttach.Call(ctx, cond, VIFAttachArgs{NodeID: "n6", VIF: VIF{ID: "v1"}})).To(Succeed())
		Expect(errorOf(VIFAttach.Call(ctx, cond, VIFAttachArgs{NodeID: "n6"})).Kind).To(Equal(errs.KindMissingParameterValue))
		Expect(errorOf(VIFDetach.Call(ctx, cond, VIFDetachArgs{NodeID: "n6", VIFID: "v9"})).Message).To(
			Equal("Unable to detach VIF v9 from node n6 because it is not attached to it."))
		Expect(fake.callCount(VIFAttach.Name, "n6")).To(Equal(2))
	})
})
