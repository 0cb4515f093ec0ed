// Package metrics exports what a run's clients and nemesis do as Prometheus
// metrics, live during `run` and `sweep` (--metrics-addr), and summarises the
// same figures for results.json by replaying history.jsonl through the same
// code. It is fed history events as they are written (Run.Observe), pairs each
// completion with its invoke per history process, and never labels a series
// with anything unbounded (no tokens, processes or clients).
package metrics

import (
	"iter"
	"net/http"
	"sync"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Outcomes of a completed operation, the values of the outcome label.
var Outcomes = []string{string(history.OK), string(history.Fail), string(history.Info)}

// Collector holds one registry of lockjepsen_ metrics. Counters only grow:
// a sweep feeds every trial into the same collector, so rate() and increase()
// work across trials, and lockjepsen_trial says which trial is running.
type Collector struct {
	reg *prometheus.Registry
	cat *marks.Catalog

	acquireLatency   *prometheus.HistogramVec
	acquires         *prometheus.CounterVec
	hold             prometheus.Histogram
	unlockMismatches prometheus.Counter
	renewFailures    *prometheus.CounterVec
	fenceRejections  *prometheus.CounterVec
	doubleGrants     prometheus.Counter
	failovers        prometheus.Counter
	faults           *prometheus.CounterVec
	runInfo          *prometheus.GaugeVec
	trial            *prometheus.GaugeVec
}

// New makes a collector with its own registry (plus the Go runtime and
// process collectors, as Prometheus users expect of an exporter); cat names
// the fault events it counts (nemesis.Catalog).
func New(cat *marks.Catalog) *Collector {
	c := &Collector{
		cat: cat,
		reg: prometheus.NewRegistry(),
		acquireLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lockjepsen_acquire_latency_seconds",
			Help:    "Time from an acquire's invoke to its completion, by outcome (ok, fail, info: unknown, the client's timeout).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"outcome"}),
		acquires: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockjepsen_acquires_total",
			Help: "Completed acquires by outcome; fails by reason (contention, noreplicas, wait, waitaof, readonly, unreachable, other), empty for ok and info.",
		}, []string{"outcome", "reason"}),
		hold: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "lockjepsen_hold_seconds",
			Help:    "Time from an acquire's ok to the invoke of the release of the same token.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		unlockMismatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lockjepsen_unlock_mismatches_total",
			Help: "Releases that failed because the token did not hold the lock (DELIFEQ or compare-and-delete replied 0).",
		}),
		renewFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockjepsen_renew_failures_total",
			Help: "Extends that completed fail (refused, not held) or info (outcome unknown).",
		}, []string{"outcome"}),
		fenceRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockjepsen_fence_rejections_total",
			Help: "Reads and writes the fenced resource refused (verdict rejected), by operation.",
		}, []string{"op"}),
		doubleGrants: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lockjepsen_double_grants_seen_total",
			Help: "Double grants seen so far by the runner's online detector (the checker decides for real at the end).",
		}),
		failovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lockjepsen_failovers_total",
			Help: "Sentinel promotions observed (nemesis failover events).",
		}),
		faults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockjepsen_faults_total",
			Help: "Faults injected, by the event that begins them (nemesis marks).",
		}, []string{"fault"}),
		runInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lockjepsen_run_info",
			Help: "1 for each run started; cell is the sweep cell (empty for `run`).",
		}, []string{"scenario", "recipe", "fence", "cell"}),
		trial: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lockjepsen_trial",
			Help: "Sweep only: the number of the trial last started in the cell.",
		}, []string{"cell"}),
	}
	c.reg.MustRegister(c.acquireLatency, c.acquires, c.hold, c.unlockMismatches, c.renewFailures,
		c.fenceRejections, c.doubleGrants, c.failovers, c.faults, c.runInfo, c.trial,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every bounded series exists from the start, at 0, so a dashboard and
	// increase() see the first event.
	for _, o := range Outcomes {
		c.acquireLatency.WithLabelValues(o)
		if o != string(history.Fail) {
			c.acquires.WithLabelValues(o, "")
		}
	}
	for _, r := range history.RefusalReasons {
		c.acquires.WithLabelValues(string(history.Fail), r)
	}
	c.renewFailures.WithLabelValues(string(history.Fail))
	c.renewFailures.WithLabelValues(string(history.Info))
	c.fenceRejections.WithLabelValues(history.FRead)
	c.fenceRejections.WithLabelValues(history.FWrite)
	for _, m := range cat.All() {
		c.faults.WithLabelValues(m.Event)
	}
	return c
}

// Registry is the collector's registry.
func (c *Collector) Registry() *prometheus.Registry { return c.reg }

