// The vmedia suite deploys virtual lab nodes whose BMC is a simulated iLO
// (tests/lab, BMCKind ilo and redfish) by virtual media: the conductor
// inserts the deploy ISO and a parameter floppy, the lab boots
// ferric-agent from them, and the image goes over iSCSI as with PXE.
// ferric-api and two conductors run as separate processes over RabbitMQ
// and a MySQL database of the suite's own: conductor group "swift"
// publishes media in the Swift all-in-one (scripts/swift-aio.sh), through
// a proxy the suite can take down, group "web" on its own boot file
// server.
package vmedia_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/faults"
	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab"
)

func TestVMedia(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Virtual-media deploys of virtual lab nodes (ilo, redfish + iscsi, ferric-agent)")
}

var (
	deployment *harness.Deployment
	// store reads what the API does not show: the users of shared boot
	// ISOs.
	store  *db.Store
	client *gophercloud.ServiceClient
	// iloLab has nodes with an iLO 4 (RIBCL), redfishLab nodes with an
	// iLO 5 (Redfish).
	iloLab, redfishLab *lab.Lab
	workDir, imageURL  string
	ferricctl          steps.Ferricctl
	deployISO          string
	swift              lab.Swift
	// swiftProxy is the swift group's way to Swift.
	swiftProxy *faults.Proxy
	// container is the Swift container of the swift group's conductor.
	container string
)

// Conductor groups: where a node's media are published.
const (
	groupSwift = "swift"
	groupWeb   = "web"
)

// callbackTimeout is [conductor] deploy_callback_timeout: long enough for
// the agent to boot and call back on a loaded machine.
const callbackTimeout = 90 * time.Second

var _ = BeforeSuite(func(ctx SpecContext) {
	suite := steps.NewLabSuite(ctx, "vmedia")
	workDir, imageURL = suite.WorkDir, suite.ImageURL
	var err error
	store, err = db.Open(ctx, suite.DB.Connection())
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(store.Close)
	ferricctlPath := suite.BuildFerricctl(ctx)
	root, err := harness.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	Expect(lab.DeployISO(ctx, root, filepath.Join(workDir, "served", "deploy.iso"))).To(Succeed())
	deployISO = imageURL + "/deploy.iso"
	swift, err = lab.StartSwift(ctx, root)
	Expect(err).NotTo(HaveOccurred())
	container = "ferric-e2e-" + harness.NewUUID()
	// The swift group reaches Swift through a proxy of the suite's, which
	// a spec takes down; tempauth names the storage URL after the address
	// asked, so objects and temporary URLs go through it too.
	auth, err := url.Parse(swift.AuthURL)
	Expect(err).NotTo(HaveOccurred())
	swiftProxy, err = faults.NewProxy(auth.Host)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(swiftProxy.Close)
	proxied := swift
	auth.Host = swiftProxy.Addr()
	proxied.AuthURL = auth.String()

	timings := harness.FastTimings
	timings.CallbackTimeout = callbackTimeout
	base := lab.ConfigureVMedia(suite.Config(timings, 0)).Set("conductor", "automated_clean", false)
	deployment = suite.StartAPI(ctx, base)
	startConductor(ctx, groupSwift, func(c harness.Config) harness.Config { return lab.WithSwift(c, proxied, container) })
	startConductor(ctx, groupWeb, func(c harness.Config) harness.Config {
		return c.Set("ilo", "use_web_server_for_images", true).Set("swift", "auth_type", "")
	})
	client = steps.Client(context.Background(), deployment.APIURL)
	ferricctl = steps.Ferricctl{Path: ferricctlPath, APIURL: deployment.APIURL}

	for _, l := range []struct {
		kind  string
		nodes int
		out   **lab.Lab
	}{{lab.BMCILO, 3, &iloLab}, {lab.BMCRedfish, 1, &redfishLab}} {
		started, err := lab.Start(ctx, lab.Options{Nodes: l.nodes, AgentBinary: suite.Agent, TFTPRoot: suite.Dirs.TFTPRoot,
			DiskSize: diskSize, PortalPort: suite.PortalPort, TempDir: workDir, BMCKind: l.kind})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(started.Stop()).To(Succeed()) })
		*l.out = started
	}
}, NodeTimeout(harness.ReadyTimeout*4))

// diskSize is each lab node's disk: partition images need root_gb 1 (the
// files are sparse).
const diskSize = 1200 << 20

// startConductor starts the conductor of group with a boot file server and
// an image cache of its own; set adds the group's publishing options.
func startConductor(ctx context.Context, group string, set func(harness.Config) harness.Config) {
	GinkgoHelper()
	port, err := lab.FreeTCPPort()
	Expect(err).NotTo(HaveOccurred())
	Expect(os.MkdirAll(filepath.Join(workDir, group+"-httpboot"), 0o755)).To(Succeed())
	set(deployment.Base).Set("conductor", "conductor_group", group).
		Set("deploy", "http_url", fmt.Sprintf("http://127.0.0.1:%d", port)).
		Set("deploy", "http_root", filepath.Join(workDir, group+"-httpboot")).
		Set("pxe", "instance_master_path", filepath.Join(workDir, group+"-images"))
	_, err = deployment.StartConductor(ctx, "conductor-"+group)
	Expect(err).NotTo(HaveOccurred())
}

var _ = AfterEach(func() {
	for _, l := range []*lab.Lab{iloLab, redfishLab} {
		steps.ReportLabLogsIfFailed(deployment, l)
	}
})
