package apiservice

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

const (
	healthLive  = "/healthz/live"
	healthReady = "/healthz/ready"
	// healthCheckTimeout bounds each readiness check; both together stay
	// below the chart's probe timeout (5s), so a hung check reads as 503,
	// not as a probe timeout.
	healthCheckTimeout = 2 * time.Second
)

// isHealthProbe reports whether path is a probe's: served outside /v1 and
// without authentication, as a kubelet has no credentials.
func isHealthProbe(path string) bool { return path == healthLive || path == healthReady }

// getLive answers as long as the process serves HTTP: a restart cannot cure
// an unreachable database, so liveness does not look at one.
func (s *Server) getLive(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// getReady answers 200 when the database and the RPC broker are reachable
// and 503 otherwise, naming each check's result but never the error, which
// may carry addresses; the error goes to the log.
func (s *Server) getReady(c echo.Context) error {
	checks := []struct {
		name string
		run  func(context.Context) error
	}{{"database", s.store.Ping}, {"rpc", s.rpc.Check}}
	status, results := http.StatusOK, make(map[string]string, len(checks))
	for _, ch := range checks {
		ctx, cancel := context.WithTimeout(c.Request().Context(), healthCheckTimeout)
		err := ch.run(ctx)
		cancel()
		if err != nil {
			s.log.WithError(err).Warnf("readiness: %s unreachable", ch.name)
			status, results[ch.name] = http.StatusServiceUnavailable, "unreachable"
			continue
		}
		results[ch.name] = "ok"
	}
	return c.JSON(status, map[string]any{"status": http.StatusText(status), "checks": results})
}
