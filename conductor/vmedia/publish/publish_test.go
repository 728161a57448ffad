package publish_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/pkg/config"
)

var _ = Describe("New", func() {
	ctx := context.Background()

	It("publishes into <http_root>/vmedia by default", func() {
		cfg := config.Defaults()
		cfg.Deploy.HTTPRoot = GinkgoT().TempDir()
		cfg.Deploy.HTTPURL = "http://127.0.0.1:8088/"
		p, err := publish.New(ctx, cfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(p).To(BeAssignableToTypeOf(&publish.WebServer{}))
		st, err := os.Stat(filepath.Join(cfg.Deploy.HTTPRoot, "vmedia"))
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Mode().Perm()).To(Equal(os.FileMode(0o700)))
		u, err := p.URL(ctx, publish.FloppyName("1be26c0b-03f2-4d2e-ae87-c02d7f33c123"), 15*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(u).To(HavePrefix("http://127.0.0.1:8088/vmedia/image-1be26c0b-03f2-4d2e-ae87-c02d7f33c123?"))
	})

	It("needs [deploy] http_url for the web server", func() {
		cfg := config.Defaults()
		cfg.Deploy.HTTPRoot = GinkgoT().TempDir()
		_, err := publish.New(ctx, cfg)
		Expect(err).To(MatchError(ContainSubstring("needs [deploy] http_url")))
	})

	It("uses the [ilo] container in the [swift] account otherwise", func() {
		cfg := config.Defaults()
		cfg.ILO.UseWebServerForImages = false
		cfg.ILO.SwiftILOContainer = uniqueName("ferric-test")
		cfg.Swift = swiftConfig()
		p, err := publish.New(ctx, cfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(p).To(BeAssignableToTypeOf(&publish.Swift{}))
		u, err := p.URL(ctx, publish.BootISOName("1be26c0b"), 15*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(u).To(ContainSubstring("/" + cfg.ILO.SwiftILOContainer + "/boot-1be26c0b?"))
		admin := newSwiftAdmin()
		admin.do(http.MethodDelete, "/"+cfg.ILO.SwiftILOContainer, nil)
	})
})
