package iscsideploy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/deploy/agent"
	"github.com/ferricbm/ferric/deploy/disk"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/deploy/iscsi"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// target is the iSCSI target the ramdisk exported.
type target struct {
	address string
	port    int
	iqn     string
	lun     uint64
	// notify: the callback-only ramdisk waits for "done" on NotifyPort
	// before it lets go of the disk; doneKey is what its "done" must
	// carry (see doneKey).
	notify  bool
	doneKey string
	// agent reaches the heartbeating agent that exported the disk; no URL
	// for the callback-only ramdisk.
	agent agentConn
	// chapUser and chapSecret log in to a target that requires CHAP; empty
	// for a legacy ramdisk's open export.
	chapUser, chapSecret string
}

// continueDeploy runs in the worker holding the node lock, with the node in
// deploying: it writes the image, boots the instance and ends in active,
// or in deploy failed with everything the deploy set up undone.
func (d *Deploy) continueDeploy(ctx context.Context, t driver.TaskContext, drv *driver.Driver, tgt target) error {
	n := t.Node()
	log := logging.FromContext(ctx, d.log).WithField("node", n.UUID)
	// Only the write stops at a second callback: failing the deploy must
	// still power off and save.
	wctx, stop := d.runs.start(ctx, n)
	defer stop()
	w, err := d.writeImage(wctx, t, tgt)
	if stoppedBySecondCallback(wctx) {
		return d.fail(ctx, t, drv, secondCallbackMessage)
	}
	if err != nil {
		return d.fail(ctx, t, drv, fmt.Sprintf("Deploy failed for node %s: %s", n.UUID, err))
	}
	n.DriverInternalInfo[rootKey] = w.root
	if w.needsBootloader && tgt.agent.url != "" {
		if err := d.installBootloader(ctx, tgt.agent, w); err != nil {
			return d.fail(ctx, t, drv, fmt.Sprintf("Failed to install a bootloader when deploying node %s. Error: %s", n.UUID, err))
		}
	}
	if err := drv.Boot.PrepareInstance(ctx, t); err != nil {
		return d.fail(ctx, t, drv, fmt.Sprintf("Failed to continue iSCSI deployment. Error: %s", err))
	}
	if w.needsBootloader && tgt.notify {
		// The callback-only ramdisk installs the boot loader itself once
		// told the write is done, and calls back again with the outcome.
		if err := d.notifyDone(ctx, tgt.address, tgt.doneKey); err != nil {
			return d.fail(ctx, t, drv, fmt.Sprintf("Failed to continue iSCSI deployment. Error: the deploy ramdisk could not be told to install the boot loader: %s", err))
		}
		d.releaseImage(n.UUID)
		n.DriverInternalInfo[bootloaderWaitKey] = true
		if tgt.chapSecret != "" {
			n.DriverInternalInfo[bootloaderProofKey] = keyHash(tgt.chapSecret)
		}
		log.Info("Image written; waiting for the deploy ramdisk to install the boot loader")
		return t.ProcessEvent(ctx, states.EventWait, "")
	}
	if tgt.notify {
		if err := d.notifyDone(ctx, tgt.address, tgt.doneKey); err != nil {
			// The power cycle below ends the ramdisk anyway.
			log.WithError(err).Warn("Could not tell the deploy ramdisk to finish")
		}
	}
	return d.bootInstance(ctx, t, drv, func() bool { return stoppedBySecondCallback(wctx) })
}

// bootInstance power-cycles the node into its deployed instance and ends
// the deploy in active, unless stopped reports that a second callback
// came, after which the written disk may be the attacker's and the deploy
// fails.
func (d *Deploy) bootInstance(ctx context.Context, t driver.TaskContext, drv *driver.Driver, stopped func() bool) error {
	n := t.Node()
	if err := d.setPower(ctx, t, drv, states.PowerOff); err != nil {
		return d.fail(ctx, t, drv, fmt.Sprintf("Error rebooting node %s after deploy. Error: %s", n.UUID, err))
	}
	if err := d.setPower(ctx, t, drv, states.PowerOn); err != nil {
		return d.fail(ctx, t, drv, fmt.Sprintf("Error rebooting node %s after deploy. Error: %s", n.UUID, err))
	}
	if stopped() {
		return d.fail(ctx, t, drv, secondCallbackMessage)
	}
	d.releaseImage(n.UUID)
	delete(n.DriverInternalInfo, deployKeyKey)
	logging.FromContext(ctx, d.log).WithField("node", n.UUID).Info("Deployment finished")
	return t.ProcessEvent(ctx, states.EventDone, "")
}

