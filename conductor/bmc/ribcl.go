package bmc

import (
	"context"

	"github.com/ferricbm/ferric/conductor/bmc/ribcl"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/states"
)

// RIBCL adapts the RIBCL client of an iLO 4 or older.
type RIBCL struct{ C *ribcl.Client }

var _ Client = RIBCL{}

// Ironic's boot device names and the iLO's (docs/ilo.md §Boot devices).
var (
	toILO   = map[string]string{BootPXE: ribcl.BootNetwork, BootDisk: ribcl.BootHDD, BootCDROM: ribcl.BootCDROM}
	fromILO = map[string]string{ribcl.BootNetwork: BootPXE, ribcl.BootHDD: BootDisk, ribcl.BootCDROM: BootCDROM}
	iloDev  = map[Media]string{Floppy: ribcl.DeviceFloppy, CDROM: ribcl.DeviceCDROM}
)

func (RIBCL) Protocol() string { return "ribcl" }

func (r RIBCL) PowerState(ctx context.Context) (string, error) {
	s, err := r.C.PowerStatus(ctx)
	if err != nil {
		return "", err
	}
	switch s {
	case "ON":
		return states.PowerOn, nil
	case "OFF":
		return states.PowerOff, nil
	}
	return states.PowerError, nil
}

func (r RIBCL) PowerOn(ctx context.Context) error      { return r.C.SetHostPower(ctx, true) }
func (r RIBCL) PowerOff(ctx context.Context) error     { return r.C.HoldPowerButton(ctx) }
func (r RIBCL) SoftPowerOff(ctx context.Context) error { return r.C.PressPowerButton(ctx) }
func (r RIBCL) Reset(ctx context.Context) error        { return r.C.ResetServer(ctx) }

// BootDevice is the one-time device when one is set, else the first of
// the persistent boot order.
func (r RIBCL) BootDevice(ctx context.Context) (BootDevice, error) {
	once, err := r.C.OneTimeBoot(ctx)
	if err != nil {
		return BootDevice{}, err
	}
	if once != ribcl.BootNormal {
		return known(fromILO[once], false), nil
	}
	order, err := r.C.PersistentBoot(ctx)
	if err != nil {
		return BootDevice{}, err
	}
	if len(order) == 0 {
		return BootDevice{}, nil
	}
	return known(fromILO[order[0].Class()], true), nil
}

func known(dev string, persistent bool) BootDevice {
	if dev == "" {
		return BootDevice{}
	}
	return BootDevice{Device: dev, Persistent: &persistent}
}

func (r RIBCL) SetBootDevice(ctx context.Context, device string, persistent bool) error {
	dev, ok := toILO[device]
	if !ok {
		return errs.InvalidParameterValue("Boot device %q is not one of pxe, disk, cdrom.", device)
	}
	if persistent {
		return r.C.UpdatePersistentBoot(ctx, []string{dev})
	}
	return r.C.SetOneTimeBoot(ctx, dev)
}

// InsertMedia is what Ironic's iLO driver does: empty the device, insert,
// and connect the image write-protected.
func (r RIBCL) InsertMedia(ctx context.Context, kind Media, url string) error {
	dev, ok := iloDev[kind]
	if !ok {
		return errs.InvalidParameterValue("Virtual media kind %q is not floppy or cdrom.", kind)
	}
	if err := r.C.EjectVirtualMedia(ctx, dev); err != nil {
		return err
	}
	if err := r.C.InsertVirtualMedia(ctx, url, dev); err != nil {
		return err
	}
	return r.C.SetVMStatus(ctx, dev, ribcl.VMConnect, true)
}

func (r RIBCL) EjectMedia(ctx context.Context, kind Media) error {
	dev, ok := iloDev[kind]
	if !ok {
		return errs.InvalidParameterValue("Virtual media kind %q is not floppy or cdrom.", kind)
	}
	return r.C.EjectVirtualMedia(ctx, dev)
}
