package tlsfiles_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/pkg/tlsfiles"
	"github.com/ferricbm/ferric/pkg/tlsfiles/tlsfilestest"
)

// BenchmarkGetCertificate is the cost the reload check adds to each
// handshake: two stats for files unchanged for a while, two stats and two
// reads for files changed in the last seconds.
func BenchmarkGetCertificate(b *testing.B) {
	for _, bc := range []struct {
		name string
		age  time.Duration
	}{{"settled", time.Hour}, {"just-written", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			ca, err := tlsfilestest.NewCA("bench CA")
			if err != nil {
				b.Fatal(err)
			}
			certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
			if err := ca.Issue(certFile, keyFile, "bench", "127.0.0.1"); err != nil {
				b.Fatal(err)
			}
			if bc.age > 0 {
				past := time.Now().Add(-bc.age)
				for _, f := range []string{certFile, keyFile} {
					if err := os.Chtimes(f, past, past); err != nil {
						b.Fatal(err)
					}
				}
			}
			log := logrus.New()
			log.SetOutput(os.Stderr)
			sc, err := tlsfiles.NewServerCert(certFile, keyFile, log)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if c, err := sc.GetCertificate(nil); err != nil || c == nil {
					b.Fatal(err)
				}
			}
		})
	}
}