// installBootloader has the agent install the written image's boot loader
// (image.install_bootloader), for UEFI into the ESP the write created.
func (d *Deploy) installBootloader(ctx context.Context, conn agentConn, w written) error {
	var esp any
	if w.esp != "" {
		esp = w.esp
	}
	res, err := d.runCommand(ctx, conn, "image.install_bootloader", map[string]any{"root_uuid": w.root, "efi_system_part_uuid": esp}, true)
	if err != nil {
		return err
	}
	if res.Status != "SUCCEEDED" {
		return errors.New(res.errorText())
	}
	return nil
}

// fail ends the deploy in deploy failed: power off if configured, image
// reference, boot files and deploy key dropped, last_error written after
// the power action.
func (d *Deploy) fail(ctx context.Context, t driver.TaskContext, drv *driver.Driver, msg string) error {
	n := t.Node()
	log := logging.FromContext(ctx, d.log).WithField("node", n.UUID)
	if d.opts.PowerOffAfterFailure {
		if err := d.setPower(ctx, t, drv, states.PowerOff); err != nil {
			log.WithError(err).Error("Could not power off the node after its deploy failed")
		}
	}
	d.releaseImage(n.UUID)
	if err := errors.Join(drv.Boot.CleanUpRamdisk(ctx, t), drv.Boot.CleanUpInstance(ctx, t)); err != nil {
		log.WithError(err).Error("Could not remove the boot files of a failed deploy")
	}
	delete(n.DriverInternalInfo, deployKeyKey)
	delete(n.DriverInternalInfo, bootloaderWaitKey)
	delete(n.DriverInternalInfo, bootloaderProofKey)
	return t.Fail(ctx, msg)
}

// written is what writeImage wrote.
type written struct {
	// root is the root partition's UUID, or the disk identifier of a
	// whole-disk image; esp the ESP's volume ID, if the write made one.
	root, esp string
	// needsBootloader: a partition image booting from its disk, which
	// boots only once the image's boot loader is installed.
	needsBootloader bool
}

// writeImage writes the cached image onto the node's disk through the
// target.
func (d *Deploy) writeImage(ctx context.Context, t driver.TaskContext, tgt target) (written, error) {
	n := t.Node()
	info, err := d.instanceInfo(ctx, n)
	if err != nil {
		return written{}, err
	}
	// Waiting for a write slot first keeps queued deploys from holding
	// downloads they cannot use yet.
	if err := d.slots.acquire(ctx); err != nil {
		return written{}, fmt.Errorf("waiting for a write slot: %w", err)
	}
	defer d.slots.release()
	entry, err := d.cacheImage(ctx, n, info)
	if err != nil {
		return written{}, err
	}
	img, err := image.Open(entry.Path)
	if err != nil {
		return written{}, fmt.Errorf("open image: %w", err)
	}
	defer img.Close()
	var configDrive []byte
	if info.configDrive {
		value, err := t.ConfigDrive(ctx)
		if err != nil {
			return written{}, fmt.Errorf("config drive: %w", err)
		}
		if configDrive, err = disk.DecodeConfigDrive(ctx, value, d.downloads); err != nil {
			return written{}, fmt.Errorf("config drive: %w", err)
		}
	}
	sess, err := d.dial(ctx, tgt)
	if err != nil {
		return written{}, err
	}
	// Logging out tells the ramdisk the disk is free again.
	defer sess.Close()
	lun, err := sess.OpenLUN(ctx, tgt.lun)
	if err != nil {
		return written{}, fmt.Errorf("open LUN %d of %s: %w", tgt.lun, tgt.iqn, err)
	}
	serial, _, err := checkIdentity(ctx, lun, n)
	if err != nil {
		return written{}, err
	}
	dev := meteredDevice{Device: lun.Device(ctx), meter: d.opts.Meter, operation: "deploy"}
	start := time.Now()
	wo := disk.Options{Workers: d.opts.WriteWorkers, Progress: d.progressRecorder(ctx, t), Verifier: d.verifier(ctx, tgt)}
	var w written
	if info.wholeDisk {
		res, err := disk.WriteWholeDiskImage(ctx, dev, img, disk.WholeDiskOptions{ConfigDrive: configDrive, Write: wo})
		if err != nil {
			return written{}, fmt.Errorf("write whole disk image: %w", err)
		}
		w.root = res.DiskIdentifier
	} else {
		cpuArch, _ := n.Properties["cpu_arch"].(string)
		res, err := disk.WritePartitionImage(ctx, dev, img, disk.PartitionOptions{
			RootMB: info.rootMB, SwapMB: info.swapMB, EphemeralMB: info.ephemeralMB,
			EphemeralFormat: info.ephemeralFormat, PreserveEphemeral: info.preserveEphemeral,
			BootOption: info.bootOption, BootMode: info.bootMode, DiskLabel: info.diskLabel,
			CPUArch: cpuArch, ConfigDrive: configDrive, TempDir: d.opts.TempDir, Write: wo,
		})
		if err != nil {
			return written{}, fmt.Errorf("write partition image: %w", err)
		}
		w.root, w.esp = res.RootUUID, res.EFISystemPartitionUUID
		w.needsBootloader = info.bootOption == "local"
		if info.preserveEphemeral {
			n.DriverInternalInfo[instanceKey] = map[string]any{"root_gb": info.rootMB / 1024,
				"swap_mb": info.swapMB, "ephemeral_gb": info.ephemeralMB / 1024}
		}
	}
	if w.root == "" {
		return written{}, fmt.Errorf("Couldn't determine the UUID of the root partition or the disk identifier after deploying node %s", n.UUID)
	}
	if serial != "" {
		n.DriverInternalInfo[diskSerialKey] = serial
	}
	if err := sess.Close(); err != nil {
		logging.FromContext(ctx, d.log).WithField("node", n.UUID).WithError(err).Warn("iSCSI logout failed after a complete write")
	}
	d.opts.Meter.ImageWritten(img.VirtualSize(), time.Since(start))
	return w, nil
}

