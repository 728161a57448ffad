// The deploy suite deploys images onto virtual lab nodes (tests/lab): the
// ipmi hardware type drives each node's ipmi_sim BMC, the lab boots
// ferric-agent from the PXE configuration the conductor wrote, and the
// conductor writes the image over iSCSI into the node's disk file.
// ferric-api and ferric-conductor run as separate processes over RabbitMQ
// and a MySQL database of the suite's own.
package deploy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
)

// callbackTimeout is [conductor] deploy_callback_timeout: long enough for
// the agent to boot and call back on a loaded machine.
const callbackTimeout = 90 * time.Second

var _ = BeforeSuite(func(ctx SpecContext) {
	bin := steps.BuildBinaries()
	root, err := harness.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	agent, err := lab.BuildAgent(ctx, root, bin)
	Expect(err).NotTo(HaveOccurred())

	workDir, err = os.MkdirTemp("", "ferric-e2e-deploy-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, workDir)
	dirs, err = lab.MakeDirs(filepath.Join(workDir, "conductor"))
	Expect(err).NotTo(HaveOccurred())
	imagesDir := filepath.Join(workDir, "served")
	Expect(os.MkdirAll(imagesDir, 0o755)).To(Succeed())
	srv := httptest.NewServer(http.FileServer(http.Dir(imagesDir)))
	DeferCleanup(srv.Close)
	imageURL = srv.URL
	deployKernel = filepath.Join(workDir, "deploy.kernel")
	deployRamdisk = filepath.Join(workDir, "deploy.initramfs")
	Expect(os.WriteFile(deployKernel, []byte("not a kernel: the lab runs ferric-agent"), 0o644)).To(Succeed())
	Expect(os.WriteFile(deployRamdisk, []byte("not a ramdisk"), 0o644)).To(Succeed())

	portalPort, err := lab.FreeTCPPort()
	Expect(err).NotTo(HaveOccurred())
	httpPort, err := lab.FreeTCPPort()
	Expect(err).NotTo(HaveOccurred())

	db := steps.NewDatabase("deploy")
	timings := harness.FastTimings
	timings.CallbackTimeout = callbackTimeout
	base := lab.Configure(harness.BaseConfig(db.Connection(), "amqp", timings), dirs, portalPort, httpPort)
	// Provide and undeploy go straight to available: cleaning through the
	// ramdisk has its own suite (tests/e2e/clean), and erasing the lab's
	// 3 GiB disks before every deploy would only slow this one down.
	base.Set("conductor", "automated_clean", false)
	glance = glancetest.NewServer()
	DeferCleanup(glance.Close)
	base.Set("glance", "auth_type", "none").Set("glance", "endpoint_override", glance.URL)
	deployment = steps.NewDeployment(bin, base)
	Expect(deployment.DBSync(ctx)).To(Succeed())
	_, err = deployment.StartAPI(ctx, "api")
	Expect(err).NotTo(HaveOccurred())
	lab.SetAPIURL(deployment.Base, deployment.APIURL)
	_, err = deployment.StartConductor(ctx, "conductor")
	Expect(err).NotTo(HaveOccurred())
	client = steps.Client(context.Background(), deployment.APIURL)

	// Partition images with root_gb 1 and ephemeral_gb 1 need more than
	// 2 GiB; the disk files are sparse.
	theLab, err = lab.Start(ctx, lab.Options{Nodes: 4, AgentBinary: agent, TFTPRoot: dirs.TFTPRoot,
		DiskSize: 3 << 30, PortalPort: portalPort, TempDir: workDir})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(theLab.Stop()).To(Succeed()) })
}, NodeTimeout(harness.ReadyTimeout*4))

var _ = AfterEach(func() {
	steps.ReportLogsIfFailed(deployment)
	if CurrentSpecReport().Failed() && theLab != nil {
		for _, n := range theLab.Nodes {
			if b, err := os.ReadFile(n.AgentLog()); err == nil {
				AddReportEntry(n.Name+" agent log", tail(string(b), 60))
			}
		}
	}
})
