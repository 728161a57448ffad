package apiservice_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/bcrypt"

	"github.com/ferricbm/ferric/api-service/apitest"
	"github.com/ferricbm/ferric/pkg/config"
)

var _ = Describe("/metrics", func() {
	// serve starts an API with http_basic authentication (user operator,
	// password s3cret) and public_metrics as given.
	serve := func(public bool) string {
		hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
		Expect(err).NotTo(HaveOccurred())
		users := filepath.Join(GinkgoT().TempDir(), "htpasswd")
		Expect(os.WriteFile(users, []byte("operator:"+string(hash)+"\n"), 0o600)).To(Succeed())
		return apitest.Start(GinkgoT(), apitest.SQLite(GinkgoT()), func(cfg *config.Config) {
			cfg.Default.AuthStrategy = "http_basic"
			cfg.API.HTTPBasicAuthUserFile = users
			cfg.API.PublicMetrics = public
		}).URL
	}
	get := func(url string, authenticated bool) (int, string) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		Expect(err).NotTo(HaveOccurred())
		if authenticated {
			req.SetBasicAuth("operator", "s3cret")
		}
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, string(raw)
	}

	It("counts requests by route template and status, and serves them without credentials", func() {
		url := serve(true)
		code, _ := get(url+"/v1/nodes", true)
		Expect(code).To(Equal(http.StatusOK))
		for _, node := range []string{"1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "2be26c0b-03f2-4d2e-ae87-c02d7f33c123"} {
			code, _ = get(url+"/v1/nodes/"+node, true)
			Expect(code).To(Equal(http.StatusNotFound))
		}
		code, _ = get(url+"/v1/nodes", false)
		Expect(code).To(Equal(http.StatusUnauthorized))
		code, _ = get(url+"/no/such/thing/at/all", true)
		Expect(code).To(Equal(http.StatusNotFound))

		code, body := get(url+"/metrics", false)
		Expect(code).To(Equal(http.StatusOK))
		Expect(body).To(ContainSubstring(`ferric_api_request_duration_seconds_count{method="GET",route="/v1/nodes",status="200"} 1` + "\n"))
		Expect(body).To(ContainSubstring(`ferric_api_request_duration_seconds_count{method="GET",route="unrouted",status="401"} 1` + "\n"))
		Expect(body).To(ContainSubstring(`ferric_api_request_duration_seconds_count{method="GET",route="/v1/nodes/:node",status="404"} 2` + "\n"))
		Expect(body).To(ContainSubstring(`ferric_api_request_duration_seconds_count{method="GET",route="unrouted",status="404"} 1` + "\n"))
		Expect(body).NotTo(ContainSubstring("1be26c0b"))
		Expect(body).To(ContainSubstring("# TYPE ferric_api_request_duration_seconds histogram"))
		Expect(body).To(ContainSubstring("# TYPE go_goroutines gauge"))
	})

	It("asks for an administrator's credentials unless public_metrics is set", func() {
		url := serve(false)
		code, body := get(url+"/metrics", false)
		Expect(code).To(Equal(http.StatusUnauthorized))
		Expect(body).NotTo(ContainSubstring("ferric_"))
		code, body = get(url+"/metrics", true)
		Expect(code).To(Equal(http.StatusOK))
		Expect(body).To(ContainSubstring(`ferric_api_request_duration_seconds_count{method="GET",route="unrouted",status="401"} 1`))
	})
})
