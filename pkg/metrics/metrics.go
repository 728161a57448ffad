// Package metrics names every Prometheus metric Ferric exports. Each
// component (the API service, each conductor) builds its own set on its
// own registry: several components in one process (single-process mode,
// tests) then never count into each other's metrics. docs/observability.md
// lists them.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ferricbm/ferric/pkg/errs"
)

const namespace = "ferric"

// Buckets of the latency histograms: from a cached GET (milliseconds) to
// an RPC that waits out its timeout (a minute).
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Buckets of whole operations (a deploy, a clean, an image write): from
// seconds on fake hardware to hours for large disks.
var operationBuckets = []float64{1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400}

// newRegistry is a registry with the Go runtime's and the process's own
// metrics, which every component exports.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

func handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

// Result is the result label of an RPC: "ok", or the kind of the error
// (a bounded set, pkg/errs), "error" for an untyped one.
func Result(err error) string {
	if err == nil {
		return "ok"
	}
	if k := errs.KindOf(err); k != "" {
		return string(k)
	}
	return "error"
}

func newRPCHistogram(side, help string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "rpc", Name: side + "_duration_seconds", Help: help, Buckets: latencyBuckets,
	}, []string{"method", "result"})
}

// API holds the API service's metrics.
type API struct {
	reg *prometheus.Registry
	// requests times each request by method, route template (never the
	// raw path, which would make a series per node) and status.
	requests *prometheus.HistogramVec
	rpc      *prometheus.HistogramVec
}

// NewAPI builds the API service's metrics on a registry of their own.
func NewAPI() *API {
	m := &API{
		reg: newRegistry(),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "api", Name: "request_duration_seconds",
			Help:    "Time to answer an API request, by method, route template and status code.",
			Buckets: latencyBuckets,
		}, []string{"method", "route", "status"}),
		rpc: newRPCHistogram("client", "Time from sending an RPC to a conductor to its reply (a cast: to its sending), by method and result."),
	}
	m.reg.MustRegister(m.requests, m.rpc)
	return m
}

// Handler serves the metrics in the Prometheus exposition formats.
func (m *API) Handler() http.Handler { return handler(m.reg) }

// ObserveRequest records one answered request. Every label comes from a
// closed set whatever the client sent (Method, Status; route is a route
// template or "unrouted"), so /metrics keeps a bounded size.
func (m *API) ObserveRequest(method, route string, status int, elapsed time.Duration) {
	m.requests.WithLabelValues(Method(method), route, Status(status)).Observe(elapsed.Seconds())
}

// methods are the HTTP methods a label or a log line names as they are.
var methods = map[string]string{
	http.MethodGet: http.MethodGet, http.MethodHead: http.MethodHead, http.MethodPost: http.MethodPost,
	http.MethodPut: http.MethodPut, http.MethodPatch: http.MethodPatch, http.MethodDelete: http.MethodDelete,
	http.MethodOptions: http.MethodOptions,
}

// OtherMethod stands for every method outside the known ones.
const OtherMethod = "other"

// Method is method if it is one the API may serve, else OtherMethod: a
// client may send any token as its method, and each would otherwise be a
// series of its own, kept for ever.
func Method(method string) string {
	if m, ok := methods[method]; ok {
		return m
	}
	return OtherMethod
}

// KnownMethod reports whether Method keeps method as it is.
func KnownMethod(method string) bool {
	_, ok := methods[method]
	return ok
}

// Status is the status label: the code the server wrote, which is one of
// the few it writes; anything outside HTTP's range is "other".
func Status(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code)
}

// ObserveRPC records one RPC sent; it is an rpc.Observer.
func (m *API) ObserveRPC(method string, elapsed time.Duration, err error) {
	m.rpc.WithLabelValues(method, Result(err)).Observe(elapsed.Seconds())
}
