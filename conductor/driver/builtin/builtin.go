// Package builtin lists the hardware types compiled into Ferric and builds
// the registry of the enabled ones.
package builtin

import (
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/conductor/driver/ipmi"
	"github.com/ferricbm/ferric/pkg/config"
)

// Registry enables the named hardware types ([conductor]
// enabled_hardware_types) with the default configuration. Each call gets
// its own fake-hardware fleet.
func Registry(enabled []string) (*driver.Registry, error) {
	cfg := config.Defaults()
	cfg.Conductor.EnabledHardwareTypes = enabled
	return Configured(cfg, nil)
}

// Configured enables [conductor] enabled_hardware_types, their drivers
// set up from cfg (the [ipmi] section, power timeouts) and logging to log
// (nil: the standard logger).
func Configured(cfg config.Config, log logrus.FieldLogger) (*driver.Registry, error) {
	return driver.NewRegistry(cfg.Conductor.EnabledHardwareTypes,
		fake.New().HardwareType(),
		// Enabling ipmi needs its boot and deploy implementations here.
		ipmi.New(ipmi.OptionsFrom(cfg, log)).HardwareType(nil),
	)
}
