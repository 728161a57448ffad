package steps

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab"
)

// LabSuite is the set-up the suites on virtual lab nodes (tests/lab)
// share: built binaries and ferric-agent, a work directory with the
// conductors' directories, a file server for images, dummy deploy images,
// the lab's iSCSI portal port and a MySQL database. Everything is removed
// after the suite.
type LabSuite struct {
	Bin, Agent string
	// WorkDir holds what the suite builds; the files of WorkDir/served
	// are served at ImageURL.
	WorkDir  string
	ImageURL string
	Dirs     lab.Dirs
	// DeployKernel and DeployRamdisk are the dummy deploy images: the lab
	// runs ferric-agent whatever they hold.
	DeployKernel, DeployRamdisk string
	PortalPort                  int
	DB                          *harness.Database
}

// NewLabSuite prepares the suite called name; call it from BeforeSuite.
func NewLabSuite(ctx context.Context, name string) *LabSuite {
	GinkgoHelper()
	s := &LabSuite{Bin: BuildBinaries()}
	root, err := harness.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	s.Agent, err = lab.BuildAgent(ctx, root, s.Bin)
	Expect(err).NotTo(HaveOccurred())

	s.WorkDir, err = os.MkdirTemp("", "ferric-e2e-"+name+"-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, s.WorkDir)
	s.Dirs, err = lab.MakeDirs(filepath.Join(s.WorkDir, "conductor"))
	Expect(err).NotTo(HaveOccurred())
	served := filepath.Join(s.WorkDir, "served")
	Expect(os.MkdirAll(served, 0o755)).To(Succeed())
	srv := httptest.NewServer(http.FileServer(http.Dir(served)))
	DeferCleanup(srv.Close)
	s.ImageURL = srv.URL
	s.DeployKernel = filepath.Join(s.WorkDir, "deploy.kernel")
	s.DeployRamdisk = filepath.Join(s.WorkDir, "deploy.initramfs")
	Expect(os.WriteFile(s.DeployKernel, []byte("not a kernel: the lab runs ferric-agent"), 0o644)).To(Succeed())
	Expect(os.WriteFile(s.DeployRamdisk, []byte("not a ramdisk"), 0o644)).To(Succeed())

	s.PortalPort, err = lab.FreeTCPPort()
	Expect(err).NotTo(HaveOccurred())
	s.DB = NewDatabase(name)
	return s
}

// Config is the lab's configuration of the deployment over AMQP and the
// suite's database; httpPort is the conductor's boot file server (0 when
// each conductor sets its own). The deploy kernel and ramdisk, given as
// file:// URLs, are files of the work directory.
func (s *LabSuite) Config(timings harness.Timings, httpPort int) harness.Config {
	return lab.Configure(harness.BaseConfig(s.DB.Connection(), "amqp", timings), s.Dirs, s.PortalPort, httpPort).
		Set("conductor", "file_url_allowed_paths", []string{s.WorkDir})
}

// StartAPI makes the deployment, migrates its database and starts
// ferric-api, the URL the lab's ramdisks call back.
func (s *LabSuite) StartAPI(ctx context.Context, base harness.Config) *harness.Deployment {
	GinkgoHelper()
	d := NewDeployment(s.Bin, base)
	Expect(d.DBSync(ctx)).To(Succeed())
	_, err := d.StartAPI(ctx, "api")
	Expect(err).NotTo(HaveOccurred())
	lab.SetAPIURL(d.Base, d.APIURL)
	return d
}

// BuildFerricctl builds ferricctl into the suite's binaries and returns
// its path.
func (s *LabSuite) BuildFerricctl(ctx context.Context) string {
	GinkgoHelper()
	return BuildFerricctl(ctx, s.Bin)
}

// StartLab starts nodes lab nodes with disks of diskSize bytes, stopped
// after the suite.
func (s *LabSuite) StartLab(ctx context.Context, nodes int, diskSize int64) *lab.Lab {
	GinkgoHelper()
	l, err := lab.Start(ctx, lab.Options{Nodes: nodes, AgentBinary: s.Agent, TFTPRoot: s.Dirs.TFTPRoot,
		DiskSize: diskSize, PortalPort: s.PortalPort, TempDir: s.WorkDir})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(l.Stop()).To(Succeed()) })
	return l
}

// ReportLabLogsIfFailed is ReportLogsIfFailed plus the tail of each lab
// node's agent log; call it from an AfterEach.
func ReportLabLogsIfFailed(d *harness.Deployment, l *lab.Lab) {
	ReportLogsIfFailed(d)
	if !CurrentSpecReport().Failed() || l == nil {
		return
	}
	for _, n := range l.Nodes {
		if b, err := os.ReadFile(n.AgentLog()); err == nil {
			lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			AddReportEntry(n.Name+" agent log", strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	}
}

// EventuallyBooted waits for the node's latest boot to be from device
// without starting the deploy ramdisk, and returns it. The BMC answers a
// power-on before the simulated firmware has booted, so a node can reach
// its provision state while its latest boot is still the previous one.
func EventuallyBooted(node *lab.Node, device string) lab.Boot {
	GinkgoHelper()
	var last lab.Boot
	Eventually(func(g Gomega) {
		var ok bool
		last, ok = node.LastBoot()
		g.Expect(ok).To(BeTrue(), "%s has booted", node.Name)
		g.Expect(last.Device).To(Equal(device))
		g.Expect(last.Agent).To(BeFalse(), "the deploy ramdisk is not what runs")
	}).WithTimeout(time.Minute).Should(Succeed())
	return last
}
