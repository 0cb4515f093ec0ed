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

// faultWindows lists every fault interval (observed failovers, which are
// points, left out) with the grants returned inside it.
func faultWindows(fs []fault, grants []int64, t0 int64) []FaultWindow {
	out := []FaultWindow{}
	for _, f := range fs {
		if f.f == history.NFailover {
			continue
		}
		w := FaultWindow{Fault: f.f, Node: f.node, StartS: float64(f.start-t0) / 1e9, EndS: -1}
		if f.end != never {
			w.EndS = float64(f.end-t0) / 1e9
		}
		for _, t := range grants {
			if t >= f.start && t <= f.end {
				w.Grants++
			}
		}
		out = append(out, w)
	}
	return out
}
