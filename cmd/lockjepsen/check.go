package main

import (
	"math"
	"os"
	"runtime/debug"
	"time"

	"fmt"
	"github.com/lockjepsen/lockjepsen/knob"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/runner"
)

func init() {
	register(command{
		name:    "check",
		summary: "re-check a stored run: results.json, summary.txt, timeline, index.html (exit 2: unknown)",
		run:     runCheck,
	})
}

// checkMemoryLimit is check's soft memory limit (debug.SetMemoryLimit).
// 1400 MiB held the 10M-event generated history at 1.41 GiB, but a real
// 12.2M-event run (64 clients, 23 min) keeps about 1.3 GB live, so the
// collector ran nearly without pause under that limit: 55.6 s wall, 106 s
// CPU, 1.58 GiB. At 1800 MiB the same check took 34.5 s, 64 s CPU,
// 1.78 GiB (docs/checker.md, Scale): still under 2 GiB, and far from the
// 60 s a 10M-event check is allowed.
const checkMemoryLimit = 1800 << 20

// limitCheckMemory sets checkMemoryLimit unless GOMEMLIMIT is set (it wins).
// A complement to streaming, not a substitute: a check keeps about 100
// bytes per operation (about 1 GB live at 10M events, where holding every
// event peaked at 12.8 GiB), but the collector's default pacing lets the
// heap grow to twice what is live: 2.3 GiB peak RSS at 10M events. Below
// the limit (1M events: 150 MB live) nothing changes. `run` sets it too:
// its own check at the end is the same check, and the workload before it
// holds the runner near 90 MB, far under the limit.
func limitCheckMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(checkMemoryLimit)
	}
}

func runCheck(args []string) int {
	fs := newFlagSet("check", "check [flags] DIR")
	eps, budget := new(time.Duration), new(time.Duration)
	// A negative or oversized epsilon is allowed here: check says what it
	// cannot see (a warning) rather than refuse to re-check an old run.
	fs.Var(knob.Duration{D: eps, Min: math.MinInt64}, "epsilon", fmt.Sprintf("lease tolerance on both expiry bounds; 0: config.json's check.epsilon_ms, else its epsilon_ns, else %v. A negative one, or one of TTL/2 or more, draws a warning", checker.DefaultEpsilon))
	fs.Var(knob.Duration{D: budget, Min: 0}, "budget", fmt.Sprintf("porcupine time budget per lock key and resource row; past it the verdict is unknown; 0: config.json's check.budget_s, else %v", checker.DefaultBudget))
	noHTML := fs.Bool("no-html", false, "do not write porcupine visualisations")
	quiet := fs.Bool("q", false, "do not print the summary")
	// Flags may follow the directory too (check DIR --epsilon 20ms).
	dirs, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(dirs) != 1 {
		return fail("check: want exactly one run directory, e.g. lockjepsen check results/latest (got %d)", len(dirs))
	}
	limitCheckMemory()
	sum, code, err := runner.CheckDir(dirs[0], runner.CheckOptions{Epsilon: *eps, Budget: *budget, NoHTML: *noHTML})
	if err != nil {
		return fail("check: %v", err)
	}
	if !*quiet {
		fmt.Print(sum)
	}
	return code
}
