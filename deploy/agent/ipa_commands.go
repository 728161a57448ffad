package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"syscall"

	"github.com/ferricbm/ferric/deploy/agent/tgt"
	"github.com/ferricbm/ferric/deploy/bootloader"
	"github.com/ferricbm/ferric/deploy/erase"
)

// The hardware manager this agent reports: the conductor caches clean steps by its
// name and version and re-fetches them when the version changes.
const (
	hardwareManagerClass   = "FerricHardwareManager"
	hardwareManagerName    = "ferric_hardware_manager"
	hardwareManagerVersion = "1.0"
)

// HardwareManagerVersions is get_clean_steps' hardware_manager_version.
func HardwareManagerVersions() map[string]any {
	return map[string]any{hardwareManagerName: hardwareManagerVersion}
}

// CleanSteps are the in-band clean steps, with IPA's default priorities.
func CleanSteps() []map[string]any {
	return []map[string]any{
		{"step": "erase_devices", "priority": 10, "interface": "deploy", "reboot_requested": false, "abortable": true},
		{"step": "erase_devices_metadata", "priority": 99, "interface": "deploy", "reboot_requested": false, "abortable": true},
	}
}

func (a *Agent) commands() map[string]command {
	return map[string]command{
		"iscsi.start_iscsi_target": {run: a.startISCSITarget},
		"standby.sync":             {run: a.sync},
		"standby.power_off":        {async: true, run: a.powerOffCommand},
		"clean.get_clean_steps":    {run: a.getCleanSteps},
		"clean.execute_clean_step": {async: true, run: a.executeCleanStep},
		"deploy.get_deploy_steps":  {run: a.getDeploySteps},
		"image.install_bootloader": {async: true, run: a.installBootloader},
	}
}

func stringParam(params map[string]any, key string) (string, error) {
	switch v := params[key].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	default:
		return "", invalidCommand(fmt.Sprintf("%s must be a string", key))
	}
}

// boolValue reads an IPA-style boolean: JSON true/false or a string strconv accepts.
func boolValue(v any, def bool) (bool, error) {
	switch v := v.(type) {
	case nil:
		return def, nil
	case bool:
		return v, nil
	case string:
		return strconv.ParseBool(v)
	}
	return false, fmt.Errorf("not a boolean: %v", v)
}

func intValue(v any, def int) (int, error) {
	switch v := v.(type) {
	case nil:
		return def, nil
	case float64:
		if v != float64(int(v)) {
			return 0, fmt.Errorf("not an integer: %v", v)
		}
		return int(v), nil
	case string:
		return strconv.Atoi(v)
	}
	return 0, fmt.Errorf("not an integer: %v", v)
}

// startISCSITarget is iscsi.start_iscsi_target(iqn, portal_port, wipe_disk_metadata,
// chap_username, chap_secret): export the install disk as LUN 1 of iqn to the
// initiator that logs in with that CHAP account. The account is required: an export
// open to every initiator on the provisioning network would let any of them read or
// overwrite the disk. Calling it again with the same iqn and account keeps the export
// (and does not wipe again).
func (a *Agent) startISCSITarget(ctx context.Context, params map[string]any, _ func(any)) (any, error) {
	iqn, err := stringParam(params, "iqn")
	if err != nil {
		return nil, err
	}
	if iqn == "" {
		iqn = "iqn.2008-10.org.openstack:" + a.NodeUUID()
	}
	port, err := intValue(params["portal_port"], a.cfg.portalPort())
	if err != nil || port <= 0 || port > 65535 {
		return nil, invalidCommand(fmt.Sprintf("invalid portal_port %v", params["portal_port"]))
	}
	wipe, err := boolValue(params["wipe_disk_metadata"], false)
	if err != nil {
		return nil, invalidCommand("wipe_disk_metadata: " + err.Error())
	}
	var chap tgt.CHAP
	if chap.User, err = stringParam(params, "chap_username"); err != nil {
		return nil, err
	}
	if chap.Secret, err = stringParam(params, "chap_secret"); err != nil {
		return nil, err
	}
	if chap.User == "" || chap.Secret == "" {
		return nil, invalidCommand("chap_username and chap_secret are required: the disk is exported only with CHAP")
	}
	a.mu.Lock()
	exported := a.exported == iqn
	a.mu.Unlock()
	if wipe && !exported {
		if _, err := erase.Metadata(ctx, a.cfg.Disks[0]); err != nil {
			return nil, iscsiError(err)
		}
	}
	if _, err := a.ensureTarget(ctx, iqn, port, chap); err != nil {
		return nil, iscsiError(err)
	}
	a.log.WithFields(map[string]any{"iqn": iqn, "disk": a.cfg.Disks[0], "port": port}).Info("iSCSI target started")
	return map[string]any{"iscsi_target_iqn": iqn}, nil
}

