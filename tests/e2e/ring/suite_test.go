// The ring suite is the small variant of the scale bench: ferric-api and
// two ferric-conductor processes over RabbitMQ and MySQL share a few hundred
// fake-hardware nodes whose BMC answers slowly, and a third conductor joins
// and one leaves while power sync runs.
package ring_test

import (
	"context"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
)

func TestRing(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Hash ring at a few hundred nodes (ferric-api + 2..3 ferric-conductor)")
}

var (
	deployment *harness.Deployment
	client     *gophercloud.ServiceClient
)

var _ = BeforeSuite(func(ctx SpecContext) {
	bin := steps.BuildBinaries()
	db := steps.NewDatabase("ring")
	base := harness.BaseConfig(db.Connection(), "amqp", harness.FastTimings).
		Set("conductor", "sync_power_state_interval", 2*time.Second).
		Set("conductor", "periodic_max_workers", 16).
		// 2^7 points per conductor keep a joiner's share near 1/N: with
		// Ironic's default of 2^5 one conductor in a few hundred draws
		// close to 1.5/N.
		Set("DEFAULT", "hash_partition_exponent", 7)
	deployment = steps.NewDeployment(bin, base)
	Expect(deployment.DBSync(ctx)).To(Succeed())
	_, err := deployment.StartAPI(ctx, "api")
	Expect(err).NotTo(HaveOccurred())
	client = steps.Client(context.Background(), deployment.APIURL)
}, NodeTimeout(harness.ReadyTimeout*4))

var _ = AfterEach(func() { steps.ReportLogsIfFailed(deployment) })
