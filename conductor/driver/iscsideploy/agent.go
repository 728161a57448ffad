package iscsideploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/deploy/agent"
	"github.com/ferricbm/ferric/deploy/agent/tgt"
	"github.com/ferricbm/ferric/deploy/disk"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// pollTimeout bounds the agent calls made while a heartbeat is handled:
// the agent answers them at once, whatever it is busy with.
const pollTimeout = 30 * time.Second

var _ driver.AgentPoller = (*Deploy)(nil)

// PollAgent asks the agent of a node waiting for its cleaning ramdisk how
// the clean goes, before the node is locked (see cleanPoll). Other states
// need nothing from the agent here.
func (d *Deploy) PollAgent(ctx context.Context, t driver.TaskContext, callbackURL string) (any, error) {
	n := t.Node()
	if n.Maintenance || n.State() != states.CleanWait {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, pollTimeout)
	defer cancel()
	return d.pollCleaning(ctx, t, callbackURL)
}

// HeartbeatPolled handles a heartbeat under the node lock with what
// PollAgent found.
func (d *Deploy) HeartbeatPolled(ctx context.Context, t driver.TaskContext, callbackURL, agentVersion string, polled any, pollErr error) error {
	if t.Node().State() == states.CleanWait {
		p, _ := polled.(*cleanPoll)
		return d.cleanHeartbeat(ctx, t, p, pollErr)
	}
	return d.Heartbeat(ctx, t, callbackURL, agentVersion)
}

// Heartbeat continues a deploy waiting for its ramdisk when an agent
// heartbeats: the agent is asked to export the disk, then the conductor
// writes it. Heartbeats in other states, or of nodes in maintenance, need
// nothing here.
func (d *Deploy) Heartbeat(ctx context.Context, t driver.TaskContext, callbackURL, _ string) error {
	n := t.Node()
	if n.Maintenance || n.State() != states.DeployWait {
		return nil
	}
	if waitingForIt, _ := n.DriverInternalInfo[bootloaderWaitKey].(bool); waitingForIt {
		// The image is written: the callback-only ramdisk that wrote it
		// installs its boot loader and calls back.
		return nil
	}
	drv, err := t.Driver()
	if err != nil {
		return err
	}
	// The agent continues this deploy: a pass_deploy_info with the key
	// from now on is a second callback.
	consumeDeployKey(n)
	if err := t.ProcessEvent(ctx, states.EventResume, ""); err != nil {
		return err
	}
	u, err := url.Parse(callbackURL)
	if err != nil || u.Hostname() == "" {
		return d.fail(ctx, t, drv, fmt.Sprintf("Asynchronous exception for node %s: the agent URL %q is not usable", n.UUID, callbackURL))
	}
	iqn := IQN(n.UUID)
	info, err := parseInstanceInfo(n, d.opts.DefaultBootOption, d.opts.DefaultEphemeralFormat)
	if err != nil {
		return d.fail(ctx, t, drv, fmt.Sprintf("Asynchronous exception for node %s: %s", n.UUID, err))
	}
	conn, err := d.agentConn(n, callbackURL)
	if err != nil {
		return d.fail(ctx, t, drv, fmt.Sprintf("Asynchronous exception for node %s: %s", n.UUID, err))
	}
	export := target{address: u.Hostname(), port: d.opts.PortalPort, iqn: iqn, lun: 1, agent: conn}
	if err := d.startTarget(ctx, &export, !info.preserveEphemeral); err != nil {
		return d.fail(ctx, t, drv, fmt.Sprintf("Failed to start the iSCSI target to deploy the node %s. Error: %s", n.UUID, err))
	}
	return d.continueDeploy(ctx, t, drv, export)
}

// commandResult is an agent command result (docs/cleaning.md §6).
type commandResult struct {
	Name   string          `json:"command_name"`
	Status string          `json:"command_status"`
	Error  json.RawMessage `json:"command_error"`
	Result map[string]any  `json:"command_result"`
}

// errorText is the agent's error for messages: its details when it gave
// them, else the whole error object.
func (r commandResult) errorText() string {
	var e struct {
		Message string `json:"message"`
		Details string `json:"details"`
	}
	if json.Unmarshal(r.Error, &e) == nil && (e.Details != "" || e.Message != "") {
		if e.Details == "" {
			return e.Message
		}
		return e.Details
	}
	return string(r.Error)
}

// errNoCHAP is the failure of a deploy or clean whose ramdisk exports the
// disk without CHAP while [iscsi] allow_export_without_chap is off.
var errNoCHAP = errors.New("the deploy ramdisk does not support CHAP for its iSCSI export; " +
	"use ferric-agent, or set [iscsi] allow_export_without_chap = true to accept an open export")

// acceptOpenExport is errNoCHAP unless the configuration accepts an export
// open to every initiator, which it then warns about.
func (d *Deploy) acceptOpenExport(iqn string) error {
	if !d.opts.AllowExportWithoutCHAP {
		return errNoCHAP
	}
	d.log.WithField("iqn", iqn).Warn("The ramdisk does not support CHAP; its iSCSI export is open to every initiator on the provisioning network")
	return nil
}

