package iscsideploy

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/model"
)

// cleanPoll is what the agent said before the node was locked: its steps
// when no step was running yet, else its commands (and, after a version
// mismatch, its steps again). step is the clean step the node was on, so
// an answer about another one is not acted upon.
type cleanPoll struct {
	step     model.JSONObject
	steps    *agentSteps
	commands []commandResult
}

// agentSteps is clean.get_clean_steps' result.
type agentSteps struct {
	CleanSteps map[string][]driver.CleanStep `json:"clean_steps"`
	Versions   map[string]any                `json:"hardware_manager_version"`
}

// pollCleaning asks the agent what docs/cleaning.md §3 needs: its steps when
// the node runs none yet, else its commands.
func (d *Deploy) pollCleaning(ctx context.Context, t driver.TaskContext, agentURL string) (*cleanPoll, error) {
	n := t.Node()
	conn, err := d.agentConn(n, agentURL)
	if err != nil {
		return nil, err
	}
	p := &cleanPoll{step: n.CleanStep}
	if len(n.CleanStep) == 0 {
		steps, err := d.agentCleanSteps(ctx, t, conn)
		p.steps = steps
		return p, err
	}
	cmds, err := d.listCommands(ctx, conn)
	if err != nil {
		return nil, err
	}
	p.commands = cmds
	if last, ok := lastCommand(cmds); ok && last.Status == "CLEAN_VERSION_MISMATCH" {
		p.steps, err = d.agentCleanSteps(ctx, t, conn)
	}
	return p, err
}

func lastCommand(cmds []commandResult) (commandResult, bool) {
	if len(cmds) == 0 {
		return commandResult{}, false
	}
	return cmds[len(cmds)-1], true
}

// agentCleanSteps runs clean.get_clean_steps.
func (d *Deploy) agentCleanSteps(ctx context.Context, t driver.TaskContext, conn agentConn) (*agentSteps, error) {
	ports, err := t.Ports(ctx)
	if err != nil {
		return nil, err
	}
	res, err := d.runCommand(ctx, conn, "clean.get_clean_steps",
		map[string]any{"node": agentNode(t.Node()), "ports": agentPorts(ports)}, true)
	if err != nil {
		return nil, fmt.Errorf("get clean steps: %w", err)
	}
	if res.Status != "SUCCEEDED" {
		return nil, fmt.Errorf("get clean steps: %s", res.errorText())
	}
	var steps agentSteps
	if err := remarshal(res.Result, &steps); err != nil || steps.CleanSteps == nil || steps.Versions == nil {
		return nil, fmt.Errorf("get clean steps: the agent's answer lacks clean_steps or hardware_manager_version")
	}
	return &steps, nil
}

