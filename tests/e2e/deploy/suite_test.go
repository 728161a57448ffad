// The deploy suite deploys images onto virtual lab nodes (tests/lab): the
// ipmi hardware type drives each node's ipmi_sim BMC, the lab boots
// ferric-agent from the PXE configuration the conductor wrote, and the
// conductor writes the image over iSCSI into the node's disk file.
// ferric-api and ferric-conductor run as separate processes over RabbitMQ
// and a MySQL database of the suite's own.
package deploy_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/image/glancetest"
	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab"
)

func TestDeploy(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "iSCSI deploy onto virtual lab nodes (ipmi + pxe + ferric-agent)")
}

var (
	deployment *harness.Deployment
	client     *gophercloud.ServiceClient
	theLab     *lab.Lab
	dirs       lab.Dirs
	// workDir holds the images the suite builds; imageURL serves it.
	workDir  string
	imageURL string
	// deployKernel and deployRamdisk are the dummy deploy images.
	deployKernel, deployRamdisk string
	// glance is the Image API the conductor resolves Glance image ids
	// through.
	glance *glancetest.Server
	// conductorMetrics is the conductor's /metrics ([conductor] metrics_listen).
	conductorMetrics string
)

// callbackTimeout is [conductor] deploy_callback_timeout: long enough for
// the agent to boot and call back on a loaded machine.
const callbackTimeout = 90 * time.Second

var _ = BeforeSuite(func(ctx SpecContext) {
	suite := steps.NewLabSuite(ctx, "deploy")
	workDir, imageURL, dirs = suite.WorkDir, suite.ImageURL, suite.Dirs
	deployKernel, deployRamdisk = suite.DeployKernel, suite.DeployRamdisk
	httpPort, err := lab.FreeTCPPort()
	Expect(err).NotTo(HaveOccurred())

	timings := harness.FastTimings
	timings.CallbackTimeout = callbackTimeout
	base := suite.Config(timings, httpPort)
	// Provide and undeploy go straight to available: cleaning through the
	// ramdisk has its own suite (tests/e2e/clean), and erasing the lab's
	// 3 GiB disks before every deploy would only slow this one down.
	base.Set("conductor", "automated_clean", false)
	metricsPort, err := lab.FreeTCPPort()
	Expect(err).NotTo(HaveOccurred())
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort))
	conductorMetrics = "http://" + metricsAddr + "/metrics"
	glance = glancetest.NewServer()
	DeferCleanup(glance.Close)
	base.Set("glance", "auth_type", "none").Set("glance", "endpoint_override", glance.URL)
	deployment = suite.StartAPI(ctx, base)
	// Only this conductor serves metrics: a spec's own conductor would find
	// the port taken.
	_, err = deployment.StartConductor(ctx, "conductor", func(c harness.Config) harness.Config {
		return c.Set("conductor", "metrics_listen", metricsAddr)
	})
	Expect(err).NotTo(HaveOccurred())
	client = steps.Client(context.Background(), deployment.APIURL)

	// Partition images with root_gb 1 and ephemeral_gb 1 need more than
	// 2 GiB; the disk files are sparse.
	theLab = suite.StartLab(ctx, 4, 3<<30)
}, NodeTimeout(harness.ReadyTimeout*4))

var _ = AfterEach(func() {
	steps.ReportLabLogsIfFailed(deployment, theLab)
})
