package iscsideploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/states"
)

// Heartbeat continues a deploy waiting for its ramdisk when an agent
// heartbeats: the agent is asked to export the disk, then the conductor
// writes it. Heartbeats in other states, or of nodes in maintenance, need
// nothing here.
func (d *Deploy) Heartbeat(ctx context.Context, t driver.TaskContext, callbackURL, _ string) error {
	n := t.Node()
	if n.Maintenance || deref(n.ProvisionState) != states.DeployWait {
		return nil
	}
	ct, drv, err := asConductorTask(t)
	if err != nil {
		return err
	}
	if err := ct.ProcessEvent(ctx, states.EventResume, ""); err != nil {
		return err
	}
	u, err := url.Parse(callbackURL)
	if err != nil || u.Hostname() == "" {
		return d.fail(ctx, ct, drv, fmt.Sprintf("Asynchronous exception for node %s: the agent URL %q is not usable", n.UUID, callbackURL))
	}
	iqn := IQN(n.UUID)
	info, err := parseInstanceInfo(n, d.opts.DefaultBootOption, d.opts.DefaultEphemeralFormat)
	if err != nil {
		return d.fail(ctx, ct, drv, fmt.Sprintf("Asynchronous exception for node %s: %s", n.UUID, err))
	}
	token, _ := n.DriverInternalInfo[agentTokenKey].(string)
	if err := d.startTarget(ctx, callbackURL, token, iqn, !info.preserveEphemeral); err != nil {
		return d.fail(ctx, ct, drv, fmt.Sprintf("Failed to start the iSCSI target to deploy the node %s. Error: %s", n.UUID, err))
	}
	return d.continueDeploy(ctx, ct, drv, target{address: u.Hostname(), port: d.opts.PortalPort, iqn: iqn, lun: 1})
}

// commandResult is the part of an agent command result the conductor reads.
type commandResult struct {
	Status string          `json:"command_status"`
	Error  json.RawMessage `json:"command_error"`
}

// startTarget runs iscsi.start_iscsi_target on the agent and waits for it.
func (d *Deploy) startTarget(ctx context.Context, agentURL, token, iqn string, wipe bool) error {
	body, err := json.Marshal(map[string]any{"name": "iscsi.start_iscsi_target",
		"params": map[string]any{"iqn": iqn, "portal_port": d.opts.PortalPort, "wipe_disk_metadata": wipe}})
	if err != nil {
		return err
	}
	q := url.Values{"wait": {"true"}}
	if token != "" {
		q.Set("agent_token", token)
	}
	endpoint := strings.TrimRight(agentURL, "/") + "/v1/commands?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("agent request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.opts.Client.Do(req)
	if err != nil {
		// The error names the URL, whose query holds the token.
		return fmt.Errorf("agent at %s did not answer: %w", redact(agentURL), unwrapURLError(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("read agent answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("agent answered %s: %s", resp.Status, strings.TrimSpace(string(data)))
	}
	var res commandResult
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("agent answer is not a command result: %w", err)
	}
	if res.Status != "SUCCEEDED" {
		return fmt.Errorf("command %s: %s", strings.ToLower(res.Status), string(res.Error))
	}
	return nil
}

func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}
