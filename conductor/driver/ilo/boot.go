package ilo

import (
	"bytes"
	"context"
	"crypto/rand"
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
	"github.com/ferricbm/ferric/deploy/bootiso"
	"github.com/ferricbm/ferric/deploy/floppy"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/secrets"
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
	// BootISOs counts the users of shared generated boot ISOs; without
	// it partition images can only boot locally.
	BootISOs BootISOStore
	// Fetch copies or downloads an instance kernel or ramdisk reference
	// to a file (pxe.Boot.Fetch: same rules as netbooting them).
	Fetch func(ctx context.Context, ref any, dst string) error
	// AppendParams follow root=UUID=... on a boot ISO's kernel command
	// line ([pxe] pxe_append_params).
	AppendParams string
	// GrubEFI is the GRUB EFI image of a boot ISO's UEFI entry; default
	// bootiso.DefaultGrubEFI.
	GrubEFI string
	// WorkDir holds boot ISOs while they are built; default the system's
	// temporary folder.
	WorkDir string
	// Glance resolves a deploy_iso given as a Glance image id (the iscsi
	// deploy's client); nil refuses image ids.
	Glance func() (*image.Glance, error)
	// Downloads are the addresses a deploy_iso URL may name: the BMC
	// fetches it, but on the conductor's word, so a literal address the
	// conductor would not download from is refused too.
	Downloads image.Destinations
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
	if opts.GrubEFI == "" {
		opts.GrubEFI = bootiso.DefaultGrubEFI
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
	p["deploy_iso"] = "Deploy ISO, whose kernel command line holds boot_method=vmedia: an http:// or https:// URL, swift:<object> (an object of [ilo] swift_ilo_container), or a Glance image id. Required."
	if b.f.name == Name {
		p["ilo_deploy_iso"] = "Deprecated name of deploy_iso, read when deploy_iso is unset."
	}
	return p
}

// Validate checks the BMC's driver_info, the deploy ISO and, for a
// partition image booted from an ISO, where that ISO comes from.
func (b *Boot) Validate(_ context.Context, t driver.TaskContext) error {
	n := t.Node()
	if _, err := b.f.parse(n); err != nil {
		return err
	}
	if _, err := b.deployISO(n); err != nil {
		return err
	}
	if _, ok := n.InstanceInfo["image_source"]; ok && !b.localBoot(n) {
		return b.checkNetboot(n)
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
// ilo_deploy_iso: an http(s) URL, swift:<object> (an object of [ilo]
// swift_ilo_container), or a Glance image id when a Glance is configured.
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
	if object, ok := strings.CutPrefix(v, swiftPrefix); ok {
		if strings.TrimSpace(object) == "" {
			return "", errs.InvalidParameterValue("driver_info %s of node %s names no Swift object after %q.", key, n.UUID, swiftPrefix)
		}
		if conductorMedia(object) {
			return "", errs.InvalidParameterValue(
				"driver_info %s of node %s names virtual media the conductor publishes for a node (%s), not a deploy ISO.", key, n.UUID, v)
		}
		return v, nil
	}
	if _, ok := image.GlanceRef(v); ok {
		if b.opts.Glance == nil {
			return "", errs.InvalidParameterValue(
				"driver_info %s of node %s is a Glance image id, but this conductor has no Glance client.", key, n.UUID)
		}
		if g, err := b.opts.Glance(); g == nil && err == nil {
			return "", errs.InvalidParameterValue(
				"driver_info %s of node %s is a Glance image id, but no Glance is configured ([glance] auth_type).", key, n.UUID)
		}
		return v, nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errs.InvalidParameterValue(
			"driver_info %s of node %s must be an http:// or https:// URL, swift:<object> or a Glance image id of the deploy ISO.",
			key, n.UUID)
	}
	if err := b.opts.Downloads.CheckURL(v); err != nil {
		return "", errs.InvalidParameterValue("driver_info %s of node %s: %s", key, n.UUID, err)
	}
	return v, nil
}

// PrepareRamdisk boots the node into the deploy ramdisk at its next boot,
// only while deploying or cleaning (clean wait included): both media
// ejected, the previous floppy deleted, a new one built from params (plus
// BOOTIF and a newly pre-issued agent token) and published, the floppy and
// the deploy ISO inserted, and a one-time boot from the CD set (in UEFI mode
// a fresh virtual CD shows only in the one-time boot menu). A failure
// leaves nothing inserted or published: the conductor only records it.
func (b *Boot) PrepareRamdisk(ctx context.Context, t driver.TaskContext, params map[string]any) (err error) {
	n := t.Node()
	// Clean wait: a clean step's reboot boots the ramdisk again.
	if st := n.State(); st != states.Deploying && st != states.Cleaning && st != states.CleanWait {
		return nil
	}
	c, err := b.h.Controller(ctx, b.f, n)
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			return
		}
		if cerr := b.cleanUpMedia(ctx, n); cerr != nil {
			logging.FromContext(ctx, b.h.log).WithField("node", n.UUID).WithError(cerr).Warn("Could not remove the virtual media of a failed prepare")
		}
	}()
	if err := ejectAll(ctx, c); err != nil {
		return err
	}
	pub, err := b.opts.Publisher(ctx)
	if err != nil {
		return err
	}
	// A floppy of an earlier boot holds a token that is being replaced: it
	// goes now, not when its lifetime ends.
	if err := deleteFloppy(ctx, pub, n); err != nil {
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
	if values["ipa-agent-token"], err = driver.PreIssueAgentToken(n); err != nil {
		return err
	}
	// Each boot's floppy has a name of its own: a URL of an earlier one,
	// which a BMC may have kept or logged, must not fetch the new token.
	name := publish.FloppyName(n.UUID) + "-" + strings.ToLower(rand.Text())
	n.DriverInternalInfo[floppyKey] = name
	if err := t.Save(ctx); err != nil {
		return fmt.Errorf("node %s: save the pre-issued agent token: %w", n.UUID, err)
	}
	img, err := floppy.Parameters(values)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.UUID, err)
	}
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
		return fmt.Errorf("node %s: insert the parameter floppy: %s", n.UUID, withoutURL(err, floppyURL, "<temporary URL>"))
	}
	iso, err := b.deployISOURL(ctx, n, pub)
	if err != nil {
		return err
	}
	if err := c.InsertMedia(ctx, bmc.CDROM, iso); err != nil {
		return fmt.Errorf("node %s: insert the deploy ISO: %s", n.UUID, withoutURL(err, iso, "<deploy ISO URL>"))
	}
	if err := c.SetBootDevice(ctx, bmc.BootCDROM, false); err != nil {
		return fmt.Errorf("node %s: set one-time boot from cdrom: %w", n.UUID, err)
	}
	// Neither URL is logged: the floppy's is a credential while valid.
	logging.FromContext(ctx, b.h.log).WithFields(map[string]any{"node": n.UUID, "bmc": c.Protocol()}).
		Info("Deploy ISO and parameter floppy inserted; the next boot is from the virtual CD")
	return nil
}

