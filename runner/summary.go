package runner

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lockjepsen/lockjepsen/checker"
)

func word(v checker.Validity) string {
	switch v {
	case checker.Valid:
		return "valid"
	case checker.Invalid:
		return "INVALID"
	}
	return "UNKNOWN (the checker ran out of time; not a pass)"
}

// summarize is summary.txt: the verdicts and a plain account of what happened,
// for a terminal or a workshop screen.
func summarize(dir string, res *checker.Result, cfg Config, hasCfg bool) string {
	var b strings.Builder
	if hasCfg {
		fmt.Fprintf(&b, "scenario %s, recipe %s, fence %s, seed %d: %d clients, %d key(s), TTL %v, %v\n",
			cfg.Scenario, cfg.Recipe, cfg.Fence, cfg.Seed, cfg.Clients, cfg.Keys, cfg.TTL, cfg.TimeLimit)
	}
	fmt.Fprintf(&b, "\n  overall   %s\n  lock      %s\n  resource  %s\n\n", word(res.Valid), word(res.Lock.Valid), word(res.Resource.Valid))
	var fs []string
	for f := range res.Ops {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	var ops []string
	for _, f := range fs {
		c := res.Ops[f]
		ops = append(ops, fmt.Sprintf("%s %d/%d/%d", f, c.OK, c.Fail, c.Info))
	}
	fmt.Fprintf(&b, "operations (ok/fail/unknown): %s\n", strings.Join(ops, ", "))
	fmt.Fprintf(&b, "acquire latency: p50 %.2f ms, p99 %.2f ms; failovers: %d\n", res.LatencyMs.Acquire.P50, res.LatencyMs.Acquire.P99, res.Failovers)
	fmt.Fprintf(&b, "double holders: %d (exposure %.0f ms in all, longest %.0f ms)\n", res.DoubleHolders, res.ExposureMs.Total, res.ExposureMs.Max)
	fmt.Fprintf(&b, "stale writes: %d attempted, %d rejected by the fence, %d accepted, %d unknown\n",
		res.StaleWrites.Attempted, res.StaleWrites.Rejected, res.StaleWrites.Accepted, res.StaleWrites.Unknown)
	if res.FenceTokens.Duplicates+res.FenceTokens.Regressions > 0 {
		fmt.Fprintf(&b, "fence numbers: %d handed out twice, %d went backwards (the counter lives on Valkey; a failover can lose INCRs)\n",
			res.FenceTokens.Duplicates, res.FenceTokens.Regressions)
	}
	if len(res.DoubleHolderList) > 0 {
		b.WriteString("\nwhat happened:\n")
		for i, d := range res.DoubleHolderList {
			if i == 5 {
				fmt.Fprintf(&b, "  ... and %d more in results.json\n", len(res.DoubleHolderList)-5)
				break
			}
			fmt.Fprintf(&b, "  - %s\n", d.Explanation)
		}
	}
	other := 0
	for _, v := range res.Violations {
		if v.Kind == "double-grant" || v.Kind == "stale-write-accepted" {
			continue
		}
		if other == 0 {
			b.WriteString("\nother findings:\n")
		}
		if other < 5 {
			fmt.Fprintf(&b, "  - [%s] %s\n", v.Kind, v.Explanation)
		}
		other++
	}
	fmt.Fprintf(&b, "\nopen first: %s (timeline, explanations, porcupine pictures)\n", filepath.Join(dir, "index.html"))
	return b.String()
}
