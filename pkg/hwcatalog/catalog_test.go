package hwcatalog_test

import (
	"errors"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
)

func row(hw, it, name string, def bool) model.ConductorHardwareInterface {
	return model.ConductorHardwareInterface{HardwareType: hw, InterfaceType: it, InterfaceName: name, Default: def}
}

func ptr(s string) *string { return &s }

var _ = Describe("Catalog", func() {
	// Two conductors: one offers ipmi with iscsi deploy only, the other
	// ipmi with direct (its default) and iscsi, plus fake-hardware.
	rows := []model.ConductorHardwareInterface{
		row("ipmi", "deploy", "iscsi", true), row("ipmi", "power", "ipmitool", true),
		row("fake-hardware", "power", "fake", true),
		row("ipmi", "deploy", "direct", true), row("ipmi", "deploy", "iscsi", false), row("ipmi", "power", "ipmitool", true),
	}

	It("merges the conductors' offers, the first default of each interface type first", func() {
		c := hwcatalog.New(rows)
		Expect(c.HardwareTypes()).To(Equal([]string{"fake-hardware", "ipmi"}))
		Expect(c.Enabled("ipmi", hwcatalog.Deploy)).To(Equal([]string{"iscsi", "direct"}))
		Expect(c.Defaults("ipmi")).To(Equal(map[hwcatalog.InterfaceType]string{
			hwcatalog.Deploy: "iscsi", hwcatalog.Power: "ipmitool"}))
		Expect(c.Rows()).To(ConsistOf(row("fake-hardware", "power", "fake", true),
			row("ipmi", "deploy", "iscsi", true), row("ipmi", "deploy", "direct", false), row("ipmi", "power", "ipmitool", true)))
	})

	It("puts a default listed after other implementations first", func() {
		c := hwcatalog.New([]model.ConductorHardwareInterface{
			row("ipmi", "deploy", "direct", false), row("ipmi", "deploy", "ramdisk", false), row("ipmi", "deploy", "iscsi", true)})
		Expect(c.Enabled("ipmi", hwcatalog.Deploy)).To(Equal([]string{"iscsi", "direct", "ramdisk"}))
	})

	It("fills a node's unset interfaces with the defaults and keeps the ones it names", func() {
		c := hwcatalog.New(rows)
		n := &model.Node{Driver: "ipmi", DeployInterface: ptr("direct")}
		Expect(c.Resolve(n)).To(Succeed())
		Expect(n.DeployInterface).To(Equal(ptr("direct")))
		Expect(n.PowerInterface).To(Equal(ptr("ipmitool")))
		Expect(n.BootInterface).To(BeNil(), "no conductor offers a boot interface here")
	})

	It("refuses an implementation the hardware type does not offer, naming the valid ones", func() {
		c := hwcatalog.New(rows)
		err := c.Validate(&model.Node{Driver: "ipmi", DeployInterface: ptr("fake")})
		var e *errs.Error
		Expect(errors.As(err, &e)).To(BeTrue(), "an *errs.Error: %v", err)
		Expect(e.HTTPStatus()).To(Equal(http.StatusBadRequest))
		Expect(err.Error()).To(Equal(`Interface "fake" is not a valid deploy interface for hardware type "ipmi". Valid deploy interfaces are: iscsi, direct.`))
	})

	It("reports a hardware type nobody offers as DriverNotFound", func() {
		for _, c := range []*hwcatalog.Catalog{hwcatalog.New(rows), hwcatalog.New(nil)} {
			err := c.Resolve(&model.Node{Driver: "redfish"})
			Expect(errs.Is(err, errs.KindDriverNotFound)).To(BeTrue(), "%v", err)
			_, err = c.Defaults("redfish")
			Expect(errs.Is(err, errs.KindDriverNotFound)).To(BeTrue())
		}
	})
})
