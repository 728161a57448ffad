package iscsideploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/pxe"
	"github.com/ferricbm/ferric/deploy/erase"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// driver_internal_info keys of in-band cleaning (docs/cleaning.md §5). The
// erase record is not among the bookkeeping: it describes the last clean
// and stays after it.
const (
	cachedStepsKey     = "agent_cached_clean_steps"
	cachedRefreshedKey = "agent_cached_clean_steps_refreshed"
	hwVersionKey       = "hardware_manager_version"
	cleaningRebootKey  = "cleaning_reboot"
	// cleanTargetKey is the target the callback-only ramdisk exported
	// during cleaning, through which the conductor erases.
	cleanTargetKey   = "cleaning_iscsi_target"
	cleanProgressKey = "clean_step_progress"
	eraseRecordKey   = "erase_record"
)

// Clean steps the ramdisk (or, for the callback-only ramdisk, the
// conductor) runs, with the agent's default priorities.
const (
	stepEraseDevices  = "erase_devices"
	stepEraseMetadata = "erase_devices_metadata"

	defaultEraseDevicesPriority  = 10
	defaultEraseMetadataPriority = 99
)

// cleaningKeys are what a clean leaves in driver_internal_info for this
// interface; TearDownCleaning removes them.
var cleaningKeys = []string{cleanTargetKey, cleanProgressKey, cleaningRebootKey, hwVersionKey, cachedRefreshedKey,
	"agent_erase_devices_iterations", "agent_erase_devices_zeroize", "agent_continue_if_ata_erase_failed",
	"agent_enable_ata_secure_erase", "disk_erasure_concurrency"}

// CleanOptions configure in-band cleaning.
type CleanOptions struct {
	// EraseDevicesPriority and EraseMetadataPriority override the
	// agent's priorities of erase_devices and erase_devices_metadata
	// when set; 0 leaves a step out of automated cleaning.
	EraseDevicesPriority  *int
	EraseMetadataPriority *int
	// Iterations random passes and, with Zeroize, a zero pass make
	// erase_devices; both zero means the defaults, 1 and true.
	Iterations int
	Zeroize    bool
	// ContinueIfSecureEraseFails and EnableSecureErase are for the agent:
	// the conductor erasing through iSCSI can only overwrite.
	ContinueIfSecureEraseFails bool
	EnableSecureErase          bool
	// EraseHook runs between the conductor's overwrite and its
	// verification (tests damage the disk there).
	EraseHook erase.Hook
}

// cleanOptionsFrom reads the cleaning options; the deprecated [agent]
// erase priority is honoured with a warning.
func cleanOptionsFrom(cfg config.Config, log logrus.FieldLogger) CleanOptions {
	if log == nil {
		log = logging.Discard()
	}
	prio, deprecated := cfg.EraseDevicesPriority()
	if deprecated != "" {
		log.Warn(deprecated)
	}
	return CleanOptions{
		EraseDevicesPriority:       prio,
		EraseMetadataPriority:      cfg.Deploy.EraseDevicesMetadataPriority,
		Iterations:                 cfg.Deploy.ShredRandomOverwriteIterations,
		Zeroize:                    cfg.Deploy.ShredFinalOverwriteWithZeros,
		ContinueIfSecureEraseFails: cfg.Deploy.ContinueIfDiskSecureEraseFails,
		EnableSecureErase:          cfg.Deploy.EnableATASecureErase,
	}
}

var _ driver.CleanStepper = (*Deploy)(nil)

// PrepareCleaning boots the node into the ramdisk for in-band cleaning:
// the erase settings for the agent go into driver_internal_info, a new
// deploy key is issued for the callback-only ramdisk, and the ramdisk gets
// both kinds of parameters, so whichever boots calls back. The flat and
// noop network interfaces have no cleaning network to add (Ironic's
// Neutron cleaning ports have no counterpart here).
func (d *Deploy) PrepareCleaning(ctx context.Context, t driver.TaskContext) (driver.Result, error) {
	drv, err := t.Driver()
	if err != nil {
		return 0, err
	}
	n := t.Node()
	key, err := issueDeployKey(n)
	if err != nil {
		return 0, err
	}
	info := n.DriverInternalInfo
	// Whatever ran before (a deploy's agent, a cleaning target) is gone
	// with the reboot; the new ramdisk gets its own token at lookup.
	driver.ForgetAgentConnection(n)
	for _, k := range cleaningKeys {
		delete(info, k)
	}
	maps.Copy(info, d.agentCleanParams())
	if err := d.bootCleaningRamdisk(ctx, t, drv, key); err != nil {
		return 0, err
	}
	return driver.Wait, nil
}

// bootCleaningRamdisk prepares the cleaning ramdisk's boot afresh and
// reboots the node into it. Every boot of the ramdisk goes through the
// boot interface: on virtual media that builds a new parameter floppy with
// a new pre-issued agent token, replacing the old one, so the rebooted
// agent's lookup hands no token out to whoever asks first.
func (d *Deploy) bootCleaningRamdisk(ctx context.Context, t driver.TaskContext, drv *driver.Driver, key string) error {
	n := t.Node()
	bootMode := pxe.Capability(n.Properties["capabilities"], "boot_mode")
	if bootMode == "" {
		bootMode = "bios"
	}
	// netboot: the callback-only ramdisk would otherwise try to install a
	// boot loader on the disk being cleaned.
	if err := drv.Boot.PrepareRamdisk(ctx, t, d.ramdiskParams(n, key, "netboot", bootMode)); err != nil {
		return fmt.Errorf("prepare the cleaning ramdisk: %w", err)
	}
	// The new ramdisk may look the node up before this worker ends: it
	// must find the old agent token gone, or it gets no token of its own.
	if err := t.Save(ctx); err != nil {
		return err
	}
	return d.reboot(ctx, t, drv)
}

