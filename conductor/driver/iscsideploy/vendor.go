package iscsideploy

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/driverinfo"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// PassDeployInfo is the vendor method the callback-only ramdisk calls once
// it exports the disk; PassBootloaderInstallInfo the one it calls, for a
// partition image booting from its disk, once it installed the image's
// boot loader (or failed to).
const (
	PassDeployInfo            = "pass_deploy_info"
	PassBootloaderInstallInfo = "pass_bootloader_install_info"
)

// Vendor is the "iscsi" vendor interface: pass_deploy_info and
// pass_bootloader_install_info.
type Vendor struct{ d *Deploy }

// Vendor returns the vendor interface that continues this deploy
// interface's deploys.
func (d *Deploy) Vendor() *Vendor { return &Vendor{d: d} }

var (
	_ driver.VendorInterface     = (*Vendor)(nil)
	_ driver.VendorCallValidator = (*Vendor)(nil)
)

// Validate needs nothing: the method's arguments are checked by
// ValidateCall.
func (v *Vendor) Validate(context.Context, driver.TaskContext) error { return nil }

// Methods lists pass_deploy_info and pass_bootloader_install_info:
// asynchronous, under the node lock.
func (v *Vendor) Methods() map[string]driver.VendorMethod {
	return map[string]driver.VendorMethod{
		PassDeployInfo: {
			HTTPMethods: []string{http.MethodPost}, Async: true, RequireExclusiveLock: true,
			Description: "Continue an iSCSI deploy: the deploy ramdisk reports the target exporting the node's disk.",
		},
		PassBootloaderInstallInfo: {
			HTTPMethods: []string{http.MethodPost}, Async: true, RequireExclusiveLock: true,
			Description: "Finish an iSCSI deploy booting from disk: the deploy ramdisk reports the boot loader install.",
		},
	}
}

// DriverMethods: none.
func (v *Vendor) DriverMethods() map[string]driver.VendorMethod {
	return map[string]driver.VendorMethod{}
}

// deployInfo is pass_deploy_info's body, checked.
type deployInfo struct {
	target
	ramdiskError string
}

// ValidateCall checks pass_deploy_info synchronously: node waiting for the
// callback (deploy or clean), deploy key (constant time), and the target
// parameters. instance_info is only read by a deploy. A second callback
// with the key is accepted while the node waits, so that Call fails the
// deploy or clean; once the wait is over it is refused, loudly.
func (v *Vendor) ValidateCall(ctx context.Context, t driver.TaskContext, method, _ string, info map[string]any) error {
	if method == PassBootloaderInstallInfo {
		_, err := parseBootloaderInfo(t.Node(), info)
		return err
	}
	if method != PassDeployInfo {
		return nil
	}
	if secondCallback(t.Node(), info) {
		if waiting(t.Node()) {
			return nil
		}
		logging.FromContext(ctx, v.d.log).WithField("node", t.Node().UUID).Error(secondCallbackMessage)
		return errSecondCallback()
	}
	_, err := v.d.parseDeployInfo(t, info)
	return err
}

func waiting(n *model.Node) bool {
	state := n.State()
	return state == states.DeployWait || state == states.CleanWait
}

// secondCallback: the key sent is the one this node's wait state already
// consumed.
func secondCallback(n *model.Node, info map[string]any) bool {
	sent, _ := info["key"].(string)
	return usedKeyMatches(n, sent)
}

func (d *Deploy) parseDeployInfo(t driver.TaskContext, info map[string]any) (*deployInfo, error) {
	n := t.Node()
	if state := n.State(); !waiting(n) {
		return nil, errs.New(errs.KindInvalidStateRequested,
			"Node %s is not waiting for a deploy ramdisk callback; its provision state is %s.", n.UUID, state)
	}
	// In clean wait Ironic skipped this check along with the deploy's;
	// PrepareCleaning issues a key too, so only the ramdisk booted for this
	// clean can steer it.
	known, _ := n.DriverInternalInfo[deployKeyKey].(string)
	sent, _ := info["key"].(string)
	if !keyMatches(known, sent) {
		return nil, errs.InvalidParameterValue("Deploy key does not match")
	}
	str, err := callbackFields(info, "address", "iqn")
	if err != nil {
		return nil, err
	}
	out := &deployInfo{target: target{address: str("address"), iqn: str("iqn"), port: d.opts.PortalPort, lun: 1, notify: true,
		doneKey: doneKey(sent, str("chap_secret")), chapUser: str("chap_username"), chapSecret: str("chap_secret")}, ramdiskError: str("error")}
	if (out.chapUser == "") != (out.chapSecret == "") {
		return nil, errs.InvalidParameterValue("chap_username and chap_secret must be passed together.")
	}
	if strings.ContainsAny(out.address, "/@ ") {
		return nil, errs.InvalidParameterValue("Invalid address %q passed to ironic for deploy.", out.address)
	}
	if p, ok, err := numberParam(info, "port"); err != nil || (ok && (p < 1 || p > 65535)) {
		return nil, errs.InvalidParameterValue("Invalid port %v passed to ironic for deploy.", info["port"])
	} else if ok {
		out.port = int(p)
	}
	if l, ok, err := numberParam(info, "lun"); err != nil || (ok && l < 0) {
		return nil, errs.InvalidParameterValue("Invalid lun %v passed to ironic for deploy.", info["lun"])
	} else if ok {
		out.lun = uint64(l)
	}
	return out, nil
}