// startTarget runs iscsi.start_iscsi_target on the agent and waits for it.
// The export admits only a CHAP account made for this deploy, which
// reaches the agent over its token-bound API and is set in tgt. An
// ironic-python-agent knows no CHAP parameters and refuses them: that is
// errNoCHAP, unless AllowExportWithoutCHAP asks for Ironic's open export,
// which gets a warning.
func (d *Deploy) startTarget(ctx context.Context, t *target, wipe bool) error {
	chap, err := tgt.NewCHAP()
	if err != nil {
		return err
	}
	params := map[string]any{"iqn": t.iqn, "portal_port": d.opts.PortalPort, "wipe_disk_metadata": wipe,
		"chap_username": chap.User, "chap_secret": chap.Secret}
	res, err := d.runCommand(ctx, t.agent, "iscsi.start_iscsi_target", params, true)
	if err == nil && res.Status != "SUCCEEDED" && strings.Contains(string(res.Error), "unexpected keyword argument") {
		if err := d.acceptOpenExport(t.iqn); err != nil {
			return err
		}
		delete(params, "chap_username")
		delete(params, "chap_secret")
		res, err = d.runCommand(ctx, t.agent, "iscsi.start_iscsi_target", params, true)
	} else {
		t.chapUser, t.chapSecret = chap.User, chap.Secret
	}
	if err != nil {
		return err
	}
	if res.Status != "SUCCEEDED" {
		return fmt.Errorf("command %s: %s", strings.ToLower(res.Status), string(res.Error))
	}
	return nil
}

// runCommand POSTs a command to the agent; wait makes the agent answer
// once the command finished.
func (d *Deploy) runCommand(ctx context.Context, conn agentConn, name string, params map[string]any, wait bool) (commandResult, error) {
	body, err := json.Marshal(map[string]any{"name": name, "params": params})
	if err != nil {
		return commandResult{}, err
	}
	var res commandResult
	err = d.agentRequest(ctx, http.MethodPost, conn, url.Values{"wait": {fmt.Sprint(wait)}}, body, &res)
	return res, err
}

// listCommands is GET /v1/commands: every command the agent ran, oldest
// first.
func (d *Deploy) listCommands(ctx context.Context, conn agentConn) ([]commandResult, error) {
	var out struct {
		Commands []commandResult `json:"commands"`
	}
	err := d.agentRequest(ctx, http.MethodGet, conn, url.Values{}, nil, &out)
	return out.Commands, err
}

// verifier is where the write's verification learns what the disk holds:
// the agent, when it can checksum its disk, else nil, which reads the
// written blocks back over iSCSI (a callback-only ramdisk, or an agent
// without the extension, such as IPA).
func (d *Deploy) verifier(ctx context.Context, tgt target) disk.ChecksumSource {
	if tgt.agent.url == "" {
		return nil
	}
	a := agent.DiskChecksums{URL: tgt.agent.url, Token: tgt.agent.token, Client: tgt.agent.client}
	if _, err := a.Checksums(ctx, 0, disk.VerifyBlockSize, disk.VerifyBlockSize); err != nil {
		logging.FromContext(ctx, d.log).WithField("iqn", tgt.iqn).WithError(err).Info("The agent does not checksum its disk; the write is verified by reading it back")
		return nil
	}
	return a
}

// agentConn is how the conductor reaches one run of an agent.
type agentConn struct {
	url, token string
	client     *http.Client
}

// agentConn reaches the node's agent at agentURL with its token. An agent
// that reported a certificate in its heartbeat (agent_verify_ca) is
// trusted with that certificate only: no CA, however trusted elsewhere,
// can vouch for another server at its address.
func (d *Deploy) agentConn(n *model.Node, agentURL string) (agentConn, error) {
	token, _ := n.DriverInternalInfo[agentTokenKey].(string)
	conn := agentConn{url: agentURL, token: token, client: d.opts.Client}
	certPEM, _ := n.DriverInternalInfo[agentVerifyCAKey].(string)
	if certPEM == "" {
		return conn, nil
	}
	pinned, err := agent.PinnedClient(d.opts.Client, certPEM)
	if err != nil {
		return agentConn{}, fmt.Errorf("the agent's certificate: %w", err)
	}
	conn.client = pinned
	return conn, nil
}

func (d *Deploy) agentRequest(ctx context.Context, method string, conn agentConn, q url.Values, body []byte, out any) error {
	endpoint := strings.TrimRight(conn.url, "/") + "/v1/commands?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("agent request: %w", err)
	}
	if conn.token != "" {
		req.Header.Set(agent.TokenHeader, conn.token)
	}
	if id := logging.RequestID(ctx); id != "" {
		req.Header.Set(agent.RequestIDHeader, id)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := conn.client.Do(req)
	if err != nil {
		return fmt.Errorf("agent at %s did not answer: %w", redact(conn.url), unwrapURLError(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("read agent answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("agent answered %s: %s", resp.Status, strings.TrimSpace(string(data)))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("agent answer is not a command result: %w", err)
	}
	return nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
