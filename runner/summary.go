package runner

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/report"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// summarize is summary.txt: what was run, the checker's own account, and what
// to open first.
func summarize(dir string, res *checker.Result, cfg Config, hasCfg bool) string {
	var b strings.Builder
	if hasCfg {
		fence := cfg.Fence
		if cfg.FenceSource == knob.FenceSourceResource {
			fence += " (numbers from the resource's sequence)"
		}
		fmt.Fprintf(&b, "scenario %s, recipe %s, fence %s, seed %d: %s, %s, TTL %s, %s of workload\n\n",
			cfg.Scenario, cfg.Recipe, fence, cfg.Seed, checker.Count(cfg.Clients, "client"), checker.Count(cfg.Keys, "key"),
			checker.HumanDuration(float64(cfg.TTL)/1e6), checker.HumanDuration(float64(cfg.TimeLimit)/1e6))
	}
	if hasCfg {
		if note := cfg.Cluster.Deployment().Note(cfg.Cluster, cfg.Fence != knob.FenceNone); note != "" {
			b.WriteString(note + "\n\n")
		}
	}
	b.WriteString(report.Summary(res))
	fmt.Fprintf(&b, "\nopen first: %s (timeline, explanations, porcupine pictures)\n", filepath.Join(dir, runfolder.Index))
	return b.String()
}
