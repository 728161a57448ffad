package ilo

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/ferricbm/ferric/conductor/bmc"
	"github.com/ferricbm/ferric/deploy/bootiso"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// BootISOStore counts the nodes booting each shared boot ISO, in the
// database every conductor uses (db.Store is one).
type BootISOStore interface {
	// AcquireBootISO counts one more user of name; publish runs, with
	// the count locked, when nobody used it. A failed publish counts
	// nothing.
	AcquireBootISO(ctx context.Context, name string, publish func(context.Context) error) (int, error)
	// ReleaseBootISO counts one user fewer; remove runs, with the count
	// locked, when that was the last one.
	ReleaseBootISO(ctx context.Context, name string, remove func(context.Context) error) (int, error)
}

// Keys the virtual-media boot interfaces read and write.
const (
	// bootISOKey in instance_info names the ISO the instance boots from:
	// the image's own boot_iso URL, or publishedPrefix and the name of a
	// generated ISO the node counts as a user of.
	bootISOKey      = "ilo_boot_iso"
	publishedPrefix = "published:"
	// imageBootISOKey in instance_info is the image's own boot ISO.
	imageBootISOKey = "boot_iso"
	rootUUIDKey     = "root_uuid_or_disk_id"
)

// checkNetboot checks what booting a partition image from an ISO needs:
// the image's own boot ISO as an http(s) URL, or its kernel and ramdisk
// to build one from.
func (b *Boot) checkNetboot(n *model.Node) error {
	if ref, ok := n.InstanceInfo[imageBootISOKey]; ok {
		s, _ := ref.(string)
		if !isHTTPURL(s) {
			return errs.InvalidParameterValue("Node %s: instance_info boot_iso must be an http:// or https:// URL of a boot ISO.", n.UUID)
		}
		if err := b.opts.Downloads.CheckURL(s); err != nil {
			return errs.InvalidParameterValue("Node %s: instance_info boot_iso: %s", n.UUID, err)
		}
		return nil
	}
	var missing []string
	for _, k := range []string{"kernel", "ramdisk"} {
		if s, _ := n.InstanceInfo[k].(string); s == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return errs.New(errs.KindMissingParameterValue,
			"Node %s: to boot a partition image from a boot ISO, instance_info needs boot_iso, or kernel and ramdisk; missing are: %s",
			n.UUID, strings.Join(missing, ", "))
	}
	if b.opts.BootISOs == nil || b.opts.Fetch == nil {
		return errs.InvalidParameterValue("Node %s: %s cannot build boot ISOs in this conductor (no boot ISO store); set boot_option=local in instance_info capabilities.",
			n.UUID, b.name())
	}
	return nil
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// prepareBootISO makes the node boot its partition image from an ISO for
// good: the ISO chosen (and for a generated one counted) and inserted,
// and the CD the persistent boot device, since some images reboot
// themselves right after their first boot. An ISO the node counted
// before and no longer boots is released.
func (b *Boot) prepareBootISO(ctx context.Context, n *model.Node, c *bmc.Controller) error {
	prev, _ := n.InstanceInfo[bootISOKey].(string)
	ref, acquired, err := b.chooseBootISO(ctx, n, prev)
	if err != nil {
		return err
	}
	if err := b.insertBootISO(ctx, n, c, ref, true); err != nil {
		if acquired {
			err = joinRelease(err, b.releaseBootISO(ctx, n, ref))
		}
		return err
	}
	n.InstanceInfo[bootISOKey] = ref
	if prev != ref {
		if err := b.releaseBootISO(ctx, n, prev); err != nil {
			logging.FromContext(ctx, b.h.log).WithField("node", n.UUID).WithError(err).Warn("Could not release the boot ISO the node booted before")
		}
	}
	return nil
}

// chooseBootISO is the image's own boot ISO, else the shared ISO of its
// image, kernel, ramdisk and root UUID, counted for the node (acquired)
// unless prev says it already is, and published by its first user.
func (b *Boot) chooseBootISO(ctx context.Context, n *model.Node, prev string) (ref string, acquired bool, err error) {
	if err := b.checkNetboot(n); err != nil {
		return "", false, err
	}
	if own, _ := n.InstanceInfo[imageBootISOKey].(string); own != "" {
		return own, false, nil
	}
	root, _ := n.DriverInternalInfo[rootUUIDKey].(string)
	if root == "" {
		return "", false, fmt.Errorf("node %s: no root partition UUID recorded to boot the instance from", n.UUID)
	}
	key := bootiso.CacheKey{ImageID: fmt.Sprint(n.InstanceInfo["image_source"]), KernelID: fmt.Sprint(n.InstanceInfo["kernel"]),
		RamdiskID: fmt.Sprint(n.InstanceInfo["ramdisk"]), RootUUID: root, AppendParams: b.opts.AppendParams}
	name := key.Name()
	ref = publishedPrefix + name
	if prev == ref {
		return ref, false, nil
	}
	if _, err := b.opts.BootISOs.AcquireBootISO(ctx, name, func(ctx context.Context) error {
		return b.buildBootISO(ctx, n, name, root)
	}); err != nil {
		return "", false, fmt.Errorf("node %s: boot ISO: %w", n.UUID, err)
	}
	return ref, true, nil
}

// buildBootISO builds the ISO of the node's kernel and ramdisk with the
// root= of its deployed root partition, and publishes it as name until
// deleted.
func (b *Boot) buildBootISO(ctx context.Context, n *model.Node, name, root string) error {
	dir, err := os.MkdirTemp(b.opts.WorkDir, "bootiso-")
	if err != nil {
		return fmt.Errorf("build boot ISO: %w", err)
	}
	defer os.RemoveAll(dir)
	kernel, ramdisk := filepath.Join(dir, "kernel"), filepath.Join(dir, "ramdisk")
	if err := b.opts.Fetch(ctx, n.InstanceInfo["kernel"], kernel); err != nil {
		return fmt.Errorf("fetch the instance kernel: %w", err)
	}
	if err := b.opts.Fetch(ctx, n.InstanceInfo["ramdisk"], ramdisk); err != nil {
		return fmt.Errorf("fetch the instance ramdisk: %w", err)
	}
	grub, err := os.ReadFile(b.opts.GrubEFI)
	if err != nil {
		return fmt.Errorf("build boot ISO: %w", err)
	}
	efi, err := bootiso.BuildEFIBoot(grub)
	if err != nil {
		return err
	}
	out := filepath.Join(dir, name+".iso")
	if err := bootiso.Build(ctx, out, bootiso.Options{Kernel: kernel, Ramdisk: ramdisk,
		KernelParams: bootiso.KernelParams(root, b.opts.AppendParams), EFI: efi}); err != nil {
		return err
	}
	f, err := os.Open(out)
	if err != nil {
		return fmt.Errorf("build boot ISO: %w", err)
	}
	defer f.Close()
	pub, err := b.opts.Publisher(ctx)
	if err != nil {
		return err
	}
	if err := pub.Publish(ctx, name, f, 0); err != nil {
		return fmt.Errorf("publish the boot ISO: %w", err)
	}
	return nil
}

// insertBootISO inserts the ISO ref names, a published one behind a fresh
// temporary URL, and sets the next boot (every boot if persistent) from
// the CD.
func (b *Boot) insertBootISO(ctx context.Context, n *model.Node, c *bmc.Controller, ref string, persistent bool) error {
	u := ref
	if name, ok := strings.CutPrefix(ref, publishedPrefix); ok {
		pub, err := b.opts.Publisher(ctx)
		if err != nil {
			return err
		}
		if u, err = pub.URL(ctx, name, b.opts.MediaLifetime); err != nil {
			return fmt.Errorf("node %s: boot ISO URL: %w", n.UUID, err)
		}
	}
	if err := c.InsertMedia(ctx, bmc.CDROM, u); err != nil {
		// A BMC's message may quote the temporary URL.
		return fmt.Errorf("node %s: insert the boot ISO: %s", n.UUID, withoutURL(err, u, "<boot ISO URL>"))
	}
	if err := c.SetBootDevice(ctx, bmc.BootCDROM, persistent); err != nil {
		return fmt.Errorf("node %s: set boot from cdrom: %w", n.UUID, err)
	}
	return nil
}

// releaseBootISO counts the node off the generated ISO ref names, which
// is deleted when no node boots it any more; anything else is left
// alone, an image's own ISO belonging to whoever made it.
func (b *Boot) releaseBootISO(ctx context.Context, n *model.Node, ref string) error {
	name, ok := strings.CutPrefix(ref, publishedPrefix)
	if !ok {
		return nil
	}
	if b.opts.BootISOs == nil {
		return fmt.Errorf("node %s: boot ISO %s: no boot ISO store to release it in", n.UUID, name)
	}
	_, err := b.opts.BootISOs.ReleaseBootISO(ctx, name, func(ctx context.Context) error {
		pub, err := b.opts.Publisher(ctx)
		if err != nil {
			return err
		}
		return pub.Delete(ctx, name)
	})
	if err != nil {
		return fmt.Errorf("node %s: %w", n.UUID, err)
	}
	return nil
}

// reattachBootISO re-inserts the boot ISO of an active instance booting
// from one, behind a fresh URL (the last one may have expired), for its
// next boot.
func (b *Boot) reattachBootISO(ctx context.Context, n *model.Node, c *bmc.Controller) error {
	ref, _ := n.InstanceInfo[bootISOKey].(string)
	if ref == "" || n.State() != states.Active {
		return nil
	}
	if err := b.insertBootISO(ctx, n, c, ref, false); err != nil {
		return fmt.Errorf("re-attach the boot ISO: %w", err)
	}
	return nil
}

func joinRelease(err, rerr error) error {
	if rerr == nil {
		return err
	}
	return fmt.Errorf("%w (and releasing the boot ISO: %w)", err, rerr)
}
