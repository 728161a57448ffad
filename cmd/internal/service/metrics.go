package service

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor"
	"github.com/ferricbm/ferric/pkg/httpserver"
)

// metricsTimeout bounds each scrape's request and response; a scrape is
// small and Prometheus gives up after its own timeout (10s by default).
const metricsTimeout = 30 * time.Second

// listenMetrics opens the conductor's metrics listener on addr ([conductor]
// metrics_listen), before the conductor starts, so that a taken port stops
// the process before it has announced itself; an empty addr opens none.
func listenMetrics(ctx context.Context, addr string) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on %s: %w", addr, err)
	}
	return ln, nil
}

// serveConductorMetrics serves the conductor's /metrics on ln until the
// returned stop is called; a nil ln serves nothing. The conductor has no
// API port of its own, and the boot file server faces the provisioning
// network, where metrics have no business.
func serveConductorMetrics(ln net.Listener, c *conductor.Conductor, log *logrus.Logger) (stop func()) {
	if ln == nil {
		return func() {}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", c.Metrics())
	srv := httpserver.New(mux, httpserver.Limits{ReadTimeout: metricsTimeout, WriteTimeout: metricsTimeout})
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.WithError(err).Error("conductor metrics server stopped")
		}
	}()
	log.Infof("conductor metrics on http://%s/metrics", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
}
