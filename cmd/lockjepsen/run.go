package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/scenario"
)

func init() {
	register(command{name: "run", summary: "run a scenario: cluster, clients, nemesis, check, report", run: runRun})
}

func runUsage() string {
	var b strings.Builder
	b.WriteString("run [--scenario NAME] [flags]\n\nscenarios:\n")
	for _, n := range scenario.Names() {
		s, _ := scenario.Get(n)
		fmt.Fprintf(&b, "  %-18s %s\n", n, s.Teaches)
	}
	b.WriteString("\nfaults (--faults):\n")
	for _, n := range nemesis.Names() {
		fmt.Fprintf(&b, "  %-18s %s\n", n, nemesis.Describe(n))
	}
	b.WriteString("\nrecipes (--recipe): " + strings.Join(lock.Names(), ", ") + "\n")
	return b.String()
}

// runFlags parses `run` flags into a config: the scenario first, then every
// flag the user set overrides the scenario's value.
func runFlags(name string, args []string) (runner.Config, int, bool) {
	fs := newFlagSet(name, runUsage())
	scen := fs.String("scenario", "failover-race", "named preset of faults and knobs (see above)")
	recipe := fs.String("recipe", lock.Native, "lock recipe: "+strings.Join(lock.Names(), ", "))
	fence := fs.String("fence", "read-write", "resource fence: none, write or read-write")
	clients := fs.Int("clients", 16, "client processes (default: the scenario's)")
	keys := fs.Int("keys", 1, "lock keys (default: the scenario's)")
	ttl := fs.Duration("ttl", 2*time.Second, "lease TTL (default: the scenario's)")
	limit := fs.Duration("time-limit", 30*time.Second, "workload length (default: the scenario's)")
	seed := fs.Int64("seed", 1, "seed of the fault schedule and the clients' choices; the same seed replays the same schedule")
	faults := fs.String("faults", "", "comma-separated faults, replacing the scenario's (see above)")
	interval := fs.Duration("interval", 5*time.Second, "mean gap between faults (default: the scenario's)")
	wait := fs.String("wait", "", "WAIT after acquire, replicas:timeout, e.g. 1:100ms (fewer acks: release, acquire failed)")
	waitaof := fs.String("waitaof", "", "WAITAOF after acquire, local:replicas:timeout, e.g. 1:1:100ms (needs --appendonly for local 1)")
	minrep := fs.String("min-replicas", "", "min-replicas-to-write:min-replicas-max-lag (seconds) on every node, e.g. 1:10")
	fsync := fs.String("appendfsync", "everysec", "AOF fsync policy (with --appendonly): always, everysec, no")
	aof := fs.Bool("appendonly", false, "AOF on every node")
	replicas := fs.Int("replicas", 2, "replicas")
	sentinels := fs.Int("sentinels", 3, "Sentinels")
	downAfter := fs.Duration("down-after", time.Second, "Sentinel down-after-milliseconds")
	out := fs.String("out", "", "run directory (default results/<timestamp>-<scenario>)")
	dsn := fs.String("resource-dsn", "", "PostgreSQL DSN for the fenced resource (default: embedded SQLite in the run directory)")
	steps := fs.Int("steps", 0, "critical sections per lock hold (default: the scenario's)")
	think := fs.Duration("think", 0, "work inside one critical section, between read and write (default: the scenario's)")
	epsilon := fs.Duration("epsilon", 5*time.Millisecond, "checker's tolerance on lease bounds")
	rt := fs.String("runtime", "local", "where the nodes run: local (processes on loopback) or docker (containers; 'make images' first; partitions possible)")
	if code, ok := parseFlags(fs, args); !ok {
		return runner.Config{}, code, false
	}
	if fs.NArg() > 0 {
		return runner.Config{}, fail("%s: unexpected argument %q (flags go before it? see lockjepsen %s -h)", name, fs.Arg(0), name), false
	}
	sc, err := scenario.Get(*scen)
	if err != nil {
		return runner.Config{}, fail("--scenario: %v", err), false
	}
	cfg := runner.FromScenario(sc)
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg.Recipe, cfg.Fence, cfg.Seed, cfg.ResourceDSN, cfg.Epsilon = *recipe, *fence, *seed, *dsn, *epsilon
	if set["clients"] {
		cfg.Clients = *clients
	}
	if set["keys"] {
		cfg.Keys = *keys
	}
	if set["ttl"] {
		cfg.TTL = *ttl
	}
	if set["time-limit"] {
		cfg.TimeLimit = *limit
	}
	if set["interval"] {
		cfg.Interval = *interval
	}
	if set["steps"] {
		cfg.Job.Steps = *steps
	}
	if set["think"] {
		cfg.Job.Think = *think
	}
	if set["faults"] {
		cfg.Faults = nil
		for _, f := range strings.Split(*faults, ",") {
			if f = strings.TrimSpace(f); f != "" && f != "none" {
				cfg.Faults = append(cfg.Faults, f)
			}
		}
	}
	if lock.Summary(cfg.Recipe) == "" {
		return cfg, fail("--recipe %q: want one of %s", cfg.Recipe, strings.Join(lock.Names(), ", ")), false
	}
	if cfg.Wait, err = runner.ParseWait(*wait); err != nil {
		return cfg, fail("%v", err), false
	}
	if cfg.WaitAOF, err = runner.ParseWaitAOF(*waitaof); err != nil {
		return cfg, fail("%v", err), false
	}
	n, lag, err := runner.ParseMinReplicas(*minrep)
	if err != nil {
		return cfg, fail("%v", err), false
	}
	cfg.Cluster.MinReplicasToWrite, cfg.Cluster.MinReplicasMaxLag = n, lag
	cfg.Cluster.AppendFsync, cfg.Cluster.AppendOnly = *fsync, *aof || set["appendfsync"]
	cfg.Cluster.Replicas, cfg.Cluster.Sentinels, cfg.Cluster.DownAfter = *replicas, *sentinels, *downAfter
	cfg.Cluster.Runtime = *rt
	if *rt != "local" && *rt != "docker" {
		return cfg, fail("--runtime %q: want local or docker", *rt), false
	}
	if sc.Runtime != "" && *rt != sc.Runtime {
		return cfg, fail("--scenario %s needs --runtime %s: processes on one loopback interface cannot be partitioned ('make images' builds what it needs)", sc.Name, sc.Runtime), false
	}
	for _, f := range cfg.Faults {
		if f == "partition" && *rt != "docker" {
			return cfg, fail("the partition fault needs --runtime docker: processes on one loopback interface cannot be partitioned ('make images' builds what it needs)"), false
		}
	}
	if err := cfg.Cluster.Validate(); err != nil && !strings.Contains(err.Error(), "no run directory") {
		return cfg, fail("%v", err), false
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fail("%v", err), false
	}
	cfg.Out = *out
	if cfg.Out == "" {
		cfg.Out = runfolder.NewDir(runfolder.Root, time.Now(), cfg.Scenario)
	}
	return cfg, 0, true
}