// installBootloader is image.install_bootloader(root_uuid, efi_system_part_uuid):
// install the written image's own GRUB on the install disk, for UEFI into the ESP
// when efi_system_part_uuid names one, else into the MBR. A failure says the
// instance could not boot and how to deploy it instead.
func (a *Agent) installBootloader(ctx context.Context, params map[string]any, _ func(any)) (any, error) {
	root, err := stringParam(params, "root_uuid")
	if err != nil {
		return nil, err
	}
	if root == "" {
		return nil, invalidCommand("root_uuid is required")
	}
	esp, err := stringParam(params, "efi_system_part_uuid")
	if err != nil {
		return nil, err
	}
	res, err := bootloader.Install(ctx, bootloader.Request{Disk: a.cfg.Disks[0], RootUUID: root, ESPUUID: esp})
	if err != nil {
		return nil, err
	}
	a.log.WithFields(map[string]any{"target": res.Target, "root": res.Root.Device, "disk": a.cfg.Disks[0]}).Info("Boot loader installed")
	return nil, nil
}

func iscsiError(err error) *RESTError {
	return &RESTError{Type: "ISCSIError", Code: http.StatusInternalServerError,
		Message: "Error starting iSCSI target", Details: err.Error()}
}

func (a *Agent) sync(context.Context, map[string]any, func(any)) (any, error) {
	syscall.Sync()
	return nil, nil
}

// powerOffCommand flushes the disks and ends Run, which releases the iSCSI target and
// then calls Config.PowerOff.
func (a *Agent) powerOffCommand(context.Context, map[string]any, func(any)) (any, error) {
	syscall.Sync()
	a.offOnce.Do(func() { close(a.powerOff) })
	return nil, nil
}

func (a *Agent) getCleanSteps(context.Context, map[string]any, func(any)) (any, error) {
	return map[string]any{
		"clean_steps":              map[string]any{hardwareManagerClass: CleanSteps()},
		"hardware_manager_version": HardwareManagerVersions(),
	}, nil
}

func (a *Agent) getDeploySteps(context.Context, map[string]any, func(any)) (any, error) {
	return map[string]any{
		"deploy_steps":             map[string]any{hardwareManagerClass: []map[string]any{}},
		"hardware_manager_version": HardwareManagerVersions(),
	}, nil
}

func cleaningError(details string) *RESTError {
	return &RESTError{Type: "CleaningError", Code: http.StatusInternalServerError, Message: "Clean step failed",
		Details: details}
}

// executeCleanStep is clean.execute_clean_step(step, node, ports, clean_version).
// Steps the conductor chose from another hardware manager version end
// CLEAN_VERSION_MISMATCH, so it refreshes its cache. While a step runs its
// command_result carries the step and its progress.
func (a *Agent) executeCleanStep(ctx context.Context, params map[string]any, progress func(any)) (any, error) {
	step, _ := params["step"].(map[string]any)
	name, _ := step["step"].(string)
	if name == "" {
		return nil, cleaningError("no step given")
	}
	if cv, ok := params["clean_version"].(map[string]any); ok && len(cv) > 0 && !reflect.DeepEqual(cv, HardwareManagerVersions()) {
		return nil, fmt.Errorf("%w: conductor has %v, agent has %v", errVersionMismatch, cv, HardwareManagerVersions())
	}
	node, _ := params["node"].(map[string]any)
	info, _ := node["driver_internal_info"].(map[string]any)
	var (
		result any
		err    error
	)
	switch name {
	case "erase_devices":
		result, err = a.eraseDevices(ctx, step, info, progress)
	case "erase_devices_metadata":
		result, err = a.eraseDevicesMetadata(ctx, step, progress)
	default:
		return nil, cleaningError(fmt.Sprintf("no hardware manager supports clean step %s", name))
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"clean_result": result, "clean_step": step}, nil
}

