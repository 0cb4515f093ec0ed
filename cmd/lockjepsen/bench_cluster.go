package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/internal/stats"
	"github.com/lockjepsen/lockjepsen/knob"
)

func init() {
	register(command{name: "bench", summary: "print figures: 'bench cluster' (up-to-ready, failover), 'bench locks' (lock ops/s vs SET), 'bench scenario' (reproduction rate)", run: runBench,
		subcommands: []string{"cluster", "locks", "scenario"}})
}

const benchUsage = `usage: lockjepsen bench cluster|locks|scenario [flags]   (lockjepsen bench <kind> -h for its flags)

  cluster   median time from 'cluster up' to ready, and from SIGKILL of the primary to a writable new one
  locks     lock ops/s of N client processes against valkey-benchmark -t set at the same concurrency
  scenario  a scenario over seeds 1..N: reproduction rate, median time to the first violation, median run time`

func runBench(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "cluster":
			return runBenchCluster(args[1:])
		case "locks":
			return runBenchLocks(args[1:])
		case "scenario":
			return runBenchScenario(args[1:])
		case "-h", "--help", "help":
			fmt.Println(benchUsage)
			return exitValid
		}
	}
	return fail("bench: want one of 'bench cluster', 'bench locks' or 'bench scenario' (lockjepsen bench -h)")
}

func runBenchCluster(args []string) int {
	fs := newFlagSet("bench cluster", "bench cluster [--trials N] [topology flags]")
	cfg := cluster.Defaults()
	clusterFlags(fs, &cfg)
	trials := new(int)
	*trials, cfg.Runtime = 5, "local"
	fs.Var(knob.Int{N: trials, Min: 1, Max: 1000}, "trials", "clusters to start (each is killed once)")
	fs.Var(knob.Choice{S: &cfg.Runtime, Among: knob.Runtimes}, "runtime", "local or docker (make images first)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail("bench cluster: unexpected argument %q", fs.Arg(0))
	}
	if err := cfg.Validate(); err != nil {
		return fail("bench cluster: %v", err)
	}
	bins, err := cluster.FindBinaries()
	if err != nil {
		return fail("%v", err)
	}
	var up, writable, advertised []time.Duration
	again := 0
	for i := 0; i < *trials; i++ {
		dir, err := os.MkdirTemp("", "lockjepsen-bench-")
		if err != nil {
			return fail("%v", err)
		}
		c := cfg
		c.Dir = dir
		l, err := cluster.New(c, bins)
		if err != nil {
			return fail("%v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		start := time.Now()
		if err := l.Up(ctx); err != nil {
			cancel()
			return fail("trial %d: %v", i+1, err)
		}
		up = append(up, time.Since(start))
		ft, err := cluster.MeasureFailover(ctx, l, cluster.AgainWithin)
		cancel()
		l.Down()
		os.RemoveAll(dir)
		if err != nil {
			return fail("trial %d: %v", i+1, err)
		}
		writable = append(writable, ft.Writable)
		advertised = append(advertised, ft.Advertised)
		note := ""
		if ft.Again != "" {
			again++
			note = ", then " + ft.Again + " promoted with no second kill"
		}
		fmt.Fprintf(os.Stderr, "trial %d: up %v, writable %v, advertised %v%s\n", i+1, up[i].Round(time.Millisecond), ft.Writable.Round(time.Millisecond), ft.Advertised.Round(time.Millisecond), note)
	}
	fmt.Printf("%s, down-after %v, failover-timeout %v; median of %d:\n", cfg.Deployment().Banner(cfg, bins.Version), cfg.DownAfter, cfg.FailoverTimeout, *trials)
	fmt.Printf("  cluster up to ready:                       %v\n", median(up))
	fmt.Printf("  SIGKILL of primary to new primary writable: %v\n", median(writable))
	fmt.Printf("  SIGKILL of primary to Sentinel advertising: %v\n", median(advertised))
	fmt.Printf("  a second failover nobody drove, within %v: %d of %d\n", cluster.AgainWithin, again, *trials)
	return exitValid
}

// median is the nearest-rank median (the lower middle one of an even count).
func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return stats.Percentile(s, 0.5).Round(time.Millisecond)
}
