// Package steps holds the Gomega assertions the end-to-end suites share:
// acting on nodes through gophercloud the way a user would, and waiting for
// the states a user would wait for.
package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/harness"
)

// StateTimeout bounds a fake-hardware transition; fake drivers finish in
// well under a second, so this only absorbs scheduling on a loaded machine.
const StateTimeout = 30 * time.Second

// BuildBinaries builds the Ferric binaries into a directory removed after
// the suite; call it from BeforeSuite. FERRIC_E2E_BIN names a directory of
// binaries already built from this tree (the chaos bench builds once for
// its many runs); it is used as it is and left in place.
func BuildBinaries() string {
	if dir := os.Getenv("FERRIC_E2E_BIN"); dir != "" {
		for _, b := range harness.Binaries {
			_, err := os.Stat(filepath.Join(dir, b))
			Expect(err).NotTo(HaveOccurred(), "FERRIC_E2E_BIN holds %s", b)
		}
		return dir
	}
	dir, err := os.MkdirTemp("", "ferric-e2e-bin-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	By("building ferric, ferric-api and ferric-conductor")
	_, err = harness.Build(dir)
	Expect(err).NotTo(HaveOccurred())
	return dir
}

// NewDeployment makes a deployment in a fresh directory whose processes are
// stopped after the current node (spec or container). The directory, with
// the processes' logs, is removed unless FERRIC_E2E_KEEP_LOGS is set.
func NewDeployment(binDir string, base harness.Config) *harness.Deployment {
	dir, err := os.MkdirTemp("", "ferric-e2e-")
	Expect(err).NotTo(HaveOccurred())
	d := harness.NewDeployment(binDir, dir, base)
	DeferCleanup(func() {
		Expect(d.StopAll(20*time.Second)).To(Succeed(), "every process stops on SIGTERM")
		if os.Getenv("FERRIC_E2E_KEEP_LOGS") != "" {
			GinkgoWriter.Printf("logs kept in %s\n", filepath.Clean(dir))
			return
		}
		Expect(os.RemoveAll(dir)).To(Succeed())
	})
	return d
}

// ReportLogsIfFailed attaches the tail of each process's log to the report
// of a failed spec; call it from an AfterEach.
func ReportLogsIfFailed(d *harness.Deployment) {
	if d == nil || !CurrentSpecReport().Failed() {
		return
	}
	for _, p := range d.Processes() {
		AddReportEntry(p.Name+" log", p.LogTail(40))
	}
}

// NewDatabase creates a MySQL database dropped after the current node.
func NewDatabase(prefix string) *harness.Database {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := harness.CreateDatabase(ctx, prefix)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		Expect(db.Drop(ctx)).To(Succeed())
	}, NodeTimeout(30*time.Second))
	return db
}

// NewRegistry opens a read-only view of the deployment's database, closed
// after the current node.
func NewRegistry(connection string) *harness.Registry {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := harness.OpenRegistry(ctx, connection)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(r.Close)
	return r
}

// Client returns a gophercloud client pinned to the server's maximum
// microversion.
func Client(ctx context.Context, apiURL string) *gophercloud.ServiceClient {
	v, err := harness.MaxVersion(ctx, apiURL)
	Expect(err).NotTo(HaveOccurred())
	c, err := harness.NewClient(apiURL, v)
	Expect(err).NotTo(HaveOccurred())
	return c
}

// CreateNode creates a fake-hardware node and returns it.
func CreateNode(ctx context.Context, c *gophercloud.ServiceClient, name string) *nodes.Node {
	GinkgoHelper()
	n, err := nodes.Create(ctx, c, nodes.CreateOpts{
		Name:       name,
		Driver:     "fake-hardware",
		DriverInfo: map[string]any{"fake_password": "s3cret"},
		Properties: map[string]any{"cpus": 4, "memory_mb": 8192},
	}).Extract()
	Expect(err).NotTo(HaveOccurred())
	Expect(n.UUID).NotTo(BeEmpty())
	return n
}

// Provision asks for target and expects the request to be accepted (202).
func Provision(ctx context.Context, c *gophercloud.ServiceClient, uuid string, target nodes.TargetProvisionState) {
	GinkgoHelper()
	err := nodes.ChangeProvisionState(ctx, c, uuid, nodes.ProvisionStateOpts{Target: target}).ExtractErr()
	Expect(err).NotTo(HaveOccurred(), "provision %s on %s", target, uuid)
}

