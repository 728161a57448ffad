// The clean suite cleans virtual lab nodes (tests/lab) in-band: the ipmi
// hardware type boots each node into ferric-agent, which erases the node's
// disk file as its clean steps, or, for a node whose ramdisk behaves as
// the callback-only bash ramdisk, the conductor erases the disk itself
// through the iSCSI target that ramdisk exports. ferric-api and two
// ferric-conductor processes run over RabbitMQ and a MySQL database of the
// suite's own. Every spec reads the disk file afterwards.
package clean_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab"
)

func TestClean(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "In-band cleaning of virtual lab nodes (ipmi + pxe + iscsi, ferric-agent)")
}

var (
	deployment *harness.Deployment
	conductors []*harness.Service
	client     *gophercloud.ServiceClient
	theLab     *lab.Lab
	workDir    string
	imageURL   string
	ferricctl  steps.Ferricctl
	// httpPorts are the conductors' boot file server ports, by name.
	httpPorts = map[string]int{}
	// deployKernel and deployRamdisk are the dummy deploy images.
	deployKernel, deployRamdisk string
	// connection is the suite's database, which the kill specs watch.
	connection string
	// timings are the fast ones with the callback timeout above.
	timings = func() harness.Timings {
		t := harness.FastTimings
		t.CallbackTimeout = callbackTimeout
		return t
	}()
)

const (
	// diskSize is each lab node's disk: small, so a full erase takes a
	// moment; specs that need a long erase grow their node's disk file.
	diskSize = 64 << 20
	// callbackTimeout is [conductor] clean_callback_timeout: the lab's
	// agents heartbeat every 2 s, so only a dead one lets it expire.
	callbackTimeout = 30 * time.Second
	// eraseFirstPriority is given through the deprecated [agent] option:
	// above erase_devices_metadata's 99, so erase_devices runs first and
	// the erase record shows the option took effect.
	eraseFirstPriority = 100
)

var _ = BeforeSuite(func(ctx SpecContext) {
	suite := steps.NewLabSuite(ctx, "clean")
	workDir, imageURL = suite.WorkDir, suite.ImageURL
	deployKernel, deployRamdisk = suite.DeployKernel, suite.DeployRamdisk
	ferricctlPath := suite.BuildFerricctl(ctx)

	connection = suite.DB.Connection()
	base := suite.Config(timings, 0).Set("agent", "agent_erase_devices_priority", eraseFirstPriority)
	deployment = suite.StartAPI(ctx, base)
	for _, name := range []string{"conductor-a", "conductor-b"} {
		conductors = append(conductors, startConductor(ctx, name))
	}
	client = steps.Client(context.Background(), deployment.APIURL)
	ferricctl = steps.Ferricctl{Path: ferricctlPath, APIURL: deployment.APIURL}
	theLab = suite.StartLab(ctx, 6, diskSize)
}, NodeTimeout(harness.ReadyTimeout*4))

// startConductor starts (or restarts) a conductor. Each has a boot file
// server and an image cache of its own: they share the machine.
func startConductor(ctx context.Context, name string) *harness.Service {
	GinkgoHelper()
	port, ok := httpPorts[name]
	if !ok {
		var err error
		port, err = lab.FreeTCPPort()
		Expect(err).NotTo(HaveOccurred())
		httpPorts[name] = port
	}
	c, err := deployment.StartConductor(ctx, name, func(cfg harness.Config) harness.Config {
		return cfg.Set("deploy", "http_url", fmt.Sprintf("http://127.0.0.1:%d", port)).
			Set("pxe", "instance_master_path", filepath.Join(workDir, name+"-images"))
	})
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = AfterEach(func() {
	steps.ReportLabLogsIfFailed(deployment, theLab)
})
