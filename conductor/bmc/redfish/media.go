package redfish

import (
	"context"
	"fmt"
	"slices"
)

// Media types of a VirtualMedia device.
const (
	MediaFloppy   = "Floppy"
	MediaUSBStick = "USBStick"
	MediaCD       = "CD"
	MediaDVD      = "DVD"
)

// Media is a manager's virtual media device.
type Media struct {
	Path           string   `json:"@odata.id"`
	ID             string   `json:"Id"`
	MediaTypes     []string `json:"MediaTypes"`
	Image          string   `json:"Image"`
	Inserted       bool     `json:"Inserted"`
	WriteProtected bool     `json:"WriteProtected"`
	Actions        struct {
		Insert struct {
			Target string `json:"target"`
		} `json:"#VirtualMedia.InsertMedia"`
		Eject struct {
			Target string `json:"target"`
		} `json:"#VirtualMedia.EjectMedia"`
	} `json:"Actions"`
}

// VirtualMedia is the manager's device that takes one of types (a CD
// drive lists both CD and DVD).
func (c *Client) VirtualMedia(ctx context.Context, types ...string) (Media, error) {
	mgr, err := c.managerPath(ctx)
	if err != nil {
		return Media{}, err
	}
	var col collection
	if err := c.get(ctx, "list virtual media", mgr+"/VirtualMedia", &col); err != nil {
		return Media{}, err
	}
	for _, l := range col.Members {
		var m Media
		if err := c.get(ctx, "read virtual media", l.ID, &m); err != nil {
			return Media{}, err
		}
		if m.Path == "" {
			m.Path = l.ID
		}
		for _, t := range types {
			if slices.Contains(m.MediaTypes, t) {
				return m, nil
			}
		}
	}
	return Media{}, fmt.Errorf("Redfish manager %s: %w %v", mgr, ErrNoMedia, types)
}

// InsertMedia puts the image at url into the device for types, write
// protected, ejecting what it held first as HPE's client does. The BMC
// fetches the image itself, so url must be reachable from it.
func (c *Client) InsertMedia(ctx context.Context, url string, types ...string) error {
	m, err := c.VirtualMedia(ctx, types...)
	if err != nil {
		return err
	}
	if m.Inserted {
		if err := c.eject(ctx, m); err != nil {
			return err
		}
	}
	target := m.Actions.Insert.Target
	if target == "" {
		target = m.Path + "/Actions/VirtualMedia.InsertMedia"
	}
	body := map[string]any{"Image": url, "Inserted": true, "WriteProtected": true}
	return c.action(ctx, "insert virtual media "+m.ID, target, body)
}

// EjectMedia empties the device for types; an empty one is left alone.
func (c *Client) EjectMedia(ctx context.Context, types ...string) error {
	m, err := c.VirtualMedia(ctx, types...)
	if err != nil {
		return err
	}
	if !m.Inserted {
		return nil
	}
	return c.eject(ctx, m)
}

func (c *Client) eject(ctx context.Context, m Media) error {
	target := m.Actions.Eject.Target
	if target == "" {
		target = m.Path + "/Actions/VirtualMedia.EjectMedia"
	}
	return c.action(ctx, "eject virtual media "+m.ID, target, map[string]any{})
}
