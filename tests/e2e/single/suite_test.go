// The single-process suite runs `ferric serve` (API and conductor in one
// process, in-process RPC, SQLite) and drives it through gophercloud and raw
// HTTP the way a user would.
package single_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/db/dbtest"
	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
)

func TestSingleProcess(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Single-process mode (ferric serve)")
}

var (
	deployment *harness.Deployment
	serve      *harness.Service
	client     *gophercloud.ServiceClient
	apiURL     string
	// sqliteDir is the directory ferric serve created for its database.
	sqliteDir string
)

var _ = BeforeSuite(func(ctx SpecContext) {
	bin := steps.BuildBinaries()
	dataDir, err := os.MkdirTemp("", "ferric-e2e-sqlite-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dataDir)

	sqliteDir = filepath.Join(dataDir, "var")
	base := harness.BaseConfig(dbtest.SQLiteURL(sqliteDir), "inprocess", harness.FastTimings)
	// JSON lines, which the request-id spec parses.
	base.Set("DEFAULT", "log_format", "json")
	deployment = steps.NewDeployment(bin, base)
	serve, err = deployment.StartServe(ctx, "serve")
	Expect(err).NotTo(HaveOccurred())
	apiURL = deployment.APIURL
	client = steps.Client(context.Background(), apiURL)
}, NodeTimeout(harness.ReadyTimeout*3))

var _ = AfterEach(func() { steps.ReportLogsIfFailed(deployment) })