func runRun(args []string) int {
	cfg, code, ok := runFlags("run", args)
	if !ok {
		return code
	}
	if runfolder.HoldsRun(cfg.Out) {
		return fail("%s already holds a run: choose another --out (runs are never overwritten)", cfg.Out)
	}
	// The first Ctrl-C stops the workload and still checks what was recorded;
	// processes are ended by the runner, never left behind.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("lockjepsen run: scenario %s, recipe %s, fence %s, seed %d -> %s\n", cfg.Scenario, cfg.Recipe, cfg.Fence, cfg.Seed, cfg.Out)
	if len(cfg.Schedule) > 0 {
		fmt.Println("fault schedule:")
		for _, s := range cfg.Schedule {
			fmt.Println("  " + s.String())
		}
	}
	start := time.Now()
	o := runner.Run(ctx, cfg, os.Stdout)
	if err := runfolder.UpdateLatest(runfolder.Root, cfg.Out); err != nil {
		fmt.Fprintf(os.Stderr, "lockjepsen: warning: %v\n", err)
	}
	if o.Summary != "" {
		fmt.Println()
		fmt.Print(o.Summary)
	}
	fmt.Printf("run took %v\n", time.Since(start).Round(100*time.Millisecond))
	if o.Err != nil {
		fmt.Fprintf(os.Stderr, "lockjepsen: %v\n", o.Err)
	}
	return o.ExitCode
}