// Handler serves the registry in the Prometheus exposition format.
func (c *Collector) Handler() http.Handler {
	return promhttp.HandlerFor(c.reg, promhttp.HandlerOpts{Registry: c.reg})
}

// Info names a run in lockjepsen_run_info.
type Info struct {
	Scenario, Recipe, Fence string
	Cell                    string // sweep only: the cell's ID
	Trial                   int    // sweep only: the trial's number in its cell
}

// NewRun starts feeding one run (one history) into the collector. Runs may
// be fed concurrently (a sweep with --parallel): each pairs its own events.
func (c *Collector) NewRun(info Info) *Run {
	c.runInfo.WithLabelValues(info.Scenario, info.Recipe, info.Fence, info.Cell).Set(1)
	if info.Cell != "" {
		c.trial.WithLabelValues(info.Cell).Set(float64(info.Trial))
	}
	return &Run{
		c: c, invokes: map[history.Process]history.Event{}, holds: map[string]int64{},
		sum: newTally(),
	}
}

// Run is one history's feed. Its methods are safe for concurrent use and do
// nothing on a nil *Run, so a runner without metrics calls them as they are.
type Run struct {
	c       *Collector
	mu      sync.Mutex
	invokes map[history.Process]history.Event // per process: at most one op in flight
	holds   map[string]int64                  // token -> time of its acquire's ok
	seen    int                               // double grants seen, as last reported
	sum     *tally
}

// Observe takes one history event, in arrival order. Completions are paired
// with the invoke of the same process (a process has one operation in flight,
// and its events come down one client pipe in order), so arrival order across
// clients does not matter.
func (r *Run) Observe(e history.Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.c
	if !e.IsClient() {
		switch _, fault := c.cat.Of(e.F); {
		case e.F == history.NFailover:
			c.failovers.Inc()
			r.sum.Failovers++
		case fault:
			c.faults.WithLabelValues(e.F).Inc()
			r.sum.Faults[e.F]++
		}
		return
	}
	if e.Type == history.Invoke {
		r.invokes[e.Process] = e
		if e.F == history.FRelease {
			if t, ok := r.holds[e.Token]; ok {
				delete(r.holds, e.Token)
				c.hold.Observe(float64(e.Time-t) / 1e9)
				r.sum.hold = append(r.sum.hold, e.Time-t)
			}
		}
		return
	}
	inv, ok := r.invokes[e.Process]
	if !ok {
		return // a completion without its invoke: the history reader refuses those
	}
	delete(r.invokes, e.Process)
	outcome := string(e.Type)
	switch inv.F {
	case history.FAcquire:
		d := e.Time - inv.Time
		c.acquireLatency.WithLabelValues(outcome).Observe(float64(d) / 1e9)
		r.sum.latency[outcome] = append(r.sum.latency[outcome], d)
		reason := ""
		switch e.Type {
		case history.OK:
			r.holds[inv.Token] = e.Time
			r.sum.Acquires.OK++
		case history.Fail:
			reason = history.RefusalReason(e.Error)
			r.sum.Acquires.Fail++
			r.sum.Acquires.FailBy[reason]++
		default:
			r.sum.Acquires.Info++
		}
		c.acquires.WithLabelValues(outcome, reason).Inc()
	case history.FExtend:
		if e.Type != history.OK {
			c.renewFailures.WithLabelValues(outcome).Inc()
			r.sum.RenewFailures++
		}
	case history.FRelease:
		if e.Type == history.Fail && history.SaysNotHeld(e.Error) {
			c.unlockMismatches.Inc()
			r.sum.UnlockMismatches++
		}
	case history.FRead, history.FWrite:
		if e.Verdict == "rejected" {
			c.fenceRejections.WithLabelValues(inv.F).Inc()
			r.sum.FenceRejections++
		}
	}
}

// DoubleGrantsSeen reports the runner's running count of double grants seen
// so far in this run; the counter grows by the difference.
func (r *Run) DoubleGrantsSeen(n int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n > r.seen {
		r.c.doubleGrants.Add(float64(n - r.seen))
		r.seen = n
	}
	r.sum.DoubleGrantsSeen = r.seen
}

// Summary is what the run has fed so far, for results.json.
func (r *Run) Summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sum.summary()
}

// Replay feeds a whole history, in time order (history.ReadFile's, or
// checker.History.Replay's), into a fresh collector: the run the figures in
// results.json come from.
func Replay(events iter.Seq[history.Event], cat *marks.Catalog) *Run {
	r := New(cat).NewRun(Info{})
	for e := range events {
		r.Observe(e)
	}
	return r
}
