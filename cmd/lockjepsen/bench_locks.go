package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
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

	lc := lock.Config{Recipe: *recipe, ExecArgs: execArgs, Service: cfg.Deployment().Endpoints(cl), Fencing: *fencing}
	if _, err := lock.Check(ctx, lc); err != nil {
		return fail("bench: %v", err)
	}
	primary, err := cl.Primary(ctx)
	if err != nil {
		return fail("bench: %v", err)
	}
	server := strconv.Itoa(primary.PID)
	cycles, cpu, err := benchLocks(ctx, exe, lc, *clients, *dur, *profDir, server)
	if err != nil {
		return fail("bench: %v", err)
	}
	set, err := benchSet(bins.Benchmark, primary.Addr, *clients, *requests, server)
	if err != nil {
		return fail("bench: %v", err)
	}
	lockOps := 2 * cycles
	fmt.Printf("valkey %s, %d client processes, recipe %s (fencing %v)\n", bins.Version, *clients, *recipe, *fencing)
	fmt.Printf("lock cycles (acquire+release):  %10.0f /s\n", cycles)
	fmt.Printf("lock operations:                %10.0f /s\n", lockOps)
	perOp := func(d time.Duration, ops float64) float64 { return d.Seconds() * 1e6 / ops }
	n := lockOps * cpu.elapsed.Seconds() // the lock ops counted while cpu was
	if cpu.ok {
		// CPU per operation moves less than a rate when others share the
		// machine: it says what the harness costs, not what it was given.
		fmt.Printf("CPU per lock op (user+sys):     %10.1f us in the clients, %.1f us in the runner, %.1f us in valkey-server\n",
			perOp(cpu.clients, n), perOp(cpu.runner, n), perOp(cpu.server, n))
	}
	fmt.Printf("valkey-benchmark -t set -c %-3d  %10.0f requests/s\n", *clients, set.rate)
	if set.ok {
		fmt.Printf("CPU per SET (user+sys):         %10.1f us in valkey-benchmark, %.1f us in valkey-server\n",
			perOp(set.bench, set.n), perOp(set.server, set.n))
	}
	fmt.Printf("ratio lock ops / SET:           %10.3f\n", lockOps/set.rate)
	if cpu.ok && set.ok {
		limit := physicalLimit(runtime.NumCPU(), perOp(cpu.clients, n), perOp(cpu.server, n))
		fmt.Printf("with a runner that cost nothing: %9.0f lock ops/s at most on %d cores, ratio %.3f (the client processes' and the server's CPU per lock op)\n",
			limit, runtime.NumCPU(), limit/set.rate)
	}
	return exitValid
}

// physicalLimit is the most lock operations a second that cores can carry
// when each costs clientUs in the client processes and serverUs in
// valkey-server, and nothing else: the cores' CPU shared by both, and the
// server's one thread at most one core.
func physicalLimit(cores int, clientUs, serverUs float64) float64 {
	if clientUs+serverUs <= 0 {
		return 0
	}
	limit := float64(cores) * 1e6 / (clientUs + serverUs)
	if serverUs > 0 {
		limit = min(limit, 1e6/serverUs)
	}
	return limit
}

// benchCPU is the CPU time the client processes and the runner spent while
// the lock operations were counted; ok is false where /proc could not say.
type benchCPU struct {
	clients, runner, server, elapsed time.Duration
	ok                               bool
}

func benchLocks(ctx context.Context, exe string, lc lock.Config, n int, dur time.Duration, profDir, server string) (float64, benchCPU, error) {
	var done atomic.Int64
	var counting atomic.Bool
	var wg sync.WaitGroup
	var procs []*workload.Client
	for i := 0; i < n; i++ {
		// Events are taken in the pipe's reader, as the runner takes them.
		opt := workload.StartOptions{OnEvent: func(e history.Event) {
			if counting.Load() && e.F == history.FRelease && e.Type == history.OK {
				done.Add(1)
			}
		}}
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
			return 0, benchCPU{}, err
		}
		procs = append(procs, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range c.Events() { // closed when the client is done
			}
		}()
	}
	time.Sleep(time.Second) // connections up, scripts loaded
	if profDir != "" {
		stop, err := startCPUProfile(filepath.Join(profDir, "runner.pprof"))
		if err != nil {
			return 0, benchCPU{}, err
		}
		defer stop()
	}
	cpu0, ok0 := cpuOf(procs, server)
	counting.Store(true)
	start := time.Now()
	time.Sleep(dur)
	counting.Store(false)
	elapsed := time.Since(start)
	cpu1, ok1 := cpuOf(procs, server)
	cpu := benchCPU{clients: cpu1.clients - cpu0.clients, runner: cpu1.runner - cpu0.runner, server: cpu1.server - cpu0.server,
		elapsed: elapsed, ok: ok0 && ok1}
	for _, c := range procs {
		_ = c.Stop()
	}
	wg.Wait()
	for _, c := range procs {
		if err := c.Wait(); err != nil {
			return 0, benchCPU{}, err
		}
	}
	return float64(done.Load()) / elapsed.Seconds(), cpu, nil
}

// cpuOf sums the user and system time of the client processes, of this
// process and of the server so far, from /proc/PID/stat (fields 14 and 15,
// in clock ticks).
func cpuOf(procs []*workload.Client, server string) (benchCPU, bool) {
	var c benchCPU
	s, err := procCPU(server)
	if err != nil {
		return c, false
	}
	c.server = s
	for _, p := range procs {
		d, err := procCPU(strconv.Itoa(p.PID()))
		if err != nil {
			return c, false
		}
		c.clients += d
	}
	d, err := procCPU("self")
	if err != nil {
		return c, false
	}
	c.runner = d
	return c, true
}

// clockTick is USER_HZ, 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

func procCPU(pid string) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%s/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%s/stat: %d fields after the name", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] { // utime, stime: fields 14 and 15
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%s/stat: %w", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * clockTick, nil
}

var rpsRE = regexp.MustCompile(`SET: ([0-9.]+) requests per second`)

// setBench is valkey-benchmark's run: its rate, and the CPU it and the
// server spent on its n requests.
type setBench struct {
	rate, n       float64
	bench, server time.Duration
	ok            bool
}

func benchSet(bin, addr string, c, n int, server string) (setBench, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return setBench{}, err
	}
	s0, err0 := procCPU(server)
	cmd := exec.Command(bin, "-h", host, "-p", port, "-t", "set", "-c", strconv.Itoa(c), "-n", strconv.Itoa(n), "-q")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return setBench{}, fmt.Errorf("%s: %v: %s", bin, err, out)
	}
	s1, err1 := procCPU(server)
	m := rpsRE.FindAllSubmatch(out, -1)
	if m == nil {
		return setBench{}, fmt.Errorf("no SET rate in valkey-benchmark output %q", out)
	}
	rate, err := strconv.ParseFloat(string(m[len(m)-1][1]), 64)
	if err != nil {
		return setBench{}, err
	}
	// valkey-benchmark's own CPU is its process's, whole (it exits when
	// done); the server's is what it spent meanwhile.
	ps := cmd.ProcessState
	return setBench{rate: rate, n: float64(n), bench: ps.UserTime() + ps.SystemTime(), server: s1 - s0,
		ok: err0 == nil && err1 == nil}, nil
}
