package apiservice_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

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

	It("answers 405 to made-up methods and counts them all under one series, whatever the method and path", func() {
		url := serve(true)
		send := func(method, path string) int {
			req, err := http.NewRequest(method, url+path, nil)
			Expect(err).NotTo(HaveOccurred())
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Body.Close()).To(Succeed())
			return resp.StatusCode
		}
		series := func() int {
			_, body := get(url+"/metrics", false)
			return strings.Count(body, "ferric_api_request_duration_seconds_count{")
		}
		Expect(send("XYZABC", "/v1/nodes")).To(Equal(http.StatusMethodNotAllowed))
		series() // the scrape's own series
		before := series()
		long := strings.Repeat("M", 60000)
		for i := range 50 {
			method := fmt.Sprintf("X%dY", i)
			if i == 0 {
				method = long
			}
			Expect(send(method, fmt.Sprintf("/v1/nodes/n%d/x%d", i, i))).To(Equal(http.StatusMethodNotAllowed), "method %d", i)
		}
		Expect(series()).To(Equal(before), "no series per method or path")
		_, body := get(url+"/metrics", false)
		Expect(body).To(ContainSubstring(`ferric_api_request_duration_seconds_count{method="other",route="unrouted",status="405"} 51` + "\n"))
		Expect(body).NotTo(ContainSubstring("X1Y"))
		Expect(body).NotTo(ContainSubstring("MMMM"))
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
