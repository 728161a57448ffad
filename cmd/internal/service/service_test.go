package service_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/cmd/internal/service"
	"github.com/ferricbm/ferric/pkg/config"
)

var _ = Describe("Startup logging", func() {
	It("hides the database and broker passwords and keeps the rest readable", func() {
		cfg := config.Defaults()
		cfg.Database.Connection = "mysql://ferric:db-pa55@db.example:3306/ferric"
		cfg.RPC.Transport = "amqp"
		cfg.RPC.AMQPURL = "amqp://ferric:mq-pa55@mq.example:5672/"

		var out bytes.Buffer
		log := logrus.New()
		log.SetOutput(&out)
		service.LogStartup(log, service.Single, cfg, "/etc/ferric/ferric.conf")

		Expect(out.String()).NotTo(ContainSubstring("db-pa55"))
		Expect(out.String()).NotTo(ContainSubstring("mq-pa55"))
		Expect(out.String()).To(ContainSubstring("mysql://ferric:xxxxx@db.example:3306/ferric"))
		Expect(out.String()).To(ContainSubstring("mq.example:5672"))
		Expect(out.String()).To(ContainSubstring("/etc/ferric/ferric.conf"))
	})

	It("warns of the deprecated [api] auth_strategy, and names the strategy in force", func() {
		cfg, _, err := service.Load(writeConf("[api]\nauth_strategy = http_basic\nhttp_basic_auth_user_file = "+writeConf("")+"\n"),
			service.Single, nil)
		Expect(err).NotTo(HaveOccurred())
		var out bytes.Buffer
		log := logrus.New()
		log.SetOutput(&out)
		service.LogStartup(log, service.Single, cfg, "ferric.conf")
		Expect(out.String()).To(ContainSubstring("[api] auth_strategy is deprecated: set [DEFAULT] auth_strategy instead"))
		Expect(out.String()).To(ContainSubstring("auth_strategy=http_basic"))
	})

	DescribeTable("RedactURL",
		func(in, want string) { Expect(service.RedactURL(in)).To(Equal(want)) },
		Entry("password masked", "mysql://root:secret@127.0.0.1:3306/ferric", "mysql://root:xxxxx@127.0.0.1:3306/ferric"),
		Entry("no password left alone", "mysql://root@127.0.0.1:3306/ferric", "mysql://root@127.0.0.1:3306/ferric"),
		Entry("sqlite path left alone", "sqlite://var/ferric.db", "sqlite://var/ferric.db"),
		Entry("unparsable value hidden whole", "mysql://root:se%zz@host/db", "<unparsable, hidden>"),
	)
})

var _ = Describe("Load", func() {
	It("makes the split binaries use AMQP even with the single-process default", func() {
		cfg, _, err := service.Load("", service.Single, os.Environ())
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.RPC.Transport).To(Equal("inprocess"))
		for _, role := range []service.Role{service.APIOnly, service.ConductorOnly} {
			cfg, _, err := service.Load("", role, os.Environ())
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.RPC.Transport).To(Equal("amqp"), role.Name)
		}
	})

	It("refuses an invalid configuration, naming the option", func() {
		GinkgoT().Setenv("FERRIC_API_PORT", "0")
		_, _, err := service.Load("", service.Single, os.Environ())
		Expect(err).To(MatchError(ContainSubstring("[api] port")))
	})
})

var _ = Describe("Garbage collector target", func() {
	// debug.SetGCPercent returns the previous target: setting it back
	// reads what tuneGC left and restores the test binary's own.
	gcPercent := func() int {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	BeforeEach(func() {
		p := gcPercent()
		DeferCleanup(func() { debug.SetGCPercent(p) })
		debug.SetGCPercent(100)
	})

	It("is raised for the processes that serve the API when GOGC is unset", func() {
		for _, role := range []service.Role{service.Single, service.APIOnly} {
			debug.SetGCPercent(100)
			pct, ok := service.TuneGC(role, "")
			Expect(ok).To(BeTrue(), role.Name)
			Expect(gcPercent()).To(Equal(service.APIGCPercent))
			Expect(pct).To(Equal(service.APIGCPercent))
		}
	})

	It("is left alone when GOGC is set or the process only conducts", func() {
		_, ok := service.TuneGC(service.APIOnly, "150")
		Expect(ok).To(BeFalse())
		_, ok = service.TuneGC(service.ConductorOnly, "")
		Expect(ok).To(BeFalse())
		Expect(gcPercent()).To(Equal(100))
	})
})

var _ = Describe("API server", func() {
	It("takes its limits from [api]", func() {
		cfg := config.Defaults()
		cfg.API.ReadTimeout, cfg.API.WriteTimeout, cfg.API.IdleTimeout = 7*time.Second, 90*time.Second, 11*time.Second
		cfg.API.MaxHeaderSize = 2048
		srv := service.APIServer(http.NotFoundHandler(), cfg.API)
		Expect([]time.Duration{srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout}).To(Equal([]time.Duration{7 * time.Second, 90 * time.Second, 11 * time.Second}))
		Expect(srv.MaxHeaderBytes).To(Equal(2048))
	})
})

func writeConf(content string) string {
	path := filepath.Join(GinkgoT().TempDir(), "ferric.conf")
	Expect(os.WriteFile(path, []byte(content), 0o600)).To(Succeed())
	return path
}