// numberParam reads an optional integer given as a JSON number or string.
func numberParam(info map[string]any, key string) (int64, bool, error) {
	switch v := info[key].(type) {
	case nil:
		return 0, false, nil
	case float64:
		if v != float64(int64(v)) {
			return 0, true, fmt.Errorf("not an integer")
		}
		return int64(v), true, nil
	case string:
		i, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return i, true, err
	}
	return 0, true, fmt.Errorf("not an integer")
}

// Call runs pass_deploy_info or pass_bootloader_install_info in the
// worker holding the node lock.
func (v *Vendor) Call(ctx context.Context, t driver.TaskContext, method, _ string, info map[string]any) (any, error) {
	if method != PassDeployInfo && method != PassBootloaderInstallInfo {
		return nil, errs.InvalidParameterValue("No handler for method %s", method)
	}
	drv, err := t.Driver()
	if err != nil {
		return nil, err
	}
	if method == PassBootloaderInstallInfo {
		return nil, v.d.bootloaderCallback(ctx, t, drv, info)
	}
	n := t.Node()
	if secondCallback(n, info) {
		return nil, v.d.failOnSecondCallback(ctx, t, drv)
	}
	// The lock was held since ValidateCall; parsing again only recovers
	// the values.
	di, err := v.d.parseDeployInfo(t, info)
	if err != nil {
		return nil, err
	}
	consumeDeployKey(n)
	if n.State() == states.CleanWait {
		return nil, v.d.cleanCallback(ctx, t, di)
	}
	if err := t.ProcessEvent(ctx, states.EventResume, ""); err != nil {
		return nil, err
	}
	if di.ramdiskError != "" {
		return nil, v.d.fail(ctx, t, drv, "Error returned from deploy ramdisk: "+di.ramdiskError)
	}
	if err := v.d.checkCallbackCHAP(di); err != nil {
		return nil, v.d.fail(ctx, t, drv, fmt.Sprintf("Failed to deploy the node %s. Error: %s", n.UUID, err))
	}
	return nil, v.d.continueDeploy(ctx, t, drv, di.target)
}

// cleanCallback continues a clean the callback-only ramdisk booted for.
// That ramdisk runs no steps, but it exported the disk: the conductor
// erases through that target itself (CleanSteps offers the erase steps
// once it is recorded), so cleaning means the same with either ramdisk.
func (d *Deploy) cleanCallback(ctx context.Context, t driver.TaskContext, di *deployInfo) error {
	n := t.Node()
	if di.ramdiskError != "" {
		return t.FailCleaning(ctx, fmt.Sprintf("Error returned from the cleaning ramdisk of node %s: %s", n.UUID, di.ramdiskError))
	}
	if err := d.checkCallbackCHAP(di); err != nil {
		return t.FailCleaning(ctx, fmt.Sprintf("Failed to clean the node %s. Error: %s", n.UUID, err))
	}
	logging.FromContext(ctx, d.log).WithField("node", n.UUID).Info("The callback-only ramdisk runs no clean steps; the conductor erases through the iSCSI target it exported")
	storeCleaningTarget(n, di.target)
	if err := t.SetCleanSteps(ctx); err != nil {
		return t.FailCleaning(ctx, fmt.Sprintf("Encountered exception for node %s while initiating cleaning. Error: %s", n.UUID, err))
	}
	return t.ContinueCleaning(ctx, false)
}

// checkCallbackCHAP: a callback-only ramdisk that sent no CHAP account
// exports the disk open, which only the configuration may accept. The
// callback is not refused with a 400 as bad input: the ramdisk cannot do
// better, so the deploy or clean fails with the reason in last_error.
func (d *Deploy) checkCallbackCHAP(di *deployInfo) error {
	if di.chapUser != "" {
		return nil
	}
	return d.acceptOpenExport(di.iqn)
}

