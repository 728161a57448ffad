package redfish

import (
	"context"
	"net/http"
)

// Power states of a system.
const (
	PowerOn          = "On"
	PowerOff         = "Off"
	PowerPoweringOn  = "PoweringOn"
	PowerPoweringOff = "PoweringOff"
)

// Reset types of ComputerSystem.Reset.
const (
	ResetOn               = "On"
	ResetForceOn          = "ForceOn"
	ResetForceOff         = "ForceOff"
	ResetGracefulShutdown = "GracefulShutdown"
	ResetGracefulRestart  = "GracefulRestart"
	ResetForceRestart     = "ForceRestart"
	ResetPowerCycle       = "PowerCycle"
	ResetPushPowerButton  = "PushPowerButton"
	ResetNmi              = "Nmi"
)

// Boot override targets and how long an override lasts.
const (
	BootNone       = "None"
	BootPxe        = "Pxe"
	BootHdd        = "Hdd"
	BootCd         = "Cd"
	BootOnce       = "Once"
	BootContinuous = "Continuous"
	BootDisabled   = "Disabled"
)

// Boot is a system's boot source override.
type Boot struct {
	Target  string `json:"BootSourceOverrideTarget,omitempty"`
	Enabled string `json:"BootSourceOverrideEnabled,omitempty"`
}

// System is what the driver reads of a ComputerSystem.
type System struct {
	ID         string `json:"Id"`
	Model      string `json:"Model"`
	PowerState string `json:"PowerState"`
	Boot       Boot   `json:"Boot"`
}

// System reads the system.
func (c *Client) System(ctx context.Context) (System, error) {
	path, err := c.systemPath(ctx)
	if err != nil {
		return System{}, err
	}
	var s System
	err = c.get(ctx, "get the system", path, &s)
	return s, err
}

// Reset runs ComputerSystem.Reset with resetType.
func (c *Client) Reset(ctx context.Context, resetType string) error {
	path, err := c.systemPath(ctx)
	if err != nil {
		return err
	}
	return c.action(ctx, "reset ("+resetType+")", path+"/Actions/ComputerSystem.Reset", map[string]string{"ResetType": resetType})
}

// SetBootOverride makes the system boot from target once (BootOnce) or
// from now on (BootContinuous).
func (c *Client) SetBootOverride(ctx context.Context, target, enabled string) error {
	path, err := c.systemPath(ctx)
	if err != nil {
		return err
	}
	body := map[string]Boot{"Boot": {Target: target, Enabled: enabled}}
	resp, err := c.do(ctx, "set the boot override", http.MethodPatch, path, body)
	if err != nil {
		return err
	}
	return c.finish(ctx, "set the boot override", resp)
}