// CleanUpRamdisk ejects both media and deletes the parameter floppy.
func (b *Boot) CleanUpRamdisk(ctx context.Context, t driver.TaskContext) error {
	return b.cleanUpMedia(ctx, t.Node())
}

// PrepareInstance ends the deploy ramdisk's virtual-media boot and makes
// the node boot what was deployed: a partition image without
// boot_option=local from a boot ISO (root=UUID= of its root partition),
// anything else from its disk.
func (b *Boot) PrepareInstance(ctx context.Context, t driver.TaskContext) error {
	n := t.Node()
	if err := b.cleanUpMedia(ctx, n); err != nil {
		return err
	}
	c, err := b.h.Controller(ctx, b.f, n)
	if err != nil {
		return err
	}
	if !b.localBoot(n) {
		return b.prepareBootISO(ctx, n, c)
	}
	if prev, _ := n.InstanceInfo[bootISOKey].(string); prev != "" {
		if err := b.releaseBootISO(ctx, n, prev); err != nil {
			return err
		}
		delete(n.InstanceInfo, bootISOKey)
	}
	if err := c.SetBootDevice(ctx, bmc.BootDisk, true); err != nil {
		return fmt.Errorf("node %s: set boot device to disk: %w", n.UUID, err)
	}
	return nil
}

// CleanUpInstance removes what a deploy may have left: the floppy,
// anything in the virtual drives, and the node's count on a generated
// boot ISO (deleted with its last user).
func (b *Boot) CleanUpInstance(ctx context.Context, t driver.TaskContext) error {
	n := t.Node()
	err := b.cleanUpMedia(ctx, n)
	if ref, _ := n.InstanceInfo[bootISOKey].(string); ref != "" {
		rerr := b.releaseBootISO(ctx, n, ref)
		if rerr == nil {
			delete(n.InstanceInfo, bootISOKey)
		}
		err = errors.Join(err, rerr)
	}
	return err
}

// cleanUpMedia deletes the floppy even when the BMC cannot be reached, so
// the deploy key does not stay published.
func (b *Boot) cleanUpMedia(ctx context.Context, n *model.Node) error {
	var failures []error
	if pub, err := b.opts.Publisher(ctx); err != nil {
		failures = append(failures, err)
	} else {
		if err := deleteFloppy(ctx, pub, n); err != nil {
			failures = append(failures, err)
		}
		if err := pub.Delete(ctx, deployISOName(n.UUID)); err != nil {
			failures = append(failures, fmt.Errorf("node %s: delete the deploy ISO: %w", n.UUID, err))
		}
	}
	c, err := b.h.Controller(ctx, b.f, n)
	if err != nil {
		failures = append(failures, err)
	} else if err := ejectAll(ctx, c); err != nil {
		failures = append(failures, fmt.Errorf("node %s: %w", n.UUID, err))
	}
	return errors.Join(failures...)
}

// floppyKey is the driver_internal_info entry naming the node's current
// parameter floppy.
const floppyKey = "vmedia_floppy"

// deleteFloppy deletes the node's parameter floppy, and the one a version
// naming it publish.FloppyName alone may have left.
func deleteFloppy(ctx context.Context, pub publish.Publisher, n *model.Node) error {
	names := []string{publish.FloppyName(n.UUID)}
	if current, _ := n.DriverInternalInfo[floppyKey].(string); current != "" {
		names = append(names, current)
	}
	for _, name := range names {
		if err := pub.Delete(ctx, name); err != nil {
			return fmt.Errorf("node %s: delete the parameter floppy: %w", n.UUID, err)
		}
	}
	delete(n.DriverInternalInfo, floppyKey)
	return nil
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

// withoutURL is a BMC's error message with a media URL it quotes replaced
// by label: as sent, or as the BMC client already masked its signature.
// Whatever else quotes it still has every sig value masked.
func withoutURL(err error, u, label string) string {
	msg := strings.ReplaceAll(err.Error(), u, label)
	return strings.ReplaceAll(msg, secrets.MaskString(u), label)
}