// failOnSecondCallback ends the deploy or clean waiting for a ramdisk
// whose key was used already.
func (d *Deploy) failOnSecondCallback(ctx context.Context, t driver.TaskContext, drv *driver.Driver) error {
	n := t.Node()
	logging.FromContext(ctx, d.log).WithField("node", n.UUID).Error(secondCallbackMessage)
	if n.State() == states.CleanWait {
		return t.FailCleaning(ctx, secondCallbackMessage)
	}
	return d.fail(ctx, t, drv, secondCallbackMessage)
}

// bootloaderInfo is pass_bootloader_install_info's body, checked; key is
// what its "done" carries.
type bootloaderInfo struct {
	address, key, status, err string
}

// parseBootloaderInfo checks pass_bootloader_install_info: the node waits
// for it, address, key and status are given, and the key is the one the
// deploy's pass_deploy_info used up (the ramdisk has no other). A ramdisk
// that exported the disk with CHAP must repeat its chap_secret: the key
// was readable over TFTP, the secret only ever went to the API, so it is
// what tells the ramdisk from someone who read the key. It is accepted
// once: the wait for it ends with the call.
func parseBootloaderInfo(n *model.Node, info map[string]any) (*bootloaderInfo, error) {
	waitingForIt, _ := n.DriverInternalInfo[bootloaderWaitKey].(bool)
	if n.State() != states.DeployWait || !waitingForIt {
		return nil, errs.New(errs.KindInvalidStateRequested,
			"Node %s is not waiting for a boot loader install callback; its provision state is %s.", n.UUID, n.State())
	}
	str, err := callbackFields(info, "address", "key", "status")
	if err != nil {
		return nil, err
	}
	sent, _ := info["key"].(string)
	if !usedKeyMatches(n, sent) {
		return nil, errs.InvalidParameterValue("Deploy key does not match")
	}
	if proof, _ := n.DriverInternalInfo[bootloaderProofKey].(string); proof != "" && !keyMatches(proof, keyHash(str("chap_secret"))) {
		return nil, errs.InvalidParameterValue("chap_secret does not match the one the deploy ramdisk exported the disk with")
	}
	return &bootloaderInfo{address: str("address"), key: doneKey(sent, str("chap_secret")), status: str("status"), err: str("error")}, nil
}

// doneKey is what the "done" sent to the callback-only ramdisk carries: the
// CHAP secret it exported the disk with, which went only to the API, never
// the deploy key, which anyone on the provisioning network can read from
// the TFTP-served PXE configuration. A ramdisk exporting without CHAP (the
// bash ramdisk) takes any connection as done, and gets the deploy key as
// before.
func doneKey(deployKey, chapSecret string) string {
	if chapSecret != "" {
		return chapSecret
	}
	return deployKey
}

// bootloaderCallback ends a deploy the callback-only ramdisk installed
// the boot loader for: in active when it succeeded, else in deploy failed,
// never active with a disk that cannot boot.
func (d *Deploy) bootloaderCallback(ctx context.Context, t driver.TaskContext, drv *driver.Driver, info map[string]any) error {
	n := t.Node()
	bi, err := parseBootloaderInfo(n, info)
	if err != nil {
		return err
	}
	delete(n.DriverInternalInfo, bootloaderWaitKey)
	delete(n.DriverInternalInfo, bootloaderProofKey)
	if err := t.ProcessEvent(ctx, states.EventResume, ""); err != nil {
		return err
	}
	if bi.status != "SUCCEEDED" {
		return d.fail(ctx, t, drv, fmt.Sprintf("Failed to install bootloader on node %s. Error: %s.", n.UUID, bi.err))
	}
	if err := d.notifyDone(ctx, bi.address, bi.key); err != nil {
		logging.FromContext(ctx, d.log).WithField("node", n.UUID).WithError(err).Warn("Could not tell the deploy ramdisk to finish")
	}
	return d.bootInstance(ctx, t, drv, func() bool { return false })
}

// CallDriver: there are no driver methods.
func (v *Vendor) CallDriver(_ context.Context, method, _ string, _ map[string]any) (any, error) {
	return nil, errs.InvalidParameterValue("No handler for method %s", method)
}

// callbackFields reads a ramdisk callback's string members, trimmed, once
// every required one is there.
func callbackFields(info map[string]any, required ...string) (func(string) string, error) {
	str := func(k string) string {
		s, _ := info[k].(string)
		return strings.TrimSpace(s)
	}
	var missing []string
	for _, k := range required {
		if str(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, errs.New(errs.KindMissingParameterValue, "Parameters %s were not passed to ironic for deploy.", driverinfo.PyList(missing))
	}
	return str, nil
}
