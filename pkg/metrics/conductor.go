package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferricbm/ferric/pkg/states"
)

// Pool is the conductor's worker pool as its saturation is read.
type Pool interface {
	Size() int
	Free() int
	Refused() uint64
}

// Conductor holds one conductor's metrics. The conductor is the target
// Prometheus scrapes (its instance label): per-conductor figures such as
// the nodes it owns need no label of their own.
type Conductor struct {
	reg           *prometheus.Registry
	rpc           *prometheus.HistogramVec
	lockWait      *prometheus.HistogramVec
	lockConflicts prometheus.Counter
	transitions   *prometheus.CounterVec
	operations    *prometheus.HistogramVec
	powerSync     prometheus.Histogram
	powerSyncEnd  prometheus.Gauge
	diskWritten   *prometheus.CounterVec
	imageWrite    prometheus.Histogram
	imageRate     prometheus.Histogram
	nodesOwned    prometheus.Gauge

	// started holds when each node's deploy or clean began, to time it
	// when it ends. It lives in memory: an operation a conductor takes
	// over from another is not timed.
	mu      sync.Mutex
	started map[string]operation
}

type operation struct {
	name  string
	start time.Time
}

// NewConductor builds a conductor's metrics on a registry of their own.
func NewConductor() *Conductor {
	m := &Conductor{
		reg: newRegistry(),
		rpc: newRPCHistogram("server", "Time a conductor takes to handle an RPC, by method and result."),
		lockWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "node_lock", Name: "wait_seconds",
			Help:    "Time to take a node lock, retries included, by result (acquired, locked: still held by another after every retry, or error).",
			Buckets: latencyBuckets,
		}, []string{"result"}),
		lockConflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "node_lock", Name: "conflicts_total",
			Help: "Attempts to take a node lock that found it held by another.",
		}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "provision_state", Name: "transitions_total",
			Help: "Provision state changes this conductor saved, by the state left and the state entered.",
		}, []string{"from", "to"}),
		operations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "provision", Name: "duration_seconds",
			Help:    "Time from the start of a deploy or clean to the state it ended in (active, available, manageable, deploy failed, clean failed).",
			Buckets: operationBuckets,
		}, []string{"operation", "result"}),
		powerSync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "power_sync", Name: "duration_seconds",
			Help:    "Time one run of the power state sync takes over all the nodes this conductor owns.",
			Buckets: operationBuckets,
		}),
		powerSyncEnd: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "power_sync", Name: "last_completion_timestamp_seconds",
			Help: "When the last run of the power state sync ended (Unix time); time() minus it is the sync's lag.",
		}),
		diskWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "disk", Name: "written_bytes_total",
			Help: "Bytes written to nodes' disks over iSCSI, by operation (deploy, erase).",
		}, []string{"operation"}),
		imageWrite: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "image_write", Name: "duration_seconds",
			Help:    "Time to write an image onto a node's disk, for the writes that succeeded.",
			Buckets: operationBuckets,
		}),
		imageRate: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "image_write", Name: "throughput_bytes_per_second",
			Help: "Bytes written per second of each successful image write.",
			// 1 MiB/s to 2 GiB/s.
			Buckets: prometheus.ExponentialBuckets(1<<20, 2, 12),
		}),
		nodesOwned: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "conductor", Name: "nodes_owned",
			Help: "Nodes the hash ring gives to this conductor, as of the last power state sync.",
		}),
		started: map[string]operation{},
	}
	m.reg.MustRegister(m.rpc, m.lockWait, m.lockConflicts, m.transitions, m.operations, m.powerSync, m.powerSyncEnd,
		m.diskWritten, m.imageWrite, m.imageRate, m.nodesOwned)
	return m
}

// WatchPool makes the metrics read the saturation of the conductor's
// worker pool when scraped; it is called once.
func (m *Conductor) WatchPool(pool Pool) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "workers", Name: "busy",
		Help: "Workers of the conductor's pool running a job.",
	}, func() float64 { return float64(pool.Size() - pool.Free()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "workers", Name: "size",
			Help: "Workers in the conductor's pool ([conductor] workers_pool_size).",
		}, func() float64 { return float64(pool.Size()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "workers", Name: "refused_total",
			Help: "Jobs refused because every worker was busy (answered 503).",
		}, func() float64 { return float64(pool.Refused()) }),
	)
}

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Conductor) Handler() http.Handler { return handler(m.reg) }

// ObserveRPC records one RPC handled; it is an rpc.Observer.
func (m *Conductor) ObserveRPC(method string, elapsed time.Duration, err error) {
	m.rpc.WithLabelValues(method, Result(err)).Observe(elapsed.Seconds())
}

// ObserveLock records one attempt to take a node lock: the time it took,
// how many tries found the lock held, and its error.
func (m *Conductor) ObserveLock(wait time.Duration, conflicts int, locked bool, err error) {
	result := "acquired"
	switch {
	case locked:
		result = "locked"
	case err != nil:
		result = "error"
	}
	m.lockWait.WithLabelValues(result).Observe(wait.Seconds())
	m.lockConflicts.Add(float64(conflicts))
}

// Transition records a saved provision state change of a node, and times
// the deploy or clean it starts or ends.
func (m *Conductor) Transition(node string, from, to states.State) {
	m.transitions.WithLabelValues(string(from), string(to)).Inc()
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if name := starts(from, to); name != "" {
		m.started[node] = operation{name: name, start: now}
		return
	}
	op, ok := m.started[node]
	if ok && ends(op.name, to) {
		delete(m.started, node)
		m.operations.WithLabelValues(op.name, string(to)).Observe(now.Sub(op.start).Seconds())
	}
}

// starts names the operation a change from one state to another begins:
// entering deploying or cleaning from anywhere but the operation's own
// wait and hold states.
func starts(from, to states.State) string {
	switch {
	case to == states.Deploying && from != states.DeployWait && from != states.DeployHold:
		return "deploy"
	case to == states.Cleaning && from != states.CleanWait && from != states.CleanHold:
		return "clean"
	}
	return ""
}

// ends reports whether entering a state ends the operation.
func ends(name string, to states.State) bool {
	switch name {
	case "deploy":
		return to == states.Active || to == states.DeployFail
	case "clean":
		return to == states.Available || to == states.Manageable || to == states.CleanFail
	}
	return false
}

// ObservePowerSync records one run of the power state sync over owned
// nodes.
func (m *Conductor) ObservePowerSync(elapsed time.Duration, owned int) {
	m.powerSync.Observe(elapsed.Seconds())
	m.powerSyncEnd.SetToCurrentTime()
	m.nodesOwned.Set(float64(owned))
}

// DiskWritten counts bytes written to a node's disk by operation.
func (m *Conductor) DiskWritten(operation string, bytes int) {
	m.diskWritten.WithLabelValues(operation).Add(float64(bytes))
}

// ImageWritten records one successful image write of bytes.
func (m *Conductor) ImageWritten(bytes int64, elapsed time.Duration) {
	m.imageWrite.Observe(elapsed.Seconds())
	if s := elapsed.Seconds(); s > 0 {
		m.imageRate.Observe(float64(bytes) / s)
	}
}
