package cli_test

import (
	"net/http"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/client/fakeironic"
	"github.com/ferricbm/ferric/deploy/image/keystonetest"
)

var _ = Describe("Keystone authentication", func() {
	var (
		fake *fakeironic.Server
		ks   *keystonetest.Server
	)
	BeforeEach(func() {
		fake = startFake("1.52")
		fake.Handle("GET", "/v1/nodes", fakeironic.Response{Status: http.StatusOK, Body: `{"nodes": []}`})
		ks = keystonetest.NewServer(keystonetest.User{Name: "operator", Domain: "Default", Password: "s3cret",
			Project: "admin", ProjectDomain: "Default", Roles: []string{"admin"}, System: true})
		DeferCleanup(ks.Close)
	})

	// tokens are the X-Auth-Token headers the API received, each checked
	// with Keystone.
	expectValidTokens := func() {
		GinkgoHelper()
		reqs := fake.Requests()
		Expect(reqs).NotTo(BeEmpty())
		for _, r := range reqs {
			Expect(ks.Valid(r.Header.Get("X-Auth-Token"))).To(BeTrue(), "%s %s", r.Method, r.Path)
		}
	}

	It("takes a password token from OS_AUTH_URL and sends it to the endpoint given", func(ctx SpecContext) {
		env := map[string]string{"OS_AUTH_TYPE": "password", "OS_AUTH_URL": ks.URL + "/v3", "OS_USERNAME": "operator",
			"OS_PASSWORD": "s3cret", "OS_SYSTEM_SCOPE": "all"}
		expectOK(ferricctl(ctx, fake, env, "node", "list"))
		expectValidTokens()
		Expect(ks.Issued()).To(Equal(1))

		env["OS_PASSWORD"] = "wrong"
		r := ferricctl(ctx, fake, env, "node", "list")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring("authenticate with Keystone at " + ks.URL + "/v3"))
		Expect(r.stderr).NotTo(ContainSubstring("wrong"))

		delete(env, "OS_AUTH_URL")
		r = ferricctl(ctx, fake, env, "node", "list")
		Expect(r.stderr).To(ContainSubstring("password authentication needs --os-auth-url"))
	})

	It("reads a cloud of clouds.yaml from OS_CLIENT_CONFIG_FILE", func(ctx SpecContext) {
		file := filepath.Join(GinkgoT().TempDir(), "clouds.yaml")
		Expect(os.WriteFile(file, []byte(`clouds:
  lab:
    auth:
      auth_url: `+ks.URL+`/v3
      username: operator
      password: s3cret
      user_domain_name: Default
      project_name: admin
      project_domain_name: Default
`), 0o600)).To(Succeed())
		// gophercloud's clouds.yaml reader also looks at the process
		// environment: keep it to the file given.
		GinkgoT().Setenv("OS_CLIENT_CONFIG_FILE", file)
		expectOK(ferricctl(ctx, fake, map[string]string{"OS_CLOUD": "lab", "OS_CLIENT_CONFIG_FILE": file}, "node", "list"))
		expectValidTokens()

		r := ferricctl(ctx, fake, map[string]string{"OS_CLIENT_CONFIG_FILE": file}, "--os-cloud", "elsewhere", "node", "list")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring(`cloud "elsewhere"`))
	})
})