// eligible lists the disks a clean step may touch, with the reason each other one is
// skipped: the virtual-media floppy and read-only devices.
func (a *Agent) eligible() (disks []string, skipped map[string]any, err error) {
	skipped = map[string]any{}
	for _, d := range a.cfg.Disks {
		if a.isVirtualMedia(d) {
			skipped[d] = map[string]any{"skipped": "virtual media device"}
			continue
		}
		ro, err := erase.ReadOnly(d)
		if err != nil {
			return nil, nil, cleaningError(err.Error())
		}
		if ro {
			skipped[d] = map[string]any{"skipped": "read-only device"}
			continue
		}
		disks = append(disks, d)
	}
	return disks, skipped, nil
}

// eraseDevices overwrites every eligible disk: agent_erase_devices_iterations random
// passes (default 1) and a zero pass when agent_erase_devices_zeroize (default true),
// from the node's driver_internal_info, each disk verified after its last pass.
func (a *Agent) eraseDevices(ctx context.Context, step, info map[string]any, progress func(any)) (any, error) {
	iterations, err := intValue(info["agent_erase_devices_iterations"], 1)
	if err != nil || iterations < 0 {
		return nil, cleaningError(fmt.Sprintf("invalid agent_erase_devices_iterations %v", info["agent_erase_devices_iterations"]))
	}
	zeroize, err := boolValue(info["agent_erase_devices_zeroize"], true)
	if err != nil {
		return nil, cleaningError("invalid agent_erase_devices_zeroize: " + err.Error())
	}
	disks, results, err := a.eligible()
	if err != nil {
		return nil, err
	}
	for i, d := range disks {
		rec, err := erase.Device(ctx, d, erase.Options{
			Iterations: iterations, Zeroize: zeroize, BlockSize: a.cfg.EraseBlockSize, Writers: a.cfg.EraseWriters,
			Hook: a.cfg.EraseHook,
			Progress: func(done, total int64) {
				progress(map[string]any{"clean_step": step, "progress": map[string]any{
					"device": d, "device_index": i + 1, "devices": len(disks),
					"bytes_done": done, "bytes_total": total, "percent": percent(done, total)}})
			},
		})
		if err != nil {
			return nil, cleaningError(err.Error())
		}
		a.log.WithFields(map[string]any{"device": d, "passes": rec.Passes, "bytes": rec.Bytes,
			"seconds": rec.Duration}).Info("Device erased and verified")
		results[d] = rec
	}
	return results, nil
}

func percent(done, total int64) float64 {
	if total == 0 {
		return 100
	}
	return float64(done*1000/total) / 10
}

// eraseDevicesMetadata wipes partition tables and signatures of every eligible disk;
// failures are collected so one bad disk does not leave the others untouched.
func (a *Agent) eraseDevicesMetadata(ctx context.Context, step map[string]any, progress func(any)) (any, error) {
	disks, results, err := a.eligible()
	if err != nil {
		return nil, err
	}
	var errs []error
	for i, d := range disks {
		progress(map[string]any{"clean_step": step, "progress": map[string]any{
			"device": d, "device_index": i + 1, "devices": len(disks)}})
		rec, err := erase.Metadata(ctx, d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		results[d] = rec
	}
	if len(errs) > 0 {
		return nil, cleaningError("Failed to erase the metadata on the device(s): " + errors.Join(errs...).Error())
	}
	return results, nil
}
