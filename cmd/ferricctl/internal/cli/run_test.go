package cli_test

import (
	"context"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/client/fakeironic"
	"github.com/ferricbm/ferric/cmd/ferricctl/internal/cli"
)

type result struct {
	stdout, stderr string
	code           int
}

// ferricctl runs the command line against the fake with the given
// environment (OS_ENDPOINT pointing at the fake unless env sets it).
func ferricctl(ctx context.Context, fake *fakeironic.Server, env map[string]string, args ...string) result {
	var stdout, stderr strings.Builder
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "OS_ENDPOINT" {
			return fake.URL
		}
		return ""
	}
	code := cli.Execute(ctx, args, &stdout, &stderr, getenv)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// startFake starts a fake Ironic that is stopped when the spec ends;
// unless max is empty, its /v1 document offers versions up to max.
func startFake(max string) *fakeironic.Server {
	fake := fakeironic.New()
	DeferCleanup(fake.Close)
	if max != "" {
		advertise(fake, max)
	}
	return fake
}

// advertise makes the fake's /v1 document offer versions up to max.
func advertise(fake *fakeironic.Server, max string) {
	fake.Handle("GET", "/v1/", fakeironic.Response{Status: http.StatusOK,
		Header: map[string]string{"X-OpenStack-Ironic-API-Minimum-Version": "1.1", "X-OpenStack-Ironic-API-Maximum-Version": max},
		Body: `{"id": "v1", "links": [{"href": "{url}/v1/", "rel": "self"}],
			"version": {"id": "v1", "links": [{"href": "{url}/v1/", "rel": "self"}], "status": "CURRENT", "min_version": "1.1", "version": "` + max + `"}}`})
}

// apiRequests are the recorded requests but version discovery.
func apiRequests(fake *fakeironic.Server) []fakeironic.Request {
	var out []fakeironic.Request
	for _, r := range fake.Requests() {
		if r.Path != "/v1/" {
			out = append(out, r)
		}
	}
	return out
}

func fault(status int, message string) fakeironic.Response {
	return fakeironic.Response{Status: status,
		Body: `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"` + message + `\", \"debuginfo\": null}"}`}
}

func expectOK(r result) {
	GinkgoHelper()
	Expect(r.code).To(Equal(0), "stderr: %s", r.stderr)
	Expect(r.stderr).To(BeEmpty())
}