// EventuallyStable waits until the node is in state with no target (the
// transition finished) and returns it.
func EventuallyStable(ctx context.Context, c *gophercloud.ServiceClient, uuid string, state nodes.ProvisionState) *nodes.Node {
	GinkgoHelper()
	return EventuallyNode(ctx, c, uuid, StateTimeout, 200*time.Millisecond, func(g Gomega, n *nodes.Node) {
		g.Expect(n.LastError).To(BeEmpty(), "node %s last_error", uuid)
		g.Expect(n.ProvisionState).To(Equal(string(state)), "node %s provision_state", uuid)
		g.Expect(n.TargetProvisionState).To(BeEmpty(), "node %s target_provision_state", uuid)
		g.Expect(n.Reservation).To(BeEmpty(), "node %s lock", uuid)
	})
}

// EventuallyNode reads the node every poll until ready passes for it,
// within timeout, and returns what it read last.
func EventuallyNode(ctx context.Context, c *gophercloud.ServiceClient, uuid string, timeout, poll time.Duration, ready func(Gomega, *nodes.Node)) *nodes.Node {
	GinkgoHelper()
	var n *nodes.Node
	Eventually(func(g Gomega) {
		var err error
		n, err = nodes.Get(ctx, c, uuid).Extract()
		g.Expect(err).NotTo(HaveOccurred())
		ready(g, n)
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return n
}

// Lifecycle drives a new node enroll -> manageable -> available -> active ->
// available (deleted with automated cleaning), checking each stable state.
func Lifecycle(ctx context.Context, c *gophercloud.ServiceClient, uuid string) {
	GinkgoHelper()
	n := EventuallyStable(ctx, c, uuid, nodes.Enroll)
	Expect(n.Driver).To(Equal("fake-hardware"))

	Provision(ctx, c, uuid, nodes.TargetManage)
	EventuallyStable(ctx, c, uuid, nodes.Manageable)

	Provision(ctx, c, uuid, nodes.TargetProvide)
	EventuallyStable(ctx, c, uuid, nodes.Available)

	Provision(ctx, c, uuid, nodes.TargetActive)
	EventuallyStable(ctx, c, uuid, nodes.Active)

	Provision(ctx, c, uuid, nodes.TargetDeleted)
	EventuallyStable(ctx, c, uuid, nodes.Available)
}

// Delete deletes the node and checks it is gone.
func Delete(ctx context.Context, c *gophercloud.ServiceClient, uuid string) {
	GinkgoHelper()
	Expect(nodes.Delete(ctx, c, uuid).ExtractErr()).To(Succeed())
	_, err := nodes.Get(ctx, c, uuid).Extract()
	Expect(gophercloud.ResponseCodeIs(err, 404)).To(BeTrue(), "GET after DELETE: %v", err)
}

// Name returns a unique node name with a readable prefix.
func Name(prefix string, i int) string {
	return fmt.Sprintf("%s-%d-%s", prefix, i, harness.RandomHex(3))
}

// Parallel runs fn for every item on up to workers goroutines and waits.
func Parallel(workers int, items []string, fn func(item string)) {
	GinkgoHelper()
	work := make(chan string)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				// A failed item is recorded and the worker moves on, so
				// the feeder below never blocks on dead workers.
				func() {
					defer GinkgoRecover()
					fn(it)
				}()
			}
		}()
	}
	for _, it := range items {
		work <- it
	}
	close(work)
	wg.Wait()
}

// CreateAvailable creates n fake-hardware nodes and brings them to
// available, returning their UUIDs.
func CreateAvailable(ctx context.Context, c *gophercloud.ServiceClient, prefix string, n int) []string {
	GinkgoHelper()
	uuids := make([]string, n)
	for i := range uuids {
		uuids[i] = CreateNode(ctx, c, Name(prefix, i)).UUID
	}
	Parallel(8, uuids, func(u string) {
		Provision(ctx, c, u, nodes.TargetManage)
		EventuallyStable(ctx, c, u, nodes.Manageable)
		Provision(ctx, c, u, nodes.TargetProvide)
		EventuallyStable(ctx, c, u, nodes.Available)
	})
	return uuids
}

// AtLeast reports whether the client's microversion is 1.minor or newer,
// for assertions on fields that older versions do not show.
func AtLeast(c *gophercloud.ServiceClient, minor int) bool {
	var major, m int
	if _, err := fmt.Sscanf(c.Microversion, "%d.%d", &major, &m); err != nil {
		return false
	}
	return major == 1 && m >= minor
}
