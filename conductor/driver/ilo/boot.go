package ilo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/ferricbm/ferric/conductor/bmc"
	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/pxe"
	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/deploy/floppy"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// Boot interface names.
const (
	ILOBootName     = "ilo-virtual-media"
	RedfishBootName = "redfish-virtual-media"
)

// BootOptions configure the virtual-media boot interfaces.
type BootOptions struct {
	// Publisher gives where the parameter floppy is published; it is
	// asked at each use, so a Swift publisher can be set up lazily and a
	// misconfiguration fails the deploy, not the conductor's start.
	Publisher func(context.Context) (publish.Publisher, error)
	// MediaLifetime is how long the floppy and its URL live ([ilo]
	// swift_object_expiry_timeout).
	MediaLifetime time.Duration
	// DefaultBootOption applies when instance_info capabilities name none.
	DefaultBootOption string
}

// Boot boots the deploy ramdisk from virtual media: the deploy ISO in the
// virtual CD and the ramdisk's parameters on a virtual floppy, which the
// ramdisk reads because the ISO's kernel command line holds
// boot_method=vmedia. The deployed instance boots from its disk.
type Boot struct {
	h    *Hardware
	f    Flavor
	opts BootOptions
}

// Boot is the flavor's virtual-media boot interface.
func (h *Hardware) Boot(f Flavor, opts BootOptions) *Boot {
	if opts.MediaLifetime <= 0 {
		opts.MediaLifetime = 15 * time.Minute
	}
	if opts.DefaultBootOption == "" {
		opts.DefaultBootOption = "local"
	}
	return &Boot{h: h, f: f, opts: opts}
}

var (
	_ driver.BootInterface     = (*Boot)(nil)
	_ driver.PropertyDescriber = (*Boot)(nil)
)

// Properties describes the driver_info keys the interface reads.
func (b *Boot) Properties() map[string]string {
	p := maps.Clone(b.f.properties)
	p["deploy_iso"] = "http:// or https:// URL of the deploy ISO, whose kernel command line holds boot_method=vmedia. Required."
	if b.f.name == Name {
		p["ilo_deploy_iso"] = "Deprecated name of deploy_iso, read when deploy_iso is unset."
	}
	return p
}

// Validate checks the BMC's driver_info, the deploy ISO and that the
// instance, if one is set, boots from its disk.
func (b *Boot) Validate(_ context.Context, t driver.TaskContext) error {
	n := t.Node()
	if _, err := b.f.parse(n); err != nil {
		return err
	}
	if _, err := b.deployISO(n); err != nil {
		return err
	}
	if _, ok := n.InstanceInfo["image_source"]; ok && !b.localBoot(n) {
		return errs.InvalidParameterValue(
			"Node %s: %s cannot netboot a partition image yet; set boot_option=local in instance_info capabilities or deploy a whole-disk image.",
			n.UUID, b.name())
	}
	return nil
}

func (b *Boot) name() string {
	if b.f.name == Name {
		return ILOBootName
	}
	return RedfishBootName
}

func (b *Boot) localBoot(n *model.Node) bool {
	return pxe.WholeDisk(n) || pxe.BootOption(n, b.opts.DefaultBootOption) == "local"
}

// deployISO is driver_info deploy_iso, or for iLO nodes the deprecated
// ilo_deploy_iso; only http(s) URLs are accepted until Glance images and
// Swift objects are resolved into URLs the BMC can fetch.
func (b *Boot) deployISO(n *model.Node) (string, error) {
	key := "deploy_iso"
	v, _ := n.DriverInfo[key].(string)
	if v == "" && b.f.name == Name {
		if old, _ := n.DriverInfo["ilo_deploy_iso"].(string); old != "" {
			key, v = "ilo_deploy_iso", old
		}
	}
	if strings.TrimSpace(v) == "" {
		return "", errs.New(errs.KindMissingParameterValue,
			"Error validating %s. Some parameters were missing in node's driver_info. Missing are: ['deploy_iso']", b.name())
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errs.InvalidParameterValue(
			"driver_info %s of node %s must be an http:// or https:// URL of the deploy ISO; Glance images and Swift objects are not supported yet.",
			key, n.UUID)
	}
	return v, nil
}