// agentCleanParams are the erase settings the agent reads from the node
// (docs/cleaning.md §2 step 2).
func (d *Deploy) agentCleanParams() map[string]any {
	c := d.opts.Clean
	return map[string]any{
		"agent_erase_devices_iterations":     c.Iterations,
		"agent_erase_devices_zeroize":        c.Zeroize,
		"agent_continue_if_ata_erase_failed": c.ContinueIfSecureEraseFails,
		"agent_enable_ata_secure_erase":      c.EnableSecureErase,
		"disk_erasure_concurrency":           1,
	}
}

// TearDownCleaning powers the node off and removes what PrepareCleaning
// set up: the ramdisk's boot files, its deploy key, agent and target
// addresses, and the cleaning settings.
func (d *Deploy) TearDownCleaning(ctx context.Context, t driver.TaskContext) error {
	drv, err := t.Driver()
	if err != nil {
		return err
	}
	n := t.Node()
	ensureMaps(n)
	driver.ForgetAgentConnection(n)
	for _, k := range append([]string{deployKeyKey}, cleaningKeys...) {
		delete(n.DriverInternalInfo, k)
	}
	return errors.Join(d.setPower(ctx, t, drv, states.PowerOff), drv.Boot.CleanUpRamdisk(ctx, t))
}

// CleanSteps are the in-band steps: the agent's, as cached at its first
// heartbeat, or, when the callback-only ramdisk exported the disk, the
// erase steps the conductor runs through it. Configured priorities
// replace the ramdisk's.
func (d *Deploy) CleanSteps(_ context.Context, t driver.TaskContext) ([]driver.CleanStep, error) {
	n := t.Node()
	if _, ok := n.DriverInternalInfo[cleanTargetKey]; ok {
		return []driver.CleanStep{
			d.withPriority(driver.CleanStep{Interface: string(hwcatalog.Deploy), Step: stepEraseMetadata, Priority: defaultEraseMetadataPriority}),
			d.withPriority(driver.CleanStep{Interface: string(hwcatalog.Deploy), Step: stepEraseDevices, Priority: defaultEraseDevicesPriority}),
		}, nil
	}
	if url, _ := n.DriverInternalInfo[agentURLKey].(string); url == "" {
		return nil, nil
	}
	var cached map[string][]driver.CleanStep
	if err := remarshal(n.DriverInternalInfo[cachedStepsKey], &cached); err != nil || cached == nil {
		return nil, fmt.Errorf("Cleaning steps are not yet available for node %s", n.UUID)
	}
	var out []driver.CleanStep
	for _, s := range cached[string(hwcatalog.Deploy)] {
		out = append(out, d.withPriority(s))
	}
	return out, nil
}

func (d *Deploy) withPriority(s driver.CleanStep) driver.CleanStep {
	var override *int
	switch s.Step {
	case stepEraseDevices:
		override = d.opts.Clean.EraseDevicesPriority
	case stepEraseMetadata:
		override = d.opts.Clean.EraseMetadataPriority
	}
	if override != nil {
		s.Priority = *override
	}
	return s
}

// ExecuteCleanStep starts the step on the agent and waits for it in clean
// wait, or, with the callback-only ramdisk, erases through its target
// before returning.
func (d *Deploy) ExecuteCleanStep(ctx context.Context, t driver.TaskContext, step driver.CleanStep) (driver.Result, error) {
	n := t.Node()
	if tgt, ok := cleaningTarget(n); ok {
		return driver.Done, d.conductorErase(ctx, t, tgt, step)
	}
	agentURL, _ := n.DriverInternalInfo[agentURLKey].(string)
	if agentURL == "" {
		return 0, fmt.Errorf("no agent runs on node %s to execute clean step %s", n.UUID, step.Step)
	}
	ports, err := t.Ports(ctx)
	if err != nil {
		return 0, err
	}
	var stepParam map[string]any
	if err := remarshal(step, &stepParam); err != nil {
		return 0, err
	}
	conn, err := d.agentConn(n, agentURL)
	if err != nil {
		return 0, err
	}
	// The agent answers at once (the step runs in the background); the
	// node is locked meanwhile, so an agent that does not answer must not
	// keep it for the client's whole timeout.
	ctx, cancel := context.WithTimeout(ctx, pollTimeout)
	defer cancel()
	res, err := d.runCommand(ctx, conn, "clean.execute_clean_step", map[string]any{
		"step": stepParam, "node": agentNode(n), "ports": agentPorts(ports),
		"clean_version": n.DriverInternalInfo[hwVersionKey],
	}, false)
	if err != nil {
		return 0, err
	}
	if res.Status == "" {
		return 0, fmt.Errorf("Agent on node %s returned bad command result: %s", n.UUID, res.errorText())
	}
	delete(n.DriverInternalInfo, cleanProgressKey)
	return driver.Wait, nil
}

// agentNode is the node as the agent gets it: what its steps read,
// without the secrets.
func agentNode(n *model.Node) map[string]any {
	info := map[string]any{}
	for k, v := range n.DriverInternalInfo {
		if !strings.Contains(k, "secret") && k != deployKeyKey {
			info[k] = v
		}
	}
	return map[string]any{"uuid": n.UUID, "name": n.Name, "driver": n.Driver, "properties": n.Properties,
		"driver_internal_info": info}
}

func agentPorts(ports []model.Port) []map[string]any {
	out := make([]map[string]any, 0, len(ports))
	for _, p := range ports {
		out = append(out, map[string]any{"uuid": p.UUID, "address": p.Address, "pxe_enabled": p.PXEEnabled})
	}
	return out
}
