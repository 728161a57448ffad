package builtin_test

import (
	"net"
	"net/http"
	"path/filepath"

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
		reg, err := builtin.Configured(cfg, nil, nil, nil)
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

	It("drives ilo, the classic iscsi_ilo and redfish with virtual-media boot and iscsi deploy", func() {
		cfg := config.Defaults()
		cfg.Conductor.EnabledHardwareTypes = []string{"ilo", "iscsi_ilo", "redfish"}
		reg, err := builtin.Configured(cfg, nil, nil, nil)
		Expect(err).NotTo(HaveOccurred())
		for hw, want := range map[string]map[hwcatalog.InterfaceType]string{
			"ilo":       {hwcatalog.Power: "ilo", hwcatalog.Management: "ilo", hwcatalog.Boot: "ilo-virtual-media", hwcatalog.Deploy: "iscsi"},
			"iscsi_ilo": {hwcatalog.Power: "ilo", hwcatalog.Management: "ilo", hwcatalog.Boot: "ilo-virtual-media", hwcatalog.Deploy: "iscsi"},
			"redfish":   {hwcatalog.Power: "redfish", hwcatalog.Management: "redfish", hwcatalog.Boot: "redfish-virtual-media", hwcatalog.Deploy: "iscsi"},
		} {
			defaults, err := reg.Defaults(hw)
			Expect(err).NotTo(HaveOccurred())
			for it, name := range want {
				Expect(defaults).To(HaveKeyWithValue(it, name), hw)
			}
			Expect(reg.Enabled(hw, hwcatalog.Boot)).To(ContainElement("pxe"), hw)
		}
		Expect(reg.Enabled("iscsi_ilo", hwcatalog.Vendor)).To(Equal([]string{"iscsi", "no-vendor"}))
	})

	It("serves the virtual media folder through signed URLs only when a virtual-media type publishes there", func(ctx SpecContext) {
		for _, types := range [][]string{{"ipmi"}, {"ipmi", "ilo"}} {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			Expect(err).NotTo(HaveOccurred())
			base := "http://" + l.Addr().String()
			l.Close()
			cfg := config.Defaults()
			cfg.Conductor.EnabledHardwareTypes = types
			cfg.Deploy.HTTPURL, cfg.Deploy.HTTPRoot = base, GinkgoT().TempDir()
			reg, err := builtin.Configured(cfg, nil, nil, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(reg.Services()).To(HaveLen(1))
			Expect(reg.Services()[0].StartService(ctx)).To(Succeed())
			resp, err := http.Get(base + "/vmedia/image-1")
			Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			Expect(reg.Services()[0].StopService(ctx)).To(Succeed())
			if len(types) == 1 {
				Expect(resp.StatusCode).To(Equal(http.StatusNotFound), "no publisher: the folder does not exist for the server")
			} else {
				Expect(resp.StatusCode).To(Equal(http.StatusForbidden), "the publisher asks for a signature")
				Expect(filepath.Join(cfg.Deploy.HTTPRoot, "vmedia")).To(BeADirectory())
			}
		}
	})

	It("runs no boot file server when only fake-hardware is enabled", func() {
		reg, err := builtin.Registry([]string{"fake-hardware"})
		Expect(err).NotTo(HaveOccurred())
		Expect(reg.Services()).To(BeEmpty())
	})
})
