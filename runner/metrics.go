package runner

import (
	"iter"
	"math"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
	"github.com/lockjepsen/lockjepsen/metrics"
)

// finalDoubleGrants runs the tracker's online detector over the events it
// still holds back (the last second of the run, and everything after the
// workload's end) and reports the final count to the metrics.
func (r *run) finalDoubleGrants() {
	r.track.drain(math.MaxInt64)
	_, _, suspects := r.track.counts()
	r.cfg.Metrics.DoubleGrantsSeen(suspects)
}

// doubleGrantsSeen replays a history through the tracker's online detector
// in true-time order: what the run's live count saw, recomputed. The events
// come in time order, so the detector drains as it goes (everything before
// the latest event is in) instead of holding them all: the same replay, in
// the same order, as one drain at the end.
func doubleGrantsSeen(events iter.Seq[history.Event], ttl time.Duration) int {
	t := newTracker(ttl)
	n := 0
	for e := range events {
		t.observe(e)
		if n++; n%4096 == 0 {
			t.drain(e.Time)
		}
	}
	t.drain(math.MaxInt64)
	_, _, seen := t.counts()
	return seen
}

// resultsFile is results.json: the checker's Result and, under "metrics",
// the figures the --metrics-addr endpoint exports, replayed from the history
// by the same collector (so `lockjepsen check DIR` reproduces them).
type resultsFile struct {
	*checker.Result
	Metrics metrics.Summary `json:"metrics"`
}

// withMetrics replays the history twice at once, into the collector and
// into the online detector (0.7 s one after the other on 1M events).
func withMetrics(res *checker.Result, h *checker.History, ttl time.Duration, cat *marks.Catalog) resultsFile {
	seen := make(chan int, 1)
	go func() { seen <- doubleGrantsSeen(h.Replay(), ttl) }()
	m := metrics.Replay(h.Replay(), cat)
	m.DoubleGrantsSeen(<-seen)
	return resultsFile{Result: res, Metrics: m.Summary()}
}
