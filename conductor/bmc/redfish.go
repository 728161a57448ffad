package bmc

import (
	"context"

	"github.com/ferricbm/ferric/conductor/bmc/redfish"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/states"
)

// Redfish adapts the Redfish client of an iLO 5 or later, or of another
// vendor's BMC.
type Redfish struct{ C *redfish.Client }

var _ Client = Redfish{}

var (
	toRedfish   = map[string]string{BootPXE: redfish.BootPxe, BootDisk: redfish.BootHdd, BootCDROM: redfish.BootCd}
	fromRedfish = map[string]string{redfish.BootPxe: BootPXE, redfish.BootHdd: BootDisk, redfish.BootCd: BootCDROM}
	mediaTypes  = map[Media][]string{Floppy: {redfish.MediaFloppy}, CDROM: {redfish.MediaCD, redfish.MediaDVD}}
)

func (Redfish) Protocol() string { return "redfish" }

// PowerState counts a server on its way to a state as there already, as
// HPE's client and Ironic's Redfish driver do.
func (r Redfish) PowerState(ctx context.Context) (string, error) {
	s, err := r.C.System(ctx)
	if err != nil {
		return "", err
	}
	return powerState(s.PowerState), nil
}

func powerState(s string) string {
	switch s {
	case redfish.PowerOn, redfish.PowerPoweringOn:
		return states.PowerOn
	case redfish.PowerOff, redfish.PowerPoweringOff:
		return states.PowerOff
	}
	return states.PowerError
}

// PowerOn and PowerOff leave a server already in the state alone: some
// services refuse a reset that changes nothing.
func (r Redfish) PowerOn(ctx context.Context) error {
	return r.resetUnless(ctx, states.PowerOn, redfish.ResetOn)
}

func (r Redfish) PowerOff(ctx context.Context) error {
	return r.resetUnless(ctx, states.PowerOff, redfish.ResetForceOff)
}

func (r Redfish) SoftPowerOff(ctx context.Context) error {
	return r.resetUnless(ctx, states.PowerOff, redfish.ResetGracefulShutdown)
}

func (r Redfish) Reset(ctx context.Context) error { return r.C.Reset(ctx, redfish.ResetForceRestart) }

func (r Redfish) resetUnless(ctx context.Context, state, resetType string) error {
	s, err := r.C.System(ctx)
	if err != nil {
		return err
	}
	if powerState(s.PowerState) == state {
		return nil
	}
	return r.C.Reset(ctx, resetType)
}

func (r Redfish) BootDevice(ctx context.Context) (BootDevice, error) {
	s, err := r.C.System(ctx)
	if err != nil {
		return BootDevice{}, err
	}
	switch s.Boot.Enabled {
	case redfish.BootOnce:
		return known(fromRedfish[s.Boot.Target], false), nil
	case redfish.BootContinuous:
		return known(fromRedfish[s.Boot.Target], true), nil
	}
	return BootDevice{}, nil
}

func (r Redfish) SetBootDevice(ctx context.Context, device string, persistent bool) error {
	target, ok := toRedfish[device]
	if !ok {
		return errs.InvalidParameterValue("Boot device %q is not one of pxe, disk, cdrom.", device)
	}
	enabled := redfish.BootOnce
	if persistent {
		enabled = redfish.BootContinuous
	}
	return r.C.SetBootOverride(ctx, target, enabled)
}

func (r Redfish) InsertMedia(ctx context.Context, kind Media, url string) error {
	types, ok := mediaTypes[kind]
	if !ok {
		return errs.InvalidParameterValue("Virtual media kind %q is not floppy or cdrom.", kind)
	}
	return r.C.InsertMedia(ctx, url, types...)
}

func (r Redfish) EjectMedia(ctx context.Context, kind Media) error {
	types, ok := mediaTypes[kind]
	if !ok {
		return errs.InvalidParameterValue("Virtual media kind %q is not floppy or cdrom.", kind)
	}
	return r.C.EjectMedia(ctx, types...)
}
