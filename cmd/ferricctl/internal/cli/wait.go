package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// pollInterval is how often --wait reads what it waits for.
const pollInterval = time.Second

// waitFlag gives cmd --wait, which waits until what; --wait=N waits N
// seconds at most.
func waitFlag(cmd *cobra.Command, what string, seconds *int) {
	cmd.Flags().IntVar(seconds, "wait", 0, "wait until "+what+"; --wait=N for at most N seconds")
	cmd.Flags().Lookup("wait").NoOptDefVal = "0"
}

// waiting reports whether the command was given --wait.
func waiting(cmd *cobra.Command) bool { return cmd.Flags().Changed("wait") }

// waitFor calls check every pollInterval until it reports done or fails,
// for at most seconds (0: as long as it takes). still says what was not
// done when the time is up.
func waitFor(ctx context.Context, seconds int, still string, check func(context.Context) (bool, error)) error {
	timeout := time.Duration(seconds) * time.Second
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		done, err := check(ctx)
		switch {
		case timeout > 0 && ctx.Err() != nil:
			return fmt.Errorf("%s after %s", still, timeout)
		case err != nil:
			return err
		case done:
			return nil
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// waitNode follows a node's provisioning until it rests, printing each
// state and the progress the conductor records (image bytes written,
// disk erasure) to stderr. A transition that does not end in want ("" for
// any state) is an error carrying the node's last_error.
func (s *session) waitNode(ctx context.Context, node, want string, seconds int) error {
	last := ""
	return waitFor(ctx, seconds, "node "+node+" is still busy", func(ctx context.Context) (bool, error) {
		n, err := s.getNode(ctx, node)
		if err != nil {
			return false, err
		}
		state, _ := n["provision_state"].(string)
		target, _ := n["target_provision_state"].(string)
		if line := progressLine(state, n); line != last {
			fmt.Fprintln(s.stderr, line)
			last = line
		}
		switch {
		case target != "":
			return false, nil
		case want != "" && state != want:
			return false, fmt.Errorf("node %s ended in %s, not %s: %v", node, state, want, n["last_error"])
		}
		return true, nil
	})
}

// progressLine is a node's state, with a bar for the work in progress
// that driver_internal_info records.
func progressLine(state string, n nodeJSON) string {
	info, _ := n["driver_internal_info"].(map[string]any)
	for _, p := range []struct{ key, label string }{{"deploy_progress", "image written"}, {"clean_step_progress", "erased"}} {
		progress, ok := info[p.key].(map[string]any)
		if !ok {
			continue
		}
		done, _ := progress["bytes_done"].(float64)
		total, _ := progress["bytes_total"].(float64)
		if total <= 0 {
			continue
		}
		const width = 20
		filled := min(width, int(done/total*width))
		return fmt.Sprintf("%s [%s%s] %3.0f%% %s (%d of %d MiB)", state, strings.Repeat("#", filled), strings.Repeat(".", width-filled),
			100*done/total, p.label, int64(done)>>20, int64(total)>>20)
	}
	return state
}