// dial logs in to the target, retrying while the ramdisk may still be
// bringing it up.
func (d *Deploy) dial(ctx context.Context, tgt target) (*iscsi.Session, error) {
	var last error
	for attempt := range d.opts.ConnectAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Second):
			}
		}
		opts := d.opts.Initiator
		opts.CHAPUser, opts.CHAPSecret = tgt.chapUser, tgt.chapSecret
		sess, err := iscsi.Dial(ctx, portal(tgt.address, tgt.port), tgt.iqn, opts)
		if err == nil {
			return sess, nil
		}
		last = err
	}
	return nil, fmt.Errorf("iSCSI connection to %s at %s did not become active after %d attempts: %w",
		tgt.iqn, portal(tgt.address, tgt.port), d.opts.ConnectAttempts, last)
}

// progressRecorder keeps the write's progress in driver_internal_info and
// saves it at most every ProgressInterval; the writer calls it from one
// goroutine while the worker waits for the write.
func (d *Deploy) progressRecorder(ctx context.Context, t driver.TaskContext) func(disk.Progress) {
	var lastSave time.Time
	return func(p disk.Progress) {
		t.Node().DriverInternalInfo[progressKey] = map[string]any{
			"bytes_done":       p.Done,
			"bytes_written":    p.Written,
			"bytes_total":      p.Total,
			"bytes_per_second": int64(p.BytesPerSecond),
		}
		if time.Since(lastSave) < d.opts.ProgressInterval && p.Done < p.Total {
			return
		}
		lastSave = time.Now()
		if err := t.Save(ctx); err != nil {
			logging.FromContext(ctx, d.log).WithField("node", t.Node().UUID).WithError(err).Warn("Could not record deploy progress")
		}
	}
}

// notifyDone tells the callback-only ramdisk the write is over, as
// Ironic's notify does: connect to port 10000 and send "done", followed by
// key, without which ferric-agent ignores it.
func (d *Deploy) notifyDone(ctx context.Context, address, key string) error {
	var last error
	for attempt := range 3 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
		dialer := net.Dialer{Timeout: 5 * time.Second}
		conn, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort(address, strconv.Itoa(d.opts.NotifyPort)))
		if err != nil {
			last = err
			continue
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = conn.Write(agent.DoneMessage(key))
		conn.Close()
		if err == nil {
			return nil
		}
		last = err
	}
	return last
}

func ensureMaps(n *model.Node) {
	if n.DriverInternalInfo == nil {
		n.DriverInternalInfo = model.JSONObject{}
	}
	if n.InstanceInfo == nil {
		n.InstanceInfo = model.JSONObject{}
	}
}

func ptr[T any](v T) *T { return &v }
