package main

import (
	"net/http"
	"net/http/httptest"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/metrics"
)

var _ = Describe("scrapeRuntime", func() {
	It("reads goroutines and the heap goal from a conductor's metrics page", func(ctx SpecContext) {
		srv := httptest.NewServer(metrics.NewConductor().Handler())
		DeferCleanup(srv.Close)
		goroutines, heapGoal, err := scrapeRuntime(ctx, srv.URL)
		Expect(err).NotTo(HaveOccurred())
		// This test process runs at least ginkgo's and the server's.
		Expect(goroutines).To(BeNumerically(">=", 2))
		Expect(heapGoal).To(BeNumerically(">", 0))
	})

	It("fails on a page without the Go runtime's metrics", func(ctx SpecContext) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("ferric_workers_busy 0\n"))
		}))
		DeferCleanup(srv.Close)
		_, _, err := scrapeRuntime(ctx, srv.URL)
		Expect(err).To(MatchError(ContainSubstring("no go_goroutines")))
	})
})
