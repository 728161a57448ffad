// Package bmc is what a driver asks of a server's BMC, whatever protocol
// the BMC speaks: power with polling until the server reaches the state,
// one-time and persistent boot devices, and virtual media by kind. Connect
// picks RIBCL or Redfish for an iLO as HPE's own client does (docs/ilo.md).
package bmc

import (
	"context"
	"fmt"
	"time"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/states"
)

// Boot devices, in Ironic's names.
const (
	BootPXE   = "pxe"
	BootDisk  = "disk"
	BootCDROM = "cdrom"
)

// Media is a kind of virtual media device.
type Media string

const (
	Floppy Media = "floppy"
	CDROM  Media = "cdrom"
)

// BootDevice is where a server boots next. An unknown device has an empty
// Device and a nil Persistent, as Ironic answers.
type BootDevice struct {
	Device     string
	Persistent *bool
}

// Client is one protocol's way of doing what Controller needs. Power
// methods return once the BMC took the command, not when the server
// reached the state.
type Client interface {
	// Protocol names the protocol for logs: "ribcl" or "redfish".
	Protocol() string
	// PowerState is states.PowerOn, states.PowerOff or states.PowerError.
	PowerState(ctx context.Context) (string, error)
	PowerOn(ctx context.Context) error
	// PowerOff is a hard power off.
	PowerOff(ctx context.Context) error
	// SoftPowerOff asks the operating system to shut down.
	SoftPowerOff(ctx context.Context) error
	// Reset is a hard reset of a running server.
	Reset(ctx context.Context) error
	BootDevice(ctx context.Context) (BootDevice, error)
	SetBootDevice(ctx context.Context, device string, persistent bool) error
	// InsertMedia replaces what the device holds with the image at url,
	// which the BMC fetches itself.
	InsertMedia(ctx context.Context, kind Media, url string) error
	// EjectMedia empties the device; an empty device is not an error.
	EjectMedia(ctx context.Context, kind Media) error
}

// Poll is how a power change is confirmed: the state is read every
// Interval, at most Retries times.
type Poll struct {
	Interval time.Duration
	Retries  int
}

// DefaultPoll is Ironic's iLO power_wait and power_retry: 6 reads 2s apart.
var DefaultPoll = Poll{Interval: 2 * time.Second, Retries: 6}

// Controller drives one BMC.
type Controller struct {
	Client
	Poll Poll
	// Product is the model the BMC reported when Connect chose the
	// protocol, e.g. "ProLiant DL380 Gen9".
	Product string
}

// SetPowerState turns the server on, off, or asks its OS to shut down
// (states.SoftPowerOff), then reads the power state until it matches.
// states.Rebooting reboots.
func (c *Controller) SetPowerState(ctx context.Context, target string) error {
	switch target {
	case states.PowerOn:
		return c.change(ctx, c.Client.PowerOn, "power on", states.PowerOn, false)
	case states.PowerOff:
		return c.change(ctx, c.Client.PowerOff, "power off", states.PowerOff, false)
	case states.SoftPowerOff:
		return c.change(ctx, c.Client.SoftPowerOff, "soft power off", states.PowerOff, false)
	case states.Rebooting:
		return c.Reboot(ctx)
	}
	return errs.InvalidParameterValue("set_power_state called with an invalid power state: %s.", target)
}

// Reboot resets a running server and powers on one that is off; either
// way it waits for the server to be on.
func (c *Controller) Reboot(ctx context.Context) error {
	st, err := c.PowerState(ctx)
	if err != nil {
		return fmt.Errorf("%s get power state: %w", c.Protocol(), err)
	}
	if st == states.PowerOn {
		// Right after a reset the server still reads as on: the first
		// read proves nothing.
		return c.change(ctx, c.Client.Reset, "reboot", states.PowerOn, true)
	}
	return c.change(ctx, c.Client.PowerOn, "power on", states.PowerOn, false)
}

func (c *Controller) change(ctx context.Context, command func(context.Context) error, name, want string, skipFirst bool) error {
	if err := command(ctx); err != nil {
		return fmt.Errorf("%s %s: %w", c.Protocol(), name, err)
	}
	p := c.Poll
	if p.Interval <= 0 || p.Retries <= 0 {
		p = DefaultPoll
	}
	var last string
	var lastErr error
	for i := 0; i < p.Retries; i++ {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s: waiting for %s: %w", c.Protocol(), name, want, ctx.Err())
		case <-time.After(p.Interval):
		}
		if skipFirst && i == 0 {
			continue
		}
		// A BMC busy with the change may fail a read; the next one
		// counts, and the last failure is reported if none succeeds.
		last, lastErr = c.PowerState(ctx)
		if lastErr == nil && last == want {
			return nil
		}
	}
	e := errs.New(errs.KindPowerStateFailure, "Failed to set node power state to %s within %s.", want, time.Duration(p.Retries)*p.Interval)
	if lastErr != nil {
		e.Err = lastErr
	}
	return e
}
