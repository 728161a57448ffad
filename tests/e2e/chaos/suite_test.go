// The chaos suite injects one fault per spec into a deployment under load
// (an API and two conductors, fake-hardware nodes whose BMC calls take
// time, a load that keeps deploying, undeploying, cleaning and listing)
// while an invariant checker watches the database. A spec passes when the
// fault broke none of the invariants (package invariant) and every request
// the API accepted ended where such a request may end. Each scenario runs
// once here; `make bench BENCH_ARGS='-sections chaos'` repeats them.
package chaos_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/faults"
	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/invariant"
	"github.com/ferricbm/ferric/tests/load"
)

func TestChaos(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Chaos (faults under load, invariants checked)")
}

var binDir string

var _ = BeforeSuite(func() {
	binDir = steps.BuildBinaries()
})

var timings = harness.FastTimings

// bounds are the checker's; the specs wait for a takeover within them too.
var bounds = invariant.BoundsFor(timings)

// cluster is one spec's deployment under watch.
type cluster struct {
	d       *harness.Deployment
	client  *gophercloud.ServiceClient
	a, b    *harness.Service
	broker  *faults.Proxy
	checker *invariant.Checker
}

// options vary a cluster: a database other than the shared server's.
type options struct {
	connection string
}

func startCluster(ctx context.Context, name string, o options) *cluster {
	GinkgoHelper()
	if o.connection == "" {
		o.connection = steps.NewDatabase("chaos_" + name).Connection()
	}
	broker, err := faults.NewProxy("127.0.0.1:5672")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(broker.Close)
	base := harness.BaseConfig(o.connection, "amqp", timings).
		Set("rpc", "amqp_url", viaProxy(harness.AMQPURL(), broker.Addr())).
		Set("conductor", "automated_clean", true).
		Set("conductor", "power_state_change_timeout", 10*time.Second)
	d := steps.NewDeployment(binDir, base)
	DeferCleanup(func() { steps.ReportLogsIfFailed(d) })
	Expect(d.DBSync(ctx)).To(Succeed())
	checker := steps.WatchInvariants(ctx, o.connection, timings)
	_, err = d.StartAPI(ctx, "api")
	Expect(err).NotTo(HaveOccurred())
	a, err := d.StartConductor(ctx, "conductor-a")
	Expect(err).NotTo(HaveOccurred())
	b, err := d.StartConductor(ctx, "conductor-b")
	Expect(err).NotTo(HaveOccurred())
	return &cluster{d: d, client: steps.Client(ctx, d.APIURL), a: a, b: b, broker: broker, checker: checker}
}

// viaProxy is the AMQP URL with its host:port replaced by the proxy's.
func viaProxy(amqpURL, addr string) string {
	u, err := url.Parse(amqpURL)
	Expect(err).NotTo(HaveOccurred())
	u.Host = addr
	return u.String()
}

// createNodes creates n fake-hardware nodes whose BMC answers each call
// after latency, with extra driver_info, and leaves them in enroll.
func (c *cluster) createNodes(ctx context.Context, prefix string, n int, latency time.Duration, extra map[string]any) []string {
	GinkgoHelper()
	uuids := make([]string, n)
	for i := range uuids {
		info := map[string]any{"fake_latency": latency.String()}
		for k, v := range extra {
			info[k] = v
		}
		node, err := nodes.Create(ctx, c.client, nodes.CreateOpts{
			Name: steps.Name(prefix, i), Driver: "fake-hardware", DriverInfo: info,
		}).Extract()
		Expect(err).NotTo(HaveOccurred())
		uuids[i] = node.UUID
	}
	return uuids
}

// run loads the cluster for warmup, injects the fault, keeps the load on
// for after, then stops it and expects no invariant broken.
func (c *cluster) run(ctx context.Context, scenario string, uuids []string, warmup, after time.Duration, fault func()) {
	GinkgoHelper()
	l := load.Start(c.client, uuids, 6, c.checker)
	stopped := false
	defer func() {
		if !stopped {
			l.Stop()
		}
	}()
	sleep(ctx, warmup)
	By("injecting the fault: " + scenario)
	fault()
	sleep(ctx, after)
	l.Stop()
	stopped = true
	By("waiting for every accepted request to end")
	steps.ExpectInvariantsKept(ctx, c.checker, scenario, fmt.Sprintf("%d accepted, %d refused, %d reads, %d failed reads",
		l.Stats.Accepted.Load(), l.Stats.Refused.Load(), l.Stats.Reads.Load(), l.Stats.Failed.Load()))
	Expect(l.Stats.Accepted.Load()).To(BeNumerically(">", 0), "the load got requests accepted")
}

// sleep waits d unless the spec ends first.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
