package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// runBenchScenario runs one scenario over several seeds and prints its
// reproduction rate, the median time to the first violation and the median
// run time: the figures behind the README's claims.
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
	base := filepath.Join("results", time.Now().Format("20060102-150405")+"-bench-"+cfg.Scenario)
	var firsts, runs []float64
	reproduced := 0
	for s := 1; s <= seeds; s++ {
		c := cfg
		c.Seed = int64(s)
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
		b, err := os.ReadFile(filepath.Join(c.Out, "results.json"))
		if err != nil {
			return fail("seed %d: %v", s, err)
		}
		var r checker.Result
		if err := json.Unmarshal(b, &r); err != nil {
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

func medianF(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func medianOrNone(v []float64) string {
	if len(v) == 0 {
		return "none"
	}
	return fmt.Sprintf("%.1fs", medianF(v))
}