// cleanHeartbeat moves a clean waiting for its agent on (docs/cleaning.md §3):
// a freshly booted agent gets its steps cached and the clean continues; a
// finished step continues the clean (after a reboot if it asked for one);
// a failed one fails it.
func (d *Deploy) cleanHeartbeat(ctx context.Context, t driver.TaskContext, p *cleanPoll, pollErr error) error {
	n := t.Node()
	if n.Maintenance || p == nil && pollErr == nil {
		return nil
	}
	if pollErr != nil {
		return t.FailCleaning(ctx, fmt.Sprintf("Asynchronous exception for node %s: Failed to poll the agent. Exception: %s", n.UUID, pollErr))
	}
	if !sameStep(p.step, n.CleanStep) {
		// The clean moved on since the poll; the next heartbeat reports on
		// where it is now.
		return nil
	}
	if len(n.CleanStep) == 0 {
		// An agent booted for this clean: the callback-only ramdisk's key
		// has nothing more to admit.
		consumeDeployKey(n)
		cacheSteps(n, p.steps)
		if err := t.SetCleanSteps(ctx); err != nil {
			return t.FailCleaning(ctx, fmt.Sprintf("Asynchronous exception for node %s: Node failed to start the first cleaning step. Exception: %s", n.UUID, err))
		}
		return t.ContinueCleaning(ctx, false)
	}
	stepName := jsonText(n.CleanStep)
	last, ok := lastCommand(p.commands)
	if !ok {
		if reboot, _ := n.DriverInternalInfo[cleaningRebootKey].(bool); reboot {
			delete(n.DriverInternalInfo, cleaningRebootKey)
			return t.ContinueCleaning(ctx, false)
		}
		return nil
	}
	if last.Name != "execute_clean_step" {
		return nil
	}
	switch last.Status {
	case "RUNNING":
		if progress, ok := last.Result["progress"]; ok {
			n.DriverInternalInfo[cleanProgressKey] = progress
		}
		return nil
	case "FAILED":
		return t.FailCleaning(ctx, fmt.Sprintf("Agent returned error for clean step %s on node %s : %s.", stepName, n.UUID, last.errorText()))
	case "CLEAN_VERSION_MISMATCH":
		cacheSteps(n, p.steps)
		if isManual(n) {
			return t.ContinueCleaning(ctx, true)
		}
		if err := t.SetCleanSteps(ctx); err != nil {
			return t.FailCleaning(ctx, fmt.Sprintf("Asynchronous exception for node %s: Could not restart automated cleaning after a hardware manager version change. Exception: %s", n.UUID, err))
		}
		return t.ContinueCleaning(ctx, false)
	case "SUCCEEDED":
		var done struct {
			Step   model.JSONObject `json:"clean_step"`
			Result any              `json:"clean_result"`
		}
		if err := remarshal(last.Result, &done); err != nil || !sameStep(done.Step, n.CleanStep) {
			// A previous step's result: this one has not started yet.
			return nil
		}
		recordAgentErase(n, done.Step, done.Result)
		delete(n.DriverInternalInfo, cleanProgressKey)
		if reboot, _ := n.CleanStep["reboot_requested"].(bool); reboot {
			return d.rebootForStep(ctx, t)
		}
		return t.ContinueCleaning(ctx, false)
	default:
		return t.FailCleaning(ctx, fmt.Sprintf("Agent returned unknown status for clean step %s on node %s : %s.", stepName, n.UUID, last.Status))
	}
}

// isManual tells a manual clean from an automated one of a retired node,
// which also ends in manageable.
func isManual(n *model.Node) bool {
	manual, _ := n.DriverInternalInfo["cleaning_manual"].(bool)
	return manual
}

// rebootForStep reboots the node after a step that asked for it; the
// clean goes on when the rebooted agent heartbeats with no command run.
func (d *Deploy) rebootForStep(ctx context.Context, t driver.TaskContext) error {
	n := t.Node()
	drv, err := t.Driver()
	if err != nil {
		return err
	}
	// The rebooted agent looks the node up again and needs a new token.
	driver.ForgetAgentConnection(n)
	key, _ := n.DriverInternalInfo[deployKeyKey].(string)
	if err := d.bootCleaningRamdisk(ctx, t, drv, key); err != nil {
		return t.FailCleaning(ctx, fmt.Sprintf("Reboot requested by clean step %s failed for node %s: %s", jsonText(n.CleanStep), n.UUID, err))
	}
	n.DriverInternalInfo[cleaningRebootKey] = true
	return nil
}

// cacheSteps keeps the agent's steps by interface, with the versions they
// belong to (docs/cleaning.md §3).
func cacheSteps(n *model.Node, steps *agentSteps) {
	if steps == nil {
		return
	}
	byInterface := map[string][]driver.CleanStep{}
	for _, list := range steps.CleanSteps {
		for _, s := range list {
			byInterface[s.Interface] = append(byInterface[s.Interface], s)
		}
	}
	n.DriverInternalInfo[cachedStepsKey] = byInterface
	n.DriverInternalInfo[hwVersionKey] = steps.Versions
	n.DriverInternalInfo[cachedRefreshedKey] = time.Now().UTC().Format(time.RFC3339)
}

// sameStep compares clean steps by interface and name.
func sameStep(a, b model.JSONObject) bool {
	return a["interface"] == b["interface"] && a["step"] == b["step"]
}

func remarshal(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
