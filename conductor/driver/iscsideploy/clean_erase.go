package iscsideploy

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/deploy/erase"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
)

// eraseRecord is one disk erased by one clean step, as
// driver_internal_info.erase_record lists them: enough for an operator to
// show what wiped the disk, how, and that it was read back.
type eraseRecord struct {
	Step           string  `json:"step"`
	Device         string  `json:"device"`
	Method         string  `json:"method,omitempty"`
	Passes         int     `json:"passes"`
	Bytes          int64   `json:"bytes"`
	Duration       float64 `json:"duration"`
	SamplesChecked int     `json:"samples_checked"`
	// Skipped is why the agent left the device alone.
	Skipped string `json:"skipped,omitempty"`
	// By is "agent" or "conductor".
	By string `json:"by"`
	// IdentityVerified tells, for the conductor's erase, whether the LUN
	// erased reported the node's known disk serial number: false means
	// nothing was known to compare with.
	IdentityVerified *bool  `json:"identity_verified,omitempty"`
	At               string `json:"at"`
}

func appendEraseRecords(n *model.Node, recs ...eraseRecord) {
	var list []any
	if err := remarshal(n.DriverInternalInfo[eraseRecordKey], &list); err != nil {
		list = nil
	}
	for _, r := range recs {
		var m map[string]any
		if remarshal(r, &m) == nil {
			list = append(list, m)
		}
	}
	n.DriverInternalInfo[eraseRecordKey] = list
}

// recordAgentErase records what an agent erase step reports: per device,
// an erase record or why the device was skipped.
func recordAgentErase(n *model.Node, step model.JSONObject, result any) {
	name, _ := step["step"].(string)
	if name != stepEraseDevices && name != stepEraseMetadata {
		return
	}
	var devices map[string]struct {
		erase.Record
		Skipped string `json:"skipped"`
	}
	if err := remarshal(result, &devices); err != nil {
		return
	}
	names := make([]string, 0, len(devices))
	for dev := range devices {
		names = append(names, dev)
	}
	sort.Strings(names)
	at := time.Now().UTC().Format(time.RFC3339)
	recs := make([]eraseRecord, 0, len(names))
	for _, dev := range names {
		r := devices[dev]
		recs = append(recs, eraseRecord{Step: name, Device: dev, Method: r.Method, Passes: r.Passes, Bytes: r.Bytes,
			Duration: r.Duration, SamplesChecked: r.SamplesChecked, Skipped: r.Skipped, By: "agent", At: at})
	}
	appendEraseRecords(n, recs...)
}

// cleaningTarget is the target the callback-only ramdisk exported for
// this clean, if it did.
func cleaningTarget(n *model.Node) (target, bool) {
	var stored struct {
		Address    string `json:"address"`
		Port       int    `json:"port"`
		IQN        string `json:"iqn"`
		LUN        uint64 `json:"lun"`
		CHAPUser   string `json:"chap_username"`
		CHAPSecret string `json:"chap_secret"`
	}
	v, ok := n.DriverInternalInfo[cleanTargetKey]
	if !ok || remarshal(v, &stored) != nil || stored.Address == "" {
		return target{}, false
	}
	return target{address: stored.Address, port: stored.Port, iqn: stored.IQN, lun: stored.LUN, notify: true,
		chapUser: stored.CHAPUser, chapSecret: stored.CHAPSecret}, true
}

// storeCleaningTarget keeps the target for the steps to come; the CHAP
// secret's key name has every API answer mask it.
func storeCleaningTarget(n *model.Node, tgt target) {
	n.DriverInternalInfo[cleanTargetKey] = map[string]any{"address": tgt.address, "port": tgt.port, "iqn": tgt.iqn, "lun": tgt.lun,
		"chap_username": tgt.chapUser, "chap_secret": tgt.chapSecret}
}

