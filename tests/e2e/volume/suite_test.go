// The volume suite runs ferric-api and one ferric-conductor as separate
// processes over RabbitMQ and a MySQL database of its own, and drives the
// volume connector and volume target API (1.32/1.33) through the client
// package and the ferricctl binary, the way a user would.
package volume_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
)

func TestVolume(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Volume connectors and targets (ferric-api + ferric-conductor, MySQL, RabbitMQ)")
}

var (
	deployment *harness.Deployment
	store      *db.Store
	apiURL     string
	ferricctl  string
	// bodies keeps every response body the suite received, so the last
	// spec can check that no secret ever left the service.
	bodies recorder
)

// client returns a client pinned to a microversion whose every response
// is recorded.
func client(version string) *gophercloud.ServiceClient {
	GinkgoHelper()
	c, err := harness.NewClient(apiURL, version)
	Expect(err).NotTo(HaveOccurred())
	c.HTTPClient = http.Client{Transport: &bodies}
	return c
}

var _ = BeforeSuite(func(ctx SpecContext) {
	bin := steps.BuildBinaries()
	ferricctl = buildFerricctl(bin)
	database := steps.NewDatabase("volume")
	deployment = steps.NewDeployment(bin, harness.BaseConfig(database.Connection(), "amqp", harness.FastTimings))
	Expect(deployment.DBSync(ctx)).To(Succeed())
	var err error
	store, err = db.Open(ctx, database.Connection())
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(store.Close)
	_, err = deployment.StartAPI(ctx, "api")
	Expect(err).NotTo(HaveOccurred())
	_, err = deployment.StartConductor(ctx, "conductor")
	Expect(err).NotTo(HaveOccurred())
	apiURL = deployment.APIURL
}, NodeTimeout(harness.ReadyTimeout*3))

var _ = AfterEach(func() { steps.ReportLogsIfFailed(deployment) })

// buildFerricctl builds the CLI next to the service binaries (the harness
// builds only the services).
func buildFerricctl(dir string) string {
	GinkgoHelper()
	root, err := harness.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./ferricctl")
	cmd.Dir = filepath.Join(root, "cmd")
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	return filepath.Join(dir, "ferricctl")
}

// recorder is an http.RoundTripper that keeps a copy of every body.
type recorder struct {
	mu  sync.Mutex
	all bytes.Buffer
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	r.add(b)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

func (r *recorder) add(b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all.Write(b)
	r.all.WriteByte('\n')
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all.String()
}

// raw sends a request at a microversion and records the answer.
func raw(ctx context.Context, version, method, path string, body any) *harness.Response {
	GinkgoHelper()
	resp, err := harness.Do(ctx, method, apiURL+path, body, map[string]string{"X-OpenStack-Ironic-API-Version": version})
	Expect(err).NotTo(HaveOccurred())
	bodies.add(resp.Body)
	return resp
}

// fault is the faultstring of an error answer.
func fault(resp *harness.Response) string {
	GinkgoHelper()
	e, err := harness.ParseIronicError(resp.Body)
	Expect(err).NotTo(HaveOccurred(), string(resp.Body))
	return e.Message()
}
