// Package builtin lists the hardware types compiled into Ferric and builds
// the registry of the enabled ones.
package builtin

import (
	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/fake"
)

// Registry enables the named hardware types ([conductor]
// enabled_hardware_types). Each call gets its own fake-hardware fleet.
func Registry(enabled []string) (*driver.Registry, error) {
	return driver.NewRegistry(enabled, fake.New().HardwareType())
}
