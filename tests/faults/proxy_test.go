package faults_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/faults"
)

var _ = Describe("A proxy in front of a service", func() {
	It("forwards, takes the service down for its clients only, and brings it back on the same address", func() {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "served")
		}))
		DeferCleanup(srv.Close)
		p, err := faults.NewProxy(strings.TrimPrefix(srv.URL, "http://"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Close)
		// One client, whose kept-alive connection Down must cut too.
		client := &http.Client{Transport: &http.Transport{}}
		get := func(base string) (string, error) {
			resp, err := client.Get(base + "/")
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return string(b), err
		}

		Expect(get("http://" + p.Addr())).To(Equal("served"))
		Expect(p.Down()).To(Succeed())
		_, err = get("http://" + p.Addr())
		Expect(err).To(MatchError(ContainSubstring("connection refused")))
		Expect(get(srv.URL)).To(Equal("served"), "the service itself still runs")

		Expect(p.Up()).To(Succeed())
		Expect(get("http://" + p.Addr())).To(Equal("served"))
	})
})
