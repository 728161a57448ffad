// The resilience suite checks what happens when things die: a conductor
// killed with SIGKILL in the middle of deployments, and the message broker
// restarted while requests are flowing. Each spec gets its own database and
// processes with short heartbeat and timeout settings, and the invariant
// checker of the chaos suite watches its database throughout.
package resilience_test

import (
	"context"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/invariant"
)

func TestResilience(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Resilience (conductor death, broker restart)")
}

var binDir string

var _ = BeforeSuite(func() {
	binDir = steps.BuildBinaries()
})

// cluster is one spec's deployment: an API and two conductors.
type cluster struct {
	d        *harness.Deployment
	registry *harness.Registry
	client   *gophercloud.ServiceClient
	a, b     *harness.Service
	checker  *invariant.Checker
}

func startCluster(ctx context.Context, name string) *cluster {
	GinkgoHelper()
	db := steps.NewDatabase(name)
	d := steps.NewDeployment(binDir, harness.BaseConfig(db.Connection(), "amqp", harness.FastTimings))
	DeferCleanup(func() { steps.ReportLogsIfFailed(d) })
	Expect(d.DBSync(ctx)).To(Succeed())
	checker := steps.WatchInvariants(ctx, db.Connection(), harness.FastTimings)
	registry := steps.NewRegistry(db.Connection())
	_, err := d.StartAPI(ctx, "api")
	Expect(err).NotTo(HaveOccurred())
	a, err := d.StartConductor(ctx, "conductor-a")
	Expect(err).NotTo(HaveOccurred())
	b, err := d.StartConductor(ctx, "conductor-b")
	Expect(err).NotTo(HaveOccurred())
	return &cluster{d: d, registry: registry, client: steps.Client(ctx, d.APIURL), a: a, b: b, checker: checker}
}
