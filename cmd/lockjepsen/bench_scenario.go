package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/internal/stats"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// runBenchScenario runs one scenario over several seeds and prints its
// reproduction rate, the median time to the first violation and the median
// run time: the figures behind the claims in docs/ and results/.
func runBenchScenario(args []string) int {
	seeds := 10
	cfg, code, ok := runFlags("bench scenario", args, func(fs *flag.FlagSet) {
		fs.Var(knob.Int{N: &seeds, Min: 1, Max: 10000}, "seeds", "runs, with seeds 1 to N")
	})
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	base := cfg.Out // --out, once ignored: the seeds' runs go under it
	var firsts, runs []float64
	reproduced := 0
	for s := 1; s <= seeds; s++ {
		c := cfg
		c.Seed = int64(s)
		c.Command = append(append([]string{}, cfg.Command...), "--seed", fmt.Sprint(s))
		c.Out = filepath.Join(base, fmt.Sprintf("seed-%d", s))
		if err := c.Validate(); err != nil {
			return fail("%v", err)
		}
		start := time.Now()
		o := runner.Run(ctx, c, io.Discard)
		took := time.Since(start).Seconds()
		if ctx.Err() != nil {
			return fail("interrupted after %d seeds", s-1)
		}
		if !o.Checked {
			return fail("seed %d: %v", s, o.Err)
		}
		var r checker.Result
		if err := runfolder.ReadJSON(filepath.Join(c.Out, runfolder.Results), &r); err != nil {
			return fail("seed %d: %v", s, err)
		}
		ok := runner.Reproduced(c, &r)
		first := scenario.FirstViolationS(&r)
		if ok {
			reproduced++
		}
		if first >= 0 {
			firsts = append(firsts, first)
		}
		runs = append(runs, took)
		fmt.Fprintf(os.Stderr, "seed %2d: reproduced %-5v lock %-7v resource %-7v first violation %6.1fs  run %5.1fs\n", s, ok, r.Lock.Valid, r.Resource.Valid, first, took)
	}
	fmt.Printf("%s (recipe %s, fence %s): reproduced %d of %d seeds; median time to first violation %s; median run time %.1fs\n",
		cfg.Scenario, cfg.Recipe, cfg.Fence, reproduced, seeds, medianOrNone(firsts), medianF(runs))
	return exitValid
}

// medianF is the nearest-rank median, as every figure of lockjepsen: one
// seed's own figure (the lower middle one for an even count).
func medianF(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return stats.Percentile(s, 0.5)
}

func medianOrNone(v []float64) string {
	if len(v) == 0 {
		return "none"
	}
	return fmt.Sprintf("%.1fs", medianF(v))
}
