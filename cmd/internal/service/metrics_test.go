package service_test

import (
	"context"
	"net"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/ferricbm/ferric/cmd/internal/service"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/config"
)

var _ = Describe("A conductor's metrics listener", func() {
	It("stops the process before the conductor registers when its port is taken", func(ctx SpecContext) {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(taken.Close)
		dir := GinkgoT().TempDir()
		cfg := config.Defaults()
		cfg.Database.Connection = "sqlite://" + filepath.Join(dir, "ferric.db")
		cfg.Default.Host = "metrics-port-taken"
		cfg.Conductor.MetricsListen = taken.Addr().String()
		Expect(cfg.Validate()).To(Succeed())

		log, _ := test.NewNullLogger()
		err = service.RunUntil(context.WithoutCancel(ctx), service.Single, cfg, log)
		Expect(err).To(MatchError(ContainSubstring("listen for metrics on " + taken.Addr().String())))

		store, err := db.Open(ctx, cfg.Database.Connection)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(store.Close)
		_, err = store.GetConductor(ctx, cfg.Default.Host)
		Expect(err).To(HaveOccurred(), "no registration left behind for the API to route to")
	})
})
