package runner

import (
	"math"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
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
// in true-time order: what the run's live count saw, recomputed.
func doubleGrantsSeen(events []history.Event, ttl time.Duration) int {
	t := newTracker(ttl)
	for _, e := range events {
		t.observe(e)
	}
	t.drain(math.MaxInt64)
	_, _, n := t.counts()
	return n
}

// resultsFile is results.json: the checker's Result and, under "metrics",
// the figures the --metrics-addr endpoint exports, replayed from the history
// by the same collector (so `lockjepsen check DIR` reproduces them).
type resultsFile struct {
	*checker.Result
	Metrics metrics.Summary `json:"metrics"`
}

func withMetrics(res *checker.Result, events []history.Event, ttl time.Duration) resultsFile {
	m := metrics.Replay(events)
	m.DoubleGrantsSeen(doubleGrantsSeen(events, ttl))
	return resultsFile{Result: res, Metrics: m.Summary()}
}
