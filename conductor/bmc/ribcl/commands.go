package ribcl

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Virtual media devices.
const (
	DeviceFloppy = "FLOPPY"
	DeviceCDROM  = "CDROM"
)

// Boot devices of one-time and persistent boot; BootNormal is "no
// one-time boot set".
const (
	BootNetwork = "NETWORK"
	BootHDD     = "HDD"
	BootCDROM   = "CDROM"
	BootNormal  = "Normal"
)

// Virtual media boot options of SetVMStatus.
const (
	VMBootOnce   = "BOOT_ONCE"
	VMBootAlways = "BOOT_ALWAYS"
	VMNoBoot     = "NO_BOOT"
	VMConnect    = "CONNECT"
	VMDisconnect = "DISCONNECT"
)

// ProductName is the server model, e.g. "ProLiant DL380 Gen9".
func (c *Client) ProductName(ctx context.Context) (string, error) {
	e, err := c.run(ctx, "get product name", serverRead, `<GET_PRODUCT_NAME/>`)
	if err != nil {
		return "", err
	}
	return childValue(e, "get product name", "PRODUCT_NAME")
}

// PowerStatus is "ON" or "OFF".
func (c *Client) PowerStatus(ctx context.Context) (string, error) {
	e, err := c.run(ctx, "get host power status", serverRead, `<GET_HOST_POWER_STATUS/>`)
	if err != nil {
		return "", err
	}
	if e == nil || e.Attr("HOST_POWER") == "" {
		return "", fmt.Errorf("iLO get host power status: answer has no HOST_POWER")
	}
	return strings.ToUpper(e.Attr("HOST_POWER")), nil
}

// SetHostPower turns the server on or off as a power switch would.
func (c *Client) SetHostPower(ctx context.Context, on bool) error {
	v := "No"
	if on {
		v = "Yes"
	}
	_, err := c.run(ctx, "set host power", serverWrite, `<SET_HOST_POWER HOST_POWER="`+v+`"/>`)
	return err
}

// HoldPowerButton is a hard power off; TOGGLE="NO" leaves a server that
// is already off alone instead of turning it on.
func (c *Client) HoldPowerButton(ctx context.Context) error {
	_, err := c.run(ctx, "hold power button", serverWrite, `<HOLD_PWR_BTN TOGGLE="NO"/>`)
	return err
}

// PressPowerButton asks the operating system to shut down.
func (c *Client) PressPowerButton(ctx context.Context) error {
	_, err := c.run(ctx, "press power button", serverWrite, `<PRESS_PWR_BTN/>`)
	return err
}

// ResetServer is a hard reset.
func (c *Client) ResetServer(ctx context.Context) error {
	_, err := c.run(ctx, "reset server", serverWrite, `<RESET_SERVER/>`)
	return err
}

// OneTimeBoot is the device of the next boot only, BootNormal if none.
func (c *Client) OneTimeBoot(ctx context.Context) (string, error) {
	e, err := c.run(ctx, "get one time boot", serverRead, `<GET_ONE_TIME_BOOT/>`)
	if err != nil {
		return "", err
	}
	return childValue(e, "get one time boot", "BOOT_TYPE")
}

// SetOneTimeBoot makes the next boot, only, use dev.
func (c *Client) SetOneTimeBoot(ctx context.Context, dev string) error {
	_, err := c.run(ctx, "set one time boot", serverWrite, `<SET_ONE_TIME_BOOT value="`+escape(dev)+`"/>`)
	return err
}

// BootEntry is one entry of the persistent boot order. In UEFI mode the
// value names a boot entry (Boot000A) and Description says what it is.
type BootEntry struct {
	Value       string
	Description string
}

// PersistentBoot is the boot order, first device first.
func (c *Client) PersistentBoot(ctx context.Context) ([]BootEntry, error) {
	e, err := c.run(ctx, "get persistent boot", serverRead, `<GET_PERSISTENT_BOOT/>`)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, fmt.Errorf("iLO get persistent boot: answer has no PERSISTENT_BOOT")
	}
	var out []BootEntry
	for _, d := range e.Children {
		if d.XMLName.Local == "DEVICE" {
			out = append(out, BootEntry{Value: d.Attr("VALUE"), Description: d.Attr("DESCRIPTION")})
		}
	}
	return out, nil
}

// SetPersistentBoot puts devs first in the boot order, in that order.
func (c *Client) SetPersistentBoot(ctx context.Context, devs []string) error {
	if len(devs) == 0 {
		return fmt.Errorf("iLO set persistent boot: no device given")
	}
	var b strings.Builder
	b.WriteString("<SET_PERSISTENT_BOOT>")
	for _, d := range devs {
		b.WriteString(`<DEVICE VALUE="` + escape(d) + `"/>`)
	}
	b.WriteString("</SET_PERSISTENT_BOOT>")
	_, err := c.run(ctx, "set persistent boot", serverWrite, b.String())
	return err
}

