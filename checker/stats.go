package checker

import (
	"github.com/lockjepsen/lockjepsen/internal/stats"
	"sort"

	"github.com/lockjepsen/lockjepsen/history"
)

func opCounts(ops []Op) map[string]*OpCounts {
	m := make(map[string]*OpCounts)
	for _, f := range []string{history.FAcquire, history.FExtend, history.FRelease, history.FRead, history.FWrite} {
		m[f] = &OpCounts{}
	}
	for i := range ops {
		c := m[ops[i].F]
		if c == nil {
			c = &OpCounts{}
			m[ops[i].F] = c
		}
		switch ops[i].Outcome {
		case history.OK:
			c.OK++
		case history.Fail:
			c.Fail++
			if ops[i].Verdict() == history.Rejected {
				c.Refused++
			}
		default:
			c.Info++
		}
	}
	return m
}

// durations are the latencies of completed operations of f; unknown
// outcomes have no latency (they timed out) and would only measure the
// client's timeout.
func durations(ops []Op, f string) []int64 {
	var ds []int64
	for i := range ops {
		if ops[i].F == f && ops[i].Known() {
			ds = append(ds, ops[i].Return-ops[i].Call)
		}
	}
	return ds
}

// percentilesOf summarises latencies (it sorts ds).
func percentilesOf(ds []int64) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	ms := func(p float64) float64 { return float64(stats.Percentile(ds, p)) / 1e6 }
	return Percentiles{Count: len(ds), P50: ms(0.50), P99: ms(0.99), Max: float64(ds[len(ds)-1]) / 1e6}
}
