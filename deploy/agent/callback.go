package agent

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/ferricbm/ferric/deploy/agent/tgt"
	"github.com/ferricbm/ferric/deploy/bootloader"
)

// passDeployInfo is the bash ramdisk's pass_deploy_info body. Ironic reads address,
// key, iqn and error, and port and lun when present (defaults 3260 and 1).
type passDeployInfo struct {
	Address string `json:"address"`
	Key     string `json:"key"`
	IQN     string `json:"iqn"`
	Port    string `json:"port"`
	LUN     string `json:"lun"`
	Error   string `json:"error"`
	// CHAPUser and CHAPSecret are the account the export admits, a Ferric
	// addition: made up by this ramdisk, since nothing served over TFTP can
	// hold a secret, and sent over the one channel the deploy key binds.
	CHAPUser   string `json:"chap_username,omitempty"`
	CHAPSecret string `json:"chap_secret,omitempty"`
}

// bootloaderInstallInfo is pass_bootloader_install_info's body.
type bootloaderInstallInfo struct {
	Address string `json:"address"`
	Status  string `json:"status"`
	Key     string `json:"key"`
	Error   string `json:"error"`
	// CHAPSecret repeats pass_deploy_info's, a Ferric addition: the key
	// was served over TFTP, the secret only ever went to the API, so it
	// proves the second callback comes from the ramdisk that wrote the
	// first.
	CHAPSecret string `json:"chap_secret,omitempty"`
}

// RunCallback is callback mode, the bash deploy ramdisk's contract: export the first
// disk as LUN 1 of iscsi_target_iqn, POST pass_deploy_info (with the export's error,
// if any), wait for the conductor's "done" on DoneListen, remove the export, and
// power off through Config.PowerOff. With boot_option=local it then installs the
// image's boot loader as the bash ramdisk does (root is the last partition, the ESP
// the one labelled efi-part), reports the outcome in pass_bootloader_install_info
// and waits for "done" again.
func (a *Agent) RunCallback(ctx context.Context) error {
	p := a.cfg.Params
	var missing []string
	for name, v := range map[string]string{"ironic_api_url": p.IronicAPIURL, "deployment_id": p.DeploymentID,
		"deployment_key": p.DeploymentKey, "iscsi_target_iqn": p.IQN} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("callback mode needs kernel parameters %s", strings.Join(missing, ", "))
	}
	a.api.base = p.IronicAPIURL
	log := a.log.WithField("node", p.DeploymentID)

	// Listen before calling back: the conductor may finish and connect quickly.
	done, err := new(net.ListenConfig).Listen(ctx, "tcp", a.cfg.DoneListen)
	if err != nil {
		return fmt.Errorf("listen for done: %w", err)
	}
	defer done.Close()

	port := a.cfg.portalPort()
	chap, exportErr := tgt.NewCHAP()
	if exportErr == nil {
		_, exportErr = a.ensureTarget(ctx, p.IQN, port, chap)
	}
	if exportErr != nil {
		log.WithError(exportErr).Error("Exporting the disk failed")
	}
	body := passDeployInfo{Address: a.cfg.Address, Key: p.DeploymentKey, IQN: p.IQN, Port: strconv.Itoa(port), LUN: "1",
		CHAPUser: chap.User, CHAPSecret: chap.Secret}
	if exportErr != nil {
		body.Error = exportErr.Error()
	}
	err = a.callback(ctx, "pass_deploy_info", body)
	if err == nil && exportErr == nil {
		log.WithField("listen", a.cfg.DoneListen).Info("Deploy info passed; waiting for done")
		err = waitDone(ctx, done, chap.Secret)
	}
	err = errors.Join(exportErr, err, a.stopTarget(context.WithoutCancel(ctx)))
	if err != nil {
		return err
	}
	if p.BootOption == "local" {
		info := bootloaderInstallInfo{Address: a.cfg.Address, Status: StatusSucceeded, Key: p.DeploymentKey, CHAPSecret: chap.Secret}
		res, err := bootloader.Install(ctx, bootloader.Request{Disk: a.cfg.Disks[0], UEFI: p.BootMode == "uefi"})
		if err != nil {
			log.WithError(err).Error("Installing the boot loader failed")
			info.Status, info.Error = StatusFailed, err.Error()
		} else {
			log.WithFields(map[string]any{"target": res.Target, "root": res.Root.Device}).Info("Boot loader installed")
		}
		if err := a.callback(ctx, "pass_bootloader_install_info", info); err != nil {
			return err
		}
		if err := waitDone(ctx, done, chap.Secret); err != nil {
			return err
		}
	}
	log.Info("Deployment done; powering off")
	if a.cfg.PowerOff != nil {
		return a.cfg.PowerOff(context.WithoutCancel(ctx))
	}
	return nil
}

// callback POSTs a vendor passthru method, retrying while the API is unreachable,
// answers 5xx or 409 (node locked), for up to the lookup timeout.
func (a *Agent) callback(ctx context.Context, method string, body any) error {
	deadline := time.Now().Add(a.cfg.LookupTimeout)
	delay := a.cfg.LookupBackoff
	for {
		err := a.api.vendorPassthru(ctx, a.cfg.Params.DeploymentID, method, a.cfg.AuthToken, body)
		if err == nil {
			return nil
		}
		var se *statusError
		if errors.As(err, &se) && se.Status < 500 && se.Status != 409 {
			return err
		}
		if time.Now().Add(delay).After(deadline) {
			return err
		}
		a.log.WithError(err).WithField("retry_in", delay).Warn("Callback failed")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, a.cfg.LookupMaxBackoff)
	}
}

// DoneMessage is what the conductor sends the callback-only ramdisk when the
// image is written: "done", then the CHAP secret the ramdisk made for this
// deploy's export and sent only to the API in pass_deploy_info, so nobody
// else on the network can make the ramdisk let go of a disk in the middle of
// a write. Not the deployment key: that sits in the PXE configuration, which
// anyone on the provisioning network can fetch over TFTP. The bash ramdisk
// takes any connection as done.
func DoneMessage(chapSecret string) []byte { return []byte("done " + chapSecret) }

// waitDone accepts connections until one sends DoneMessage with the secret
// (the conductor connects, writes it and closes); anything else is ignored.
func waitDone(ctx context.Context, ln net.Listener, secret string) error {
	want := DoneMessage(secret)
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("wait for done: %w", err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		msg, _ := io.ReadAll(io.LimitReader(c, 64))
		c.Close()
		if subtle.ConstantTimeCompare(bytes.TrimSpace(msg), want) == 1 {
			return nil
		}
	}
}
