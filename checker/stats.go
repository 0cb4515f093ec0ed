package checker

import (
	"math"
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
		default:
			c.Info++
		}
	}
	return m
}

// latency summarises completed operations of f; unknown outcomes have no
// latency (they timed out) and would only measure the client's timeout.
func latency(ops []Op, f string) Percentiles {
	var ds []int64
	for i := range ops {
		if ops[i].F == f && ops[i].Known() {
			ds = append(ds, ops[i].Return-ops[i].Call)
		}
	}
	if len(ds) == 0 {
		return Percentiles{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return Percentiles{Count: len(ds), P50: percentile(ds, 0.50), P99: percentile(ds, 0.99), Max: float64(ds[len(ds)-1]) / 1e6}
}

// percentile is the nearest-rank percentile, in ms.
func percentile(sorted []int64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return float64(sorted[i]) / 1e6
}
