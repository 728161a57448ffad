// Package builtin lists the hardware types compiled into Ferric and builds
// the registry of the enabled ones.
package builtin

import (
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/conductor/driver/ipmi"
	"github.com/ferricbm/ferric/conductor/driver/iscsideploy"
	"github.com/ferricbm/ferric/conductor/driver/pxe"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
)

// PXEIPMIToolName is the classic driver name kept as a hardware type:
// ipmitool power and management, pxe boot, iscsi deploy.
const PXEIPMIToolName = "pxe_ipmitool"

// Registry enables the named hardware types ([conductor]
// enabled_hardware_types) with the default configuration. Each call gets
// its own fake-hardware fleet.
func Registry(enabled []string) (*driver.Registry, error) {
	cfg := config.Defaults()
	cfg.Conductor.EnabledHardwareTypes = enabled
	return Configured(cfg, nil)
}

// Configured enables [conductor] enabled_hardware_types, their drivers
// set up from cfg (the [ipmi], [deploy], [pxe] and [iscsi] sections, power
// timeouts) and logging to log (nil: discarded).
func Configured(cfg config.Config, log logrus.FieldLogger) (*driver.Registry, error) {
	boot := pxe.New(pxe.OptionsFrom(cfg, log))
	deploy := iscsideploy.New(iscsideploy.OptionsFrom(cfg, log))
	hw := ipmi.New(ipmi.OptionsFrom(cfg, log))
	one := func(name string, impl driver.Interface) []driver.Implementation {
		return []driver.Implementation{{Name: name, Impl: impl}}
	}
	ipmiType := hw.HardwareType(map[hwcatalog.InterfaceType][]driver.Implementation{
		hwcatalog.Boot:   one(pxe.Name, boot),
		hwcatalog.Deploy: one(iscsideploy.Name, deploy),
		hwcatalog.Vendor: {{Name: "no-vendor", Impl: driver.NoOp{}}, {Name: iscsideploy.Name, Impl: deploy.Vendor()}},
	})
	// The classic driver answered pass_deploy_info without naming a vendor
	// interface.
	classic := hw.HardwareType(map[hwcatalog.InterfaceType][]driver.Implementation{
		hwcatalog.Boot:   one(pxe.Name, boot),
		hwcatalog.Deploy: one(iscsideploy.Name, deploy),
		hwcatalog.Vendor: {{Name: iscsideploy.Name, Impl: deploy.Vendor()}, {Name: "no-vendor", Impl: driver.NoOp{}}},
	})
	classic.Name = PXEIPMIToolName
	return driver.NewRegistry(cfg.Conductor.EnabledHardwareTypes, fake.New().HardwareType(), ipmiType, classic)
}
