package builtin_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver/builtin"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
)

var _ = Describe("builtin hardware types", func() {
	It("drives ipmi and the classic pxe_ipmitool with pxe boot and iscsi deploy", func() {
		cfg := config.Defaults()
		cfg.Conductor.EnabledHardwareTypes = []string{"ipmi", builtin.PXEIPMIToolName}
		reg, err := builtin.Configured(cfg, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(reg.HardwareTypes()).To(Equal([]string{"ipmi", "pxe_ipmitool"}))
		for _, hw := range reg.HardwareTypes() {
			defaults, err := reg.Defaults(hw)
			Expect(err).NotTo(HaveOccurred())
			Expect(defaults).To(HaveKeyWithValue(hwcatalog.Power, "ipmitool"))
			Expect(defaults).To(HaveKeyWithValue(hwcatalog.Management, "ipmitool"))
			Expect(defaults).To(HaveKeyWithValue(hwcatalog.Boot, "pxe"))
			Expect(defaults).To(HaveKeyWithValue(hwcatalog.Deploy, "iscsi"))
		}
		Expect(reg.Enabled("ipmi", hwcatalog.Vendor)).To(Equal([]string{"no-vendor", "iscsi"}))
		Expect(reg.Enabled(builtin.PXEIPMIToolName, hwcatalog.Vendor)).To(Equal([]string{"iscsi", "no-vendor"}))
		Expect(reg.Services()).To(HaveLen(1), "one boot file server for both types")
	})

	It("runs no boot file server when only fake-hardware is enabled", func() {
		reg, err := builtin.Registry([]string{"fake-hardware"})
		Expect(err).NotTo(HaveOccurred())
		Expect(reg.Services()).To(BeEmpty())
	})
})