// PrepareRamdisk boots the node into the deploy ramdisk at its next boot,
// only while deploying or cleaning: both media ejected, the parameter
// floppy built from params (plus BOOTIF) and published, the floppy and the
// deploy ISO inserted, and a one-time boot from the CD set (in UEFI mode
// a fresh virtual CD shows only in the one-time boot menu). When a step
// after publishing fails, the floppy is deleted and both drives emptied
// again.
func (b *Boot) PrepareRamdisk(ctx context.Context, t driver.TaskContext, params map[string]any) (err error) {
	n := t.Node()
	if st := n.ProvisionState; st == nil || (*st != states.Deploying && *st != states.Cleaning) {
		return nil
	}
	iso, err := b.deployISO(n)
	if err != nil {
		return err
	}
	c, err := b.h.Controller(ctx, b.f, n)
	if err != nil {
		return err
	}
	if err := ejectAll(ctx, c); err != nil {
		return err
	}
	values := make(map[string]string, len(params)+1)
	for k, v := range params {
		values[k] = fmt.Sprint(v)
	}
	if mac, err := bootMAC(ctx, t); err != nil {
		return err
	} else if mac != "" {
		values["BOOTIF"] = mac
	}
	img, err := floppy.Parameters(values)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.UUID, err)
	}
	pub, err := b.opts.Publisher(ctx)
	if err != nil {
		return err
	}
	name := publish.FloppyName(n.UUID)
	defer func() {
		// The floppy holds the deploy key, and a medium left in a drive
		// would boot at the node's next start.
		if err == nil {
			return
		}
		if cerr := b.cleanUpMedia(ctx, n); cerr != nil {
			b.h.log.WithField("node", n.UUID).WithError(cerr).Warn("Removing the media of a failed virtual-media prepare")
		}
	}()
	if err := pub.Publish(ctx, name, bytes.NewReader(img), b.opts.MediaLifetime); err != nil {
		return fmt.Errorf("node %s: publish the parameter floppy: %w", n.UUID, err)
	}
	floppyURL, err := pub.URL(ctx, name, b.opts.MediaLifetime)
	if err != nil {
		return fmt.Errorf("node %s: parameter floppy URL: %w", n.UUID, err)
	}
	if err := c.InsertMedia(ctx, bmc.Floppy, floppyURL); err != nil {
		// The URL is a credential while valid, and a BMC's message may
		// quote it; the error ends up in last_error.
		msg := strings.ReplaceAll(err.Error(), floppyURL, "<temporary URL>")
		return fmt.Errorf("node %s: insert the parameter floppy: %s", n.UUID, msg)
	}
	if err := c.InsertMedia(ctx, bmc.CDROM, iso); err != nil {
		return fmt.Errorf("node %s: insert the deploy ISO: %w", n.UUID, err)
	}
	if err := c.SetBootDevice(ctx, bmc.BootCDROM, false); err != nil {
		return fmt.Errorf("node %s: set one-time boot from cdrom: %w", n.UUID, err)
	}
	// Neither URL is logged: the floppy's is a credential while valid.
	b.h.log.WithFields(map[string]any{"node": n.UUID, "bmc": c.Protocol()}).
		Info("Deploy ISO and parameter floppy inserted; the next boot is from the virtual CD")
	return nil
}

// CleanUpRamdisk ejects both media and deletes the parameter floppy.
func (b *Boot) CleanUpRamdisk(ctx context.Context, t driver.TaskContext) error {
	return b.cleanUpMedia(ctx, t.Node())
}

// PrepareInstance ends the virtual-media boot and makes the node boot from
// its disk for good.
func (b *Boot) PrepareInstance(ctx context.Context, t driver.TaskContext) error {
	n := t.Node()
	if !b.localBoot(n) {
		return errs.InvalidParameterValue(
			"Node %s: %s cannot netboot a partition image yet; set boot_option=local in instance_info capabilities or deploy a whole-disk image.",
			n.UUID, b.name())
	}
	if err := b.cleanUpMedia(ctx, n); err != nil {
		return err
	}
	c, err := b.h.Controller(ctx, b.f, n)
	if err != nil {
		return err
	}
	if err := c.SetBootDevice(ctx, bmc.BootDisk, true); err != nil {
		return fmt.Errorf("node %s: set boot device to disk: %w", n.UUID, err)
	}
	return nil
}

// CleanUpInstance removes what a deploy may have left: the floppy and
// anything in the virtual drives.
func (b *Boot) CleanUpInstance(ctx context.Context, t driver.TaskContext) error {
	return b.cleanUpMedia(ctx, t.Node())
}

// cleanUpMedia deletes the floppy even when the BMC cannot be reached, so
// the deploy key does not stay published.
func (b *Boot) cleanUpMedia(ctx context.Context, n *model.Node) error {
	var failures []error
	if pub, err := b.opts.Publisher(ctx); err != nil {
		failures = append(failures, err)
	} else if err := pub.Delete(ctx, publish.FloppyName(n.UUID)); err != nil {
		failures = append(failures, fmt.Errorf("node %s: delete the parameter floppy: %w", n.UUID, err))
	}
	c, err := b.h.Controller(ctx, b.f, n)
	if err != nil {
		failures = append(failures, err)
	} else if err := ejectAll(ctx, c); err != nil {
		failures = append(failures, fmt.Errorf("node %s: %w", n.UUID, err))
	}
	return errors.Join(failures...)
}

func ejectAll(ctx context.Context, c *bmc.Controller) error {
	for _, kind := range []bmc.Media{bmc.Floppy, bmc.CDROM} {
		if err := c.EjectMedia(ctx, kind); err != nil {
			return fmt.Errorf("eject the virtual %s: %w", kind, err)
		}
	}
	return nil
}

// bootMAC is the MAC the ramdisk configures its network on: the port
// bound to a VIF, else the first PXE-enabled port.
func bootMAC(ctx context.Context, t driver.TaskContext) (string, error) {
	ports, err := t.Ports(ctx)
	if err != nil {
		return "", err
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i].Address < ports[j].Address })
	var first string
	for _, p := range ports {
		if p.Address == "" {
			continue
		}
		if vif, _ := p.InternalInfo["tenant_vif_port_id"].(string); vif != "" {
			return strings.ToLower(p.Address), nil
		}
		if vif, _ := p.Extra["vif_port_id"].(string); vif != "" {
			return strings.ToLower(p.Address), nil
		}
		if first == "" && p.PXEEnabled {
			first = strings.ToLower(p.Address)
		}
	}
	return first, nil
}
