package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/internal/stats"
)

func init() {
	register(command{name: "bench", summary: "print figures: 'bench cluster' (up-to-ready, failover), 'bench locks' (lock ops/s vs SET), 'bench scenario' (reproduction rate)", run: runBench})
}

func runBench(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "cluster":
			return runBenchCluster(args[1:])
		case "locks":
			return runBenchLocks(args[1:])
		case "scenario":
			return runBenchScenario(args[1:])
		}
	}
	return fail("bench: want 'bench cluster [--trials N]', 'bench locks [--clients N --duration D]' or 'bench scenario --scenario NAME [--seeds 10] [run flags]'")
}

func runBenchCluster(args []string) int {
	fs := newFlagSet("bench cluster", "bench cluster [--trials N] [topology flags]")
	cfg := cluster.Defaults()
	clusterFlags(fs, &cfg)
	trials := fs.Int("trials", 5, "clusters to start (each is killed once)")
	fs.StringVar(&cfg.Runtime, "runtime", "local", "local or docker (make images first)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *trials < 1 {
		return fail("--trials %d: want 1 or more", *trials)
	}
	bins, err := cluster.FindBinaries()
	if err != nil {
		return fail("%v", err)
	}
	var up, writable, advertised []time.Duration
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
		ft, err := cluster.MeasureFailover(ctx, l)
		cancel()
		l.Down()
		os.RemoveAll(dir)
		if err != nil {
			return fail("trial %d: %v", i+1, err)
		}
		writable = append(writable, ft.Writable)
		advertised = append(advertised, ft.Advertised)
		fmt.Fprintf(os.Stderr, "trial %d: up %v, writable %v, advertised %v\n", i+1, up[i].Round(time.Millisecond), ft.Writable.Round(time.Millisecond), ft.Advertised.Round(time.Millisecond))
	}
	fmt.Printf("Valkey %s, %d replicas, %d Sentinels, down-after %v, failover-timeout %v; median of %d:\n", bins.Version, cfg.Replicas, cfg.Sentinels, cfg.DownAfter, cfg.FailoverTimeout, *trials)
	fmt.Printf("  cluster up to ready:                       %v\n", median(up))
	fmt.Printf("  SIGKILL of primary to new primary writable: %v\n", median(writable))
	fmt.Printf("  SIGKILL of primary to Sentinel advertising: %v\n", median(advertised))
	return exitValid
}

// median is the nearest-rank median (the lower middle one of an even count).
func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return stats.Percentile(s, 0.5).Round(time.Millisecond)
}
