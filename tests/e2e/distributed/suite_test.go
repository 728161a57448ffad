// The distributed suite runs ferric-api and two ferric-conductor processes
// over RabbitMQ and a MySQL database of its own, and checks that nodes are
// spread across both conductors and go through their lifecycle.
package distributed_test

import (
	"context"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
)

func TestDistributed(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Distributed mode (ferric-api + 2 ferric-conductor)")
}

var (
	deployment    *harness.Deployment
	registry      *harness.Registry
	client        *gophercloud.ServiceClient
	conductorSvcs []*harness.Service
	ferricctl     steps.Ferricctl
)

var _ = BeforeSuite(func(ctx SpecContext) {
	bin := steps.BuildBinaries()
	db := steps.NewDatabase("distributed")
	deployment = steps.NewDeployment(bin, harness.BaseConfig(db.Connection(), "amqp", harness.FastTimings))
	Expect(deployment.DBSync(ctx)).To(Succeed())
	registry = steps.NewRegistry(db.Connection())
	_, err := deployment.StartAPI(ctx, "api")
	Expect(err).NotTo(HaveOccurred())
	for _, name := range []string{"conductor-a", "conductor-b"} {
		c, err := deployment.StartConductor(ctx, name)
		Expect(err).NotTo(HaveOccurred())
		conductorSvcs = append(conductorSvcs, c)
	}
	client = steps.Client(context.Background(), deployment.APIURL)
	ferricctl = steps.Ferricctl{Path: steps.BuildFerricctl(ctx, GinkgoT().TempDir()), APIURL: deployment.APIURL}
}, NodeTimeout(harness.ReadyTimeout*4))

var _ = AfterEach(func() { steps.ReportLogsIfFailed(deployment) })

func hostnames() []string {
	out := make([]string, len(conductorSvcs))
	for i, c := range conductorSvcs {
		out[i] = c.Host
	}
	return out
}
