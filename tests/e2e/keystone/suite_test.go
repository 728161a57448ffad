// The Keystone suite runs `ferric serve` with [DEFAULT] auth_strategy =
// keystone against a Keystone v3 stand-in speaking the token API
// (deploy/image/keystonetest), and checks what system-scoped readers,
// members and admins may do, that expired and revoked tokens are refused,
// and that the deploy ramdisk's endpoints need no token; a lab node
// (tests/lab) deploys through ferric-agent's lookup and heartbeat while
// its ferric-api checks Keystone tokens (lab_test.go).
package keystone_test

import (
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/db/dbtest"
	"github.com/ferricbm/ferric/deploy/image/keystonetest"
	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
)

func TestKeystone(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Keystone authentication and policy (ferric serve)")
}

var (
	deployment *harness.Deployment
	apiURL     string
	keystone   *keystonetest.Server
)

var (
	service = keystonetest.User{Name: "ironic", Domain: "Default", Password: "e2e-ironic-pw", Project: "service", ProjectDomain: "Default", Roles: []string{"admin", "service"}}
	admin   = keystonetest.User{Name: "alice", Domain: "Default", Password: "alice-pw", Project: "ops", ProjectDomain: "Default", Roles: []string{"admin"}, System: true}
	member  = keystonetest.User{Name: "bob", Domain: "Default", Password: "bob-pw", Project: "ops", ProjectDomain: "Default", Roles: []string{"member"}, System: true}
	reader  = keystonetest.User{Name: "carol", Domain: "Default", Password: "carol-pw", Project: "ops", ProjectDomain: "Default", Roles: []string{"reader"}, System: true}
)

var _ = BeforeSuite(func(ctx SpecContext) {
	bin := steps.BuildBinaries()
	keystone = keystonetest.NewServer(service)
	DeferCleanup(keystone.Close)
	for _, u := range []keystonetest.User{admin, member, reader} {
		keystone.AddUser(u)
	}
	dataDir, err := os.MkdirTemp("", "ferric-e2e-keystone-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dataDir)

	base := withKeystone(harness.BaseConfig(dbtest.SQLiteURL(dataDir), "inprocess", harness.FastTimings))
	// Lookups answer for nodes in any state, so that the ramdisk's path
	// can be walked without a deploy.
	base.Set("api", "restrict_lookup", false)
	deployment = steps.NewDeployment(bin, base)
	_, err = deployment.StartServe(ctx, "serve")
	Expect(err).NotTo(HaveOccurred())
	apiURL = deployment.APIURL
}, NodeTimeout(harness.ReadyTimeout*3))

var _ = AfterEach(func() { steps.ReportLogsIfFailed(deployment) })

// withKeystone makes c's API check tokens with the suite's Keystone.
func withKeystone(c harness.Config) harness.Config {
	return c.Set("DEFAULT", "auth_strategy", "keystone").
		Set("keystone_authtoken", "auth_url", keystone.URL+"/v3").
		Set("keystone_authtoken", "username", service.Name).
		Set("keystone_authtoken", "password", service.Password).
		Set("keystone_authtoken", "project_name", service.Project).
		// A revoked token is refused at the latest a second later.
		Set("keystone_authtoken", "token_cache_time", 1)
}