// Class is the device class of a persistent boot entry: the value itself
// in legacy mode; in UEFI mode, where the value names a boot entry, what
// its description says it is (docs/ilo.md §RIBCL). "" is a device the
// driver has no name for.
func (e BootEntry) Class() string {
	if e.Description == "" {
		return strings.ToUpper(e.Value)
	}
	d := strings.ToUpper(e.Description)
	switch {
	case strings.Contains(d, "ILO VIRTUAL USB CD"):
		return BootCDROM
	case strings.Contains(d, "NIC") || strings.Contains(d, "PXE"):
		return BootNetwork
	}
	for _, disk := range []string{"LOGICAL DRIVE", "HARD DRIVE", "HDD", "SATA", "SAS", "NVME", "DISK"} {
		if strings.Contains(d, disk) {
			return BootHDD
		}
	}
	return ""
}

// UpdatePersistentBoot puts the device classes first in the boot order,
// as HPE's client does: in UEFI mode the iLO takes only boot entries, so
// each class becomes the entries of that class, in their current order.
func (c *Client) UpdatePersistentBoot(ctx context.Context, devClasses []string) error {
	order, err := c.PersistentBoot(ctx)
	if err != nil {
		return err
	}
	uefi := slices.ContainsFunc(order, func(e BootEntry) bool { return e.Description != "" })
	if !uefi {
		return c.SetPersistentBoot(ctx, devClasses)
	}
	var entries []string
	for _, class := range devClasses {
		n := len(entries)
		for _, e := range order {
			if e.Class() == class {
				entries = append(entries, e.Value)
			}
		}
		if len(entries) == n {
			return fmt.Errorf("iLO set persistent boot: no UEFI boot entry is a %s device", class)
		}
	}
	return c.SetPersistentBoot(ctx, entries)
}

// PendingBootMode is the boot mode of the next boot: LEGACY, UEFI or
// UNKNOWN. Servers without UEFI fail with ErrNotSupported.
func (c *Client) PendingBootMode(ctx context.Context) (string, error) {
	e, err := c.run(ctx, "get pending boot mode", serverRead, `<GET_PENDING_BOOT_MODE/>`)
	if err != nil {
		return "", err
	}
	return childValue(e, "get pending boot mode", "BOOT_MODE")
}

// SetPendingBootMode sets the boot mode from the next boot on.
func (c *Client) SetPendingBootMode(ctx context.Context, mode string) error {
	_, err := c.run(ctx, "set pending boot mode", serverWrite, `<SET_PENDING_BOOT_MODE value="`+escape(mode)+`"/>`)
	return err
}

// VMStatus is the state of one virtual media device.
type VMStatus struct {
	Device        string
	BootOption    string
	WriteProtect  bool
	ImageInserted bool
	ImageURL      string
}

// VMStatus reads the state of device (DeviceFloppy or DeviceCDROM).
func (c *Client) VMStatus(ctx context.Context, device string) (VMStatus, error) {
	e, err := c.run(ctx, "get vm status", ribRead, `<GET_VM_STATUS DEVICE="`+escape(device)+`"/>`)
	if err != nil {
		return VMStatus{}, err
	}
	if e == nil || e.XMLName.Local != "GET_VM_STATUS" {
		return VMStatus{}, fmt.Errorf("iLO get vm status: answer has no GET_VM_STATUS")
	}
	return VMStatus{
		Device:        e.Attr("DEVICE"),
		BootOption:    e.Attr("BOOT_OPTION"),
		WriteProtect:  strings.EqualFold(e.Attr("WRITE_PROTECT"), "YES"),
		ImageInserted: strings.EqualFold(e.Attr("IMAGE_INSERTED"), "YES"),
		ImageURL:      e.Attr("IMAGE_URL"),
	}, nil
}

// SetVMStatus sets how device takes part in booting (VMConnect, VMBootOnce,
// ...) and whether the guest may write to it.
func (c *Client) SetVMStatus(ctx context.Context, device, option string, writeProtect bool) error {
	wp := "NO"
	if writeProtect {
		wp = "YES"
	}
	cmd := `<SET_VM_STATUS DEVICE="` + escape(device) + `"><VM_BOOT_OPTION VALUE="` + escape(option) +
		`"/><VM_WRITE_PROTECT VALUE="` + wp + `"/></SET_VM_STATUS>`
	_, err := c.run(ctx, "set vm status", ribWrite, cmd)
	return err
}

// InsertVirtualMedia connects the image at url to device. The iLO fetches
// the image itself, so url must be reachable from the iLO.
func (c *Client) InsertVirtualMedia(ctx context.Context, url, device string) error {
	cmd := `<INSERT_VIRTUAL_MEDIA DEVICE="` + escape(device) + `" IMAGE_URL="` + escape(url) + `"/>`
	_, err := c.run(ctx, "insert virtual media", ribWrite, cmd)
	return err
}

// EjectVirtualMedia disconnects device's image. An empty device is left
// alone, as HPE's own client does, so ejecting twice is not an error.
func (c *Client) EjectVirtualMedia(ctx context.Context, device string) error {
	st, err := c.VMStatus(ctx, device)
	if err != nil {
		return err
	}
	if !st.ImageInserted {
		return nil
	}
	_, err = c.run(ctx, "eject virtual media", ribWrite, `<EJECT_VIRTUAL_MEDIA DEVICE="`+escape(device)+`"/>`)
	return err
}

// childValue is the VALUE of e's child named name.
func childValue(e *Element, op, name string) (string, error) {
	if e != nil {
		if ch := e.Child(name); ch != nil {
			return ch.Attr("VALUE"), nil
		}
	}
	return "", fmt.Errorf("iLO %s: answer has no %s", op, name)
}
