package ilo

import (
	"context"
	"maps"
	"slices"

	"github.com/ferricbm/ferric/conductor/bmc"
	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/errs"
)

var bootDevices = []string{bmc.BootPXE, bmc.BootDisk, bmc.BootCDROM}

// Management is the management interface of a flavor: the node's next
// boot device.
type Management struct {
	h *Hardware
	f Flavor
}

var (
	_ driver.ManagementInterface = (*Management)(nil)
	_ driver.PropertyDescriber   = (*Management)(nil)
)

// Validate checks the node's driver_info; it does not contact the BMC.
func (m *Management) Validate(_ context.Context, t driver.TaskContext) error {
	_, err := m.f.parse(t.Node())
	return err
}

// Properties describes the driver_info keys this interface reads.
func (m *Management) Properties() map[string]string { return maps.Clone(m.f.properties) }

// SupportedBootDevices are the devices SetBootDevice accepts.
func (m *Management) SupportedBootDevices(context.Context, driver.TaskContext) ([]string, error) {
	return slices.Clone(bootDevices), nil
}

// SetBootDevice sets the device the node boots from next time, or every
// time when persistent.
func (m *Management) SetBootDevice(ctx context.Context, t driver.TaskContext, device string, persistent bool) error {
	if !slices.Contains(bootDevices, device) {
		return errs.InvalidParameterValue("Invalid boot device %s specified.", device)
	}
	c, err := m.h.Controller(ctx, m.f, t.Node())
	if err != nil {
		return err
	}
	return c.SetBootDevice(ctx, device, persistent)
}

// GetBootDevice reads the one-time device when one is set, else the
// persistent one; neither is an unknown device.
func (m *Management) GetBootDevice(ctx context.Context, t driver.TaskContext) (driver.BootDevice, error) {
	c, err := m.h.Controller(ctx, m.f, t.Node())
	if err != nil {
		return driver.BootDevice{}, err
	}
	bd, err := c.BootDevice(ctx)
	if err != nil {
		return driver.BootDevice{}, err
	}
	if bd.Device == "" {
		return driver.BootDevice{}, nil
	}
	return driver.BootDevice{Device: &bd.Device, Persistent: bd.Persistent}, nil
}
