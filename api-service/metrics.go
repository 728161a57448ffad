package apiservice

import (
	"time"

	"github.com/labstack/echo/v4"
)

// metricsPath serves the Prometheus metrics, outside /v1 like the health
// probes; [api] public_metrics decides whether without authentication.
const metricsPath = "/metrics"

// unrouted is the route label of requests answered before routing
// (refused by authentication or header checks) or matching no route: one
// label for all of them, so that scanning for paths cannot make a series
// per path.
const unrouted = "unrouted"

// observe times every request by its route template, the status it got
// (rendered errors included: it runs outside accessLog, which renders
// them) and its method.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		route := c.Path()
		if route == "" {
			route = unrouted
		}
		s.metrics.ObserveRequest(c.Request().Method, route, c.Response().Status, time.Since(start))
		return err
	}
}

// metricsRoute registers /metrics: for system administrators only unless
// public_metrics is set.
func (s *Server) metricsRoute(e *echo.Echo) {
	var rules []echo.MiddlewareFunc
	if !s.cfg.API.PublicMetrics {
		rules = append(rules, s.rule("system_admin"))
	}
	e.GET(metricsPath, echo.WrapHandler(s.metrics.Handler()), rules...)
}

// isPublicMetrics reports whether path is /metrics served without
// authentication.
func (s *Server) isPublicMetrics(path string) bool {
	return path == metricsPath && s.cfg.API.PublicMetrics
}
