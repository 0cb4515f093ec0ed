package metrics

import (
	"slices"

	"github.com/lockjepsen/lockjepsen/internal/stats"
)

// Summary is the `metrics` key of results.json: the figures the endpoint
// exports, over the whole run, computed by replaying history.jsonl.
type Summary struct {
	Acquires AcquireCounts `json:"acquires"`
	// AcquireLatencyMs has percentiles of acquire latency by outcome (ok,
	// fail, info); info latencies measure the client's timeout.
	AcquireLatencyMs map[string]Percentiles `json:"acquire_latency_ms"`
	HoldMs           Percentiles            `json:"hold_ms"` // acquire ok to the release's invoke
	UnlockMismatches int                    `json:"unlock_mismatches"`
	RenewFailures    int                    `json:"renew_failures"`   // extend fail or info
	FenceRejections  int                    `json:"fence_rejections"` // reads and writes with verdict rejected
	DoubleGrantsSeen int                    `json:"double_grants_seen"`
	Failovers        int                    `json:"failovers"`
	Faults           map[string]int         `json:"faults"` // by the event that begins the fault
}

// AcquireCounts counts completed acquires; FailBy splits Fail by reason.
// An acquire still in flight when the history ends is not counted.
type AcquireCounts struct {
	OK     int            `json:"ok"`
	Fail   int            `json:"fail"`
	Info   int            `json:"info"`
	FailBy map[string]int `json:"fail_by"`
}

// Percentiles are nearest-rank percentiles (internal/stats), in ms.
type Percentiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
}

// tally accumulates a run's figures next to the Prometheus series.
type tally struct {
	Summary
	latency map[string][]int64 // ns, by outcome
	hold    []int64            // ns
}

func newTally() *tally {
	t := &tally{latency: map[string][]int64{}}
	t.Acquires.FailBy = map[string]int{}
	t.Faults = map[string]int{}
	return t
}

func (t *tally) summary() Summary {
	s := t.Summary
	s.Acquires.FailBy = cloneMap(t.Acquires.FailBy)
	s.Faults = cloneMap(t.Faults)
	s.AcquireLatencyMs = map[string]Percentiles{}
	for _, o := range Outcomes {
		s.AcquireLatencyMs[o] = percentiles(t.latency[o])
	}
	s.HoldMs = percentiles(t.hold)
	return s
}

func cloneMap(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func percentiles(ns []int64) Percentiles {
	if len(ns) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	ms := func(p float64) float64 { return float64(stats.Percentile(s, p)) / 1e6 }
	return Percentiles{Count: len(s), P50: ms(0.50), P99: ms(0.99)}
}
