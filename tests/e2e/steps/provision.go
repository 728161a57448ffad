package steps

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/harness"
)

// failedStates end a deploy or a clean; stableStates are where a node
// rests when nothing is asked of it.
var (
	failedStates = []string{"deploy failed", "clean failed", "error"}
	stableStates = []string{"available", "manageable", "active"}
)

// SetInstanceInfo adds the keys of info to the node's instance_info.
func SetInstanceInfo(ctx context.Context, c *gophercloud.ServiceClient, uuid string, info map[string]any) {
	GinkgoHelper()
	var ops nodes.UpdateOpts
	for k, v := range info {
		ops = append(ops, nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/" + k, Value: v})
	}
	_, err := nodes.Update(ctx, c, uuid, ops).Extract()
	Expect(err).NotTo(HaveOccurred())
}

// EventuallyUnlockedIn waits up to timeout for the node to be in state
// with its lock released, whatever its target, and returns it. A node that
// ends elsewhere (a failed state, or a stable one with nothing asked of
// it) fails the wait at once, with its last_error: the state will not
// come.
func EventuallyUnlockedIn(ctx context.Context, c *gophercloud.ServiceClient, uuid, state string, timeout time.Duration) *nodes.Node {
	GinkgoHelper()
	return eventuallyIn(ctx, c, uuid, state, false, timeout)
}

// EventuallyRests is EventuallyUnlockedIn for a state the node stays in:
// it also has no target any more.
func EventuallyRests(ctx context.Context, c *gophercloud.ServiceClient, uuid, state string, timeout time.Duration) *nodes.Node {
	GinkgoHelper()
	return eventuallyIn(ctx, c, uuid, state, true, timeout)
}

func eventuallyIn(ctx context.Context, c *gophercloud.ServiceClient, uuid, state string, resting bool, timeout time.Duration) *nodes.Node {
	GinkgoHelper()
	return EventuallyNode(ctx, c, uuid, timeout, 250*time.Millisecond, func(g Gomega, n *nodes.Node) {
		ended := slices.Contains(failedStates, n.ProvisionState) ||
			(slices.Contains(stableStates, n.ProvisionState) && n.TargetProvisionState == "")
		if n.ProvisionState != state && ended {
			StopTrying("node " + uuid + " is in " + n.ProvisionState + ": " + n.LastError).Now()
		}
		g.Expect(n.ProvisionState).To(Equal(state))
		if resting {
			g.Expect(n.TargetProvisionState).To(BeEmpty())
		}
		g.Expect(n.Reservation).To(BeEmpty())
	})
}

// EventuallyActive waits for the deploy to end in active, without an
// error and powered on, and returns the node.
func EventuallyActive(ctx context.Context, c *gophercloud.ServiceClient, uuid string, timeout time.Duration) *nodes.Node {
	GinkgoHelper()
	n := EventuallyRests(ctx, c, uuid, "active", timeout)
	Expect(n.LastError).To(BeEmpty())
	Expect(n.PowerState).To(Equal("power on"))
	return n
}

// BuildFerricctl builds ferricctl into dir and returns its path.
func BuildFerricctl(ctx context.Context, dir string) string {
	GinkgoHelper()
	root, err := harness.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "ferricctl")
	build := exec.CommandContext(ctx, "go", "build", "-o", path, "./ferricctl")
	build.Dir = filepath.Join(root, "cmd")
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s", out)
	return path
}

// Ferricctl is the command-line client, run against one API without
// authentication.
type Ferricctl struct {
	Path, APIURL string
}

// Run runs ferricctl with args, expects it to succeed and returns its
// standard output.
func (f Ferricctl) Run(ctx context.Context, args ...string) string {
	GinkgoHelper()
	cmd := exec.CommandContext(ctx, f.Path, args...)
	cmd.Env = append(os.Environ(), "OS_ENDPOINT="+f.APIURL, "OS_AUTH_TYPE=none")
	out, err := cmd.Output()
	var stderr []byte
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		stderr = ee.Stderr
	}
	Expect(err).NotTo(HaveOccurred(), "ferricctl %v: %s", args, stderr)
	return string(out)
}
