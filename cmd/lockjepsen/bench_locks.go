package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/workload"
)

// runBench measures what a lock costs next to a plain SET: N client processes
// (each on its own key, so the figure is throughput, not contention) cycle
// acquire+release with no critical section, then valkey-benchmark -t set runs
// with the same concurrency against the same primary.
func runBenchLocks(args []string) int {
	fs := newFlagSet("bench locks", "bench locks [flags]")
	clients, d, recipeName, requests := new(int), new(time.Duration), new(string), new(int)
	*clients, *d, *recipeName, *requests = 16, 10*time.Second, lock.Native, 200000
	fs.Var(knob.Int{N: clients, Min: 1, Max: 256}, "clients", "client processes, and valkey-benchmark's -c")
	fs.Var(knob.Duration{D: d, Min: time.Second}, "time-limit", "how long the lock clients run")
	alias(fs, "duration", "time-limit")
	fs.Var(recipeFlag{recipeName}, "recipe", recipeUsage)
	var execArgs []string
	fs.Var(execArgsFlag{&execArgs}, "exec-arg", "an argument for the --recipe exec:PATH program (repeat for more)")
	fencing := fs.Bool("fence-tokens", false, "draw a fencing token with every acquire (MULTI/SET NX/INCR)")
	alias(fs, "fencing", "fence-tokens")
	fs.Var(knob.Int{N: requests, Min: 1, Max: 100_000_000}, "requests", "valkey-benchmark -n")
	profDir := fs.String("cpuprofile", "", "write CPU profiles of the lock phase to this directory: runner.pprof and client-N.pprof (go tool pprof)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail("bench locks: unexpected argument %q", fs.Arg(0))
	}
	rec, _ := lock.Lookup(*recipeName)
	if len(execArgs) > 0 && rec.Name != lock.Exec {
		return fail("bench locks: --exec-arg is for --recipe exec:PATH, not %s", *recipeName)
	}
	if *fencing && !rec.Fences() {
		return fail("bench locks: --recipe %s draws no fencing token (the library is driven unchanged): drop --fence-tokens", *recipeName)
	}
	if *profDir != "" {
		if st, err := os.Stat(*profDir); err != nil || !st.IsDir() {
			return fail("bench locks: --cpuprofile %s is not a directory: create it first (mkdir -p %s)", *profDir, *profDir)
		}
	}
	dur, recipe := d, recipeName
	bins, err := cluster.FindBinaries()
	if err != nil {
		return fail("%v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fail("bench: find own executable: %v", err)
	}
	dir, err := os.MkdirTemp("", "lockjepsen-bench-")
	if err != nil {
		return fail("bench: %v", err)
	}
	defer os.RemoveAll(dir)
	cfg := cluster.Defaults()
	cfg.Dir = dir
	cl, err := cluster.NewLocal(cfg, bins)
	if err != nil {
		return fail("%v", err)
	}
	ctx := context.Background()
	if err := cl.Up(ctx); err != nil {
		return fail("bench: cluster up: %v", err)
	}
	defer cl.Down()

	lc := lock.Config{Recipe: *recipe, ExecArgs: execArgs, Sentinels: cl.SentinelAddrs(), MasterSet: cluster.MasterName, Fencing: *fencing}
	if _, err := lock.Check(ctx, lc); err != nil {
		return fail("bench: %v", err)
	}
	cycles, err := benchLocks(ctx, exe, lc, *clients, *dur, *profDir)
	if err != nil {
		return fail("bench: %v", err)
	}
	primary, err := cl.Primary(ctx)
	if err != nil {
		return fail("bench: %v", err)
	}
	setRate, err := benchSet(bins.Benchmark, primary.Addr, *clients, *requests)
	if err != nil {
		return fail("bench: %v", err)
	}
	lockOps := 2 * cycles
	fmt.Printf("valkey %s, %d client processes, recipe %s (fencing %v)\n", bins.Version, *clients, *recipe, *fencing)
	fmt.Printf("lock cycles (acquire+release):  %10.0f /s\n", cycles)
	fmt.Printf("lock operations:                %10.0f /s\n", lockOps)
	fmt.Printf("valkey-benchmark -t set -c %-3d  %10.0f requests/s\n", *clients, setRate)
	fmt.Printf("ratio lock ops / SET:           %10.3f\n", lockOps/setRate)
	return exitValid
}

func benchLocks(ctx context.Context, exe string, lc lock.Config, n int, dur time.Duration, profDir string) (float64, error) {
	var done atomic.Int64
	var counting atomic.Bool
	var wg sync.WaitGroup
	var procs []*workload.Client
	for i := 0; i < n; i++ {
		var opt workload.StartOptions
		if profDir != "" {
			opt.Env = []string{cpuProfileEnv + "=" + filepath.Join(profDir, fmt.Sprintf("client-%d.pprof", i))}
		}
		c, err := workload.StartClientWith(ctx, exe, workload.ClientConfig{
			Slot: i, NumClients: n, Lock: lc, Keys: []string{fmt.Sprintf("lock:{bench-%d}", i)},
			TTLMs: 5000, OpTimeoutMs: 2000, NoSection: true, Seed: int64(i + 1),
		}, opt)
		if err != nil {
			for _, p := range procs {
				_ = p.Kill()
			}
			return 0, err
		}
		procs = append(procs, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range c.Events() {
				if counting.Load() && e.F == history.FRelease && e.Type == history.OK {
					done.Add(1)
				}
			}
		}()
	}
	time.Sleep(time.Second) // connections up, scripts loaded
	if profDir != "" {
		stop, err := startCPUProfile(filepath.Join(profDir, "runner.pprof"))
		if err != nil {
			return 0, err
		}
		defer stop()
	}
	counting.Store(true)
	start := time.Now()
	time.Sleep(dur)
	counting.Store(false)
	elapsed := time.Since(start)
	for _, c := range procs {
		_ = c.Stop()
	}
	wg.Wait()
	for _, c := range procs {
		if err := c.Wait(); err != nil {
			return 0, err
		}
	}
	return float64(done.Load()) / elapsed.Seconds(), nil
}

var rpsRE = regexp.MustCompile(`SET: ([0-9.]+) requests per second`)

func benchSet(bin, addr string, c, n int) (float64, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	out, err := exec.Command(bin, "-h", host, "-p", port, "-t", "set", "-c", strconv.Itoa(c), "-n", strconv.Itoa(n), "-q").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s: %v: %s", bin, err, out)
	}
	m := rpsRE.FindAllSubmatch(out, -1)
	if m == nil {
		return 0, fmt.Errorf("no SET rate in valkey-benchmark output %q", out)
	}
	return strconv.ParseFloat(string(m[len(m)-1][1]), 64)
}