// conductorErase runs an erase step itself, through the target the
// callback-only ramdisk exported: the same erase and verification the
// agent runs on its own disks, over iSCSI, in a write slot shared with
// deploys.
func (d *Deploy) conductorErase(ctx context.Context, t driver.TaskContext, tgt target, step driver.CleanStep) error {
	if step.Step != stepEraseDevices && step.Step != stepEraseMetadata {
		return fmt.Errorf("clean step %s cannot run through the callback-only ramdisk", step.Step)
	}
	n := t.Node()
	ctx, stop := d.runs.start(ctx, n)
	defer stop()
	rec, err := d.eraseThrough(ctx, t, tgt, step)
	if stoppedBySecondCallback(ctx) {
		// Recorded as erased, an attacker's target would hide a real disk
		// that keeps its data.
		return errors.New(secondCallbackMessage)
	}
	if err != nil {
		return err
	}
	delete(n.DriverInternalInfo, cleanProgressKey)
	rec.By, rec.At = "conductor", time.Now().UTC().Format(time.RFC3339)
	appendEraseRecords(n, rec)
	return nil
}

// eraseThrough logs in to the target and erases its LUN.
func (d *Deploy) eraseThrough(ctx context.Context, t driver.TaskContext, tgt target, step driver.CleanStep) (eraseRecord, error) {
	n := t.Node()
	if err := d.slots.acquire(ctx); err != nil {
		return eraseRecord{}, fmt.Errorf("waiting for a write slot: %w", err)
	}
	defer d.slots.release()
	sess, err := d.dial(ctx, tgt)
	if err != nil {
		return eraseRecord{}, err
	}
	defer sess.Close()
	lun, err := sess.OpenLUN(ctx, tgt.lun)
	if err != nil {
		return eraseRecord{}, fmt.Errorf("open LUN %d of %s: %w", tgt.lun, tgt.iqn, err)
	}
	_, verified, err := checkIdentity(ctx, lun, n)
	if err != nil {
		return eraseRecord{}, err
	}
	dev := meteredDevice{Device: lun.Device(ctx), meter: d.opts.Meter, operation: "erase"}
	name := fmt.Sprintf("%s LUN %d at %s", tgt.iqn, tgt.lun, portal(tgt.address, tgt.port))
	var rec erase.Record
	if step.Step == stepEraseMetadata {
		rec, err = erase.WipeMetadata(ctx, dev, name)
	} else {
		c := d.opts.Clean
		rec, err = erase.Overwrite(ctx, dev, name, erase.Options{Iterations: c.Iterations, Zeroize: c.Zeroize,
			Writers: d.opts.WriteWorkers, Hook: c.EraseHook, Progress: d.eraseProgress(ctx, t, step)})
	}
	if err != nil {
		return eraseRecord{}, err
	}
	if err := sess.Close(); err != nil {
		logging.FromContext(ctx, d.log).WithField("node", n.UUID).WithError(err).Warn("iSCSI logout failed after a complete erase")
	}
	return eraseRecord{Step: step.Step, Device: name, Method: rec.Method, Passes: rec.Passes, Bytes: rec.Bytes,
		Duration: rec.Duration, SamplesChecked: rec.SamplesChecked, IdentityVerified: &verified}, nil
}

// eraseProgress keeps the erase's progress in driver_internal_info, saved
// at most every ProgressInterval, as the agent reports its own.
func (d *Deploy) eraseProgress(ctx context.Context, t driver.TaskContext, step driver.CleanStep) func(done, total int64) {
	var lastSave time.Time
	return func(done, total int64) {
		percent := 100.0
		if total > 0 {
			percent = float64(done*1000/total) / 10
		}
		t.Node().DriverInternalInfo[cleanProgressKey] = map[string]any{"step": step.Step, "bytes_done": done,
			"bytes_total": total, "percent": percent}
		if time.Since(lastSave) < d.opts.ProgressInterval && done < total {
			return
		}
		lastSave = time.Now()
		if err := t.Save(ctx); err != nil {
			logging.FromContext(ctx, d.log).WithField("node", t.Node().UUID).WithError(err).Warn("Could not record erase progress")
		}
	}
}
