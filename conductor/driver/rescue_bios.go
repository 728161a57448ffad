package driver

import "context"

// RescueInterface boots a deployed node into a rescue ramdisk and back.
type RescueInterface interface {
	Interface
	// Rescue returns Done when the rescue system is up, or Wait when its
	// ramdisk will call back. passwordHash is what the rescue user's
	// password is set from; the clear password never reaches the driver.
	Rescue(ctx context.Context, t TaskContext, passwordHash string) (Result, error)
	// Unrescue returns Done once the instance runs again.
	Unrescue(ctx context.Context, t TaskContext) (Result, error)
}

// BIOSSetting is one BIOS setting of a node.
type BIOSSetting struct {
	Name  string
	Value string
}

// BIOSInterface reads a node's BIOS settings.
type BIOSInterface interface {
	Interface
	// Settings returns the node's current settings, sorted by name.
	Settings(ctx context.Context, t TaskContext) ([]BIOSSetting, error)
}
