package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/scenario"
)

func init() {
	register(command{name: "run", summary: "run a scenario: cluster, clients, nemesis, check, report", run: runRun})
}

func runUsage(name string) string {
	var b strings.Builder
	b.WriteString(name + " [--scenario NAME] [flags]\n\nscenarios:\n")
	for _, n := range scenario.Names() {
		s, _ := scenario.Get(n)
		fmt.Fprintf(&b, "  %-18s %s\n", n, s.Teaches)
	}
	b.WriteString("\nfaults (--faults):\n")
	for _, n := range nemesis.Names() {
		fmt.Fprintf(&b, "  %-18s %s\n", n, nemesis.Describe(n))
	}
	b.WriteString("\nfaults over a target (--faults; each is the entry of the run's deployment that acts on it):\n")
	for _, t := range nemesis.Targets {
		fmt.Fprintf(&b, "  %-18s %s\n", t.Name, t.Doc)
	}
	b.WriteString("\nrecipes (--recipe): " + strings.Join(lock.Names(), ", ") + "\n")
	return b.String()
}

// scenarioArg finds --scenario in args before parsing, so that the flags'
// defaults (and -h) are the chosen scenario's own values.
func scenarioArg(args []string) string {
	for i, a := range args {
		switch {
		case a == "--":
			return "failover-race"
		case (a == "--scenario" || a == "-scenario") && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "--scenario=") || strings.HasPrefix(a, "-scenario="):
			_, v, _ := strings.Cut(a, "=")
			return v
		}
	}
	return "failover-race"
}

// runFlags parses `run` flags into a config: the scenario first, then every
// flag the user set overrides the scenario's value. extra registers a
// command's own flags (bench scenario's --seeds). Every value is parsed and
// checked here, before anything starts.
func runFlags(name string, args []string, extra func(*flag.FlagSet)) (runner.Config, int, bool) {
	sc, err := scenario.Get(scenarioArg(args))
	if err != nil {
		return runner.Config{}, fail("%s: --scenario: %v", name, err), false
	}
	cfg := runner.FromScenario(sc)
	fs := newFlagSet(name, runUsage(name))
	dur := func(d *time.Duration, flagName string, min time.Duration, usage string) {
		fs.Var(knob.Duration{D: d, Min: min}, flagName, usage)
	}
	fs.String("scenario", sc.Name, "named preset of faults and knobs (see above); the defaults shown are its values")
	lockFlags(fs, &cfg)
	workloadFlags(fs, &cfg, dur)
	faultFlags(fs, &cfg, dur)
	minrep := replicationFlags(fs, &cfg)
	topologyFlags(fs, &cfg)
	fs.Var(knob.Choice{S: &cfg.Cluster.Build, Among: cluster.Builds}, "valkey-build", "Valkey build every node runs: default, or nolua (BUILD_LUA=no: EVAL-based locks fail; make setup-builds)")
	netFlags(fs, &cfg)
	fs.BoolVar(&cfg.Cluster.OldReplica, "mixed-versions", cfg.Cluster.OldReplica, "run the last replica on Valkey 8.1 (no DELIFEQ) as Sentinel's preferred candidate: a rolling upgrade halfway (make setup-builds)")
	fs.StringVar(&cfg.Out, "out", "", "run directory (default results/<timestamp>-<scenario>)")
	fs.StringVar(&cfg.ResourceDSN, "resource-dsn", "", "PostgreSQL DSN for the fenced resource (default: embedded SQLite in the run directory)")
	jobFlags(fs, &cfg, dur)
	runtimeName := "local"
	if sc.Runtime != "" {
		runtimeName = sc.Runtime
	}
	fs.Var(knob.Choice{S: &runtimeName, Among: knob.Runtimes}, "runtime", "where the nodes run: local (processes on loopback) or docker (containers; 'make images' first; partitions possible)")
	if extra != nil {
		extra(fs)
	}
	if code, ok := parseFlags(fs, args); !ok {
		return cfg, code, false
	}
	if fs.NArg() > 0 {
		return cfg, fail("%s: unexpected argument %q (flags go before it? see lockjepsen %s -h)", name, fs.Arg(0), name), false
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		set[f.Name] = true
		if f.Name == "appendfsync" {
			cfg.Cluster.AppendOnly = true
		}
	})
	if set["faults"] && set["faults-at"] {
		return cfg, fail("%s: --faults and --faults-at both given: --faults-at names its own faults; drop --faults", name), false
	}
	// A scenario without faults has no gap between them (baseline: 0). Faults
	// given to it run at the mean gap most fault scenarios use, said on
	// stderr and recorded in config.json, rather than refused for an
	// --interval the user never typed.
	if set["faults"] && !set["interval"] && cfg.UseDefaultFaultGap() {
		fmt.Fprintf(os.Stderr, "lockjepsen: scenario %s has no faults of its own: --faults %s run every %v on average (--interval sets the gap)\n",
			cfg.Scenario, strings.Join(cfg.Faults, ","), cfg.Interval)
	}
	cfg.Cluster.MinReplicasToWrite, cfg.Cluster.MinReplicasMaxLag = minrep.Count, minrep.LagS
	topologyDefaults(fs, &cfg)
	if err := foreignFlags(fs, &cfg.Cluster); err != nil {
		return cfg, fail("%s: %v", name, err), false
	}
	cfg.Cluster.Runtime = runtimeName
	if cfg.Cluster.Build == "default" {
		cfg.Cluster.Build = ""
	}
	if err := cfg.Validate(); err != nil {
		// A fault this deployment lacks: say what it has instead.
		msg := err.Error()
		var no *nemesis.UnofferedError
		if errors.As(err, &no) && no.Hint != "" {
			msg += ": " + no.Hint
		}
		// Another deployment given to a scenario made for Sentinel's: its
		// recipe or faults rarely fit there, and the deployment's own
		// scenarios do.
		if own := scenario.For(cfg.Cluster.Topology); set["topology"] && !set["scenario"] && sc.Topology != cfg.Cluster.Topology && len(own) > 0 {
			msg += fmt.Sprintf(" (or start from a scenario made for --topology %s: --scenario %s; lockjepsen run -h lists them)", cfg.Cluster.Topology, strings.Join(own, ", "))
		}
		return cfg, fail("%s: %s", name, msg), false
	}
	// The command that reruns this run: `lockjepsen run` with the run flags
	// given (bench scenario and lab add their own --seed and --out).
	cfg.Command = append([]string{"lockjepsen", "run"}, withoutFlag(withoutFlag(args, "seeds"), "out")...)
	if cfg.Out == "" {
		prefix := "" // bench scenario's folder holds one run per seed
		if name == "bench scenario" {
			prefix = "bench-"
		}
		cfg.Out = runfolder.NewDir(runfolder.Root, time.Now(), prefix+cfg.Scenario)
	}
	// Before anything starts: a folder no one can create was found by
	// Preflight once Valkey had been looked for, or (bench scenario) only
	// when the first seed's run began.
	if err := runfolder.CanCreate(cfg.Out); err != nil {
		return cfg, fail("%s: --out %s cannot be created: %v (choose a folder you can write)", name, cfg.Out, err), false
	}
	return cfg, 0, true
}

// lockFlags: the recipe and its fence.
func lockFlags(fs *flag.FlagSet, cfg *runner.Config) {
	fs.Var(recipeFlag{&cfg.Recipe}, "recipe", recipeUsage)
	fs.Var(execArgsFlag{&cfg.ExecArgs}, "exec-arg", "an argument for the --recipe exec:PATH program (repeat for more)")
	fs.Var(knob.Choice{S: &cfg.Fence, Among: knob.FenceModes}, "fence", "resource fence: none, write or read-write")
	fs.Var(knob.Choice{S: &cfg.FenceSource, Among: knob.FenceSources}, "fence-source", "where fence numbers come from: valkey (INCR with the acquire) or resource (the database's own sequence, asked for after the grant; works with any recipe)")
}

// workloadFlags: the clients, their keys, leases, time and seed.
func workloadFlags(fs *flag.FlagSet, cfg *runner.Config, dur func(*time.Duration, string, time.Duration, string)) {
	fs.Var(knob.Int{N: &cfg.Clients, Min: 1, Max: 256}, "clients", "client processes")
	fs.Var(knob.Int{N: &cfg.Keys, Min: 1, Max: 1024}, "keys", "lock keys lock:{job-N}, each protecting row job-N (at most 4x --clients)")
	dur(&cfg.TTL, "ttl", 100*time.Millisecond, "lease TTL; clients renew every TTL/3")
	dur(&cfg.TimeLimit, "time-limit", runner.MinTimeLimit, "workload length (a duration, or seconds)")
	fs.Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the fault schedule and the clients' choices; the same seed replays the same schedule")
}

// faultFlags: the faults (by name, or over a target), an explicit schedule,
// the gap between faults.
func faultFlags(fs *flag.FlagSet, cfg *runner.Config, dur func(*time.Duration, string, time.Duration, string)) {
	fs.Func("faults", "comma-separated faults, replacing the scenario's (see above; none for no faults)", func(v string) error {
		cfg.Faults = nil
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f == "" || f == "none" {
				continue
			}
			if name, param, ok := strings.Cut(f, ":"); ok {
				// NAME:duration=... is a sweep's fault axis; a run draws
				// each step's length from --seed.
				if err := nemesis.Known(name); err != nil {
					return err
				}
				return fmt.Errorf("fault %q: a run takes fault names only, and %q is a sweep's fault parameter: give --faults %s "+
					"(each step's length is drawn from --seed; --interval sets the gap between faults)", f, param, name)
			}
			if err := nemesis.Known(f); err != nil {
				return err
			}
			cfg.Faults = append(cfg.Faults, f)
		}
		return nil
	})
	fs.Func("faults-at", "explicit fault schedule, OFFSET:FAULT,... from the workload's start, e.g. 3.0s:cut-replication,12.5s:kill-primary: "+
		"these faults fire at these offsets instead of where --seed puts them (each step's duration and the like are still drawn from --seed, "+
		"so a run's recorded schedule given here repeats it); replaces --faults", func(v string) error {
		steps, err := nemesis.ParseFaultsAt(v)
		if err != nil {
			return err
		}
		cfg.FaultsAt = steps
		return nil
	})
	dur(&cfg.Interval, "interval", time.Millisecond, "mean gap between faults")
}

// replicationFlags: what the lock asks of replication and persistence, and
// the nodes' memory; the min-replicas value is applied once parsed.
func replicationFlags(fs *flag.FlagSet, cfg *runner.Config) *knob.MinReplicas {
	fs.Var(&knob.Parsed[knob.Wait]{V: &cfg.Wait, Parse: knob.ParseWait}, "wait", "WAIT after acquire, replicas:timeout, e.g. 1:100ms (fewer acks: release, acquire failed)")
	fs.Var(&knob.Parsed[knob.WaitAOF]{V: &cfg.WaitAOF, Parse: knob.ParseWaitAOF}, "waitaof", "WAITAOF after acquire, local:replicas:timeout, e.g. 1:1:100ms (needs --appendonly for local 1)")
	minrep := &knob.MinReplicas{LagS: cfg.Cluster.MinReplicasMaxLag}
	fs.Var(&knob.Parsed[knob.MinReplicas]{V: minrep, Parse: knob.ParseMinReplicas}, "min-replicas", "min-replicas-to-write:min-replicas-max-lag (seconds) on every node, e.g. 1:10")
	fs.Var(knob.Choice{S: &cfg.Cluster.AppendFsync, Among: knob.FsyncPolicies}, "appendfsync", "AOF fsync policy (turns on --appendonly): always, everysec, no")
	fs.BoolVar(&cfg.Cluster.AppendOnly, "appendonly", false, "AOF on every node")
	fs.Var(&knob.Parsed[int64]{V: &cfg.Cluster.MaxMemory, Parse: knob.ParseBytes}, "maxmemory", "maxmemory on every node, e.g. 16mb (at least 4mb; a shared cache's limit: the memory-pressure fault fills it)")
	fs.Var(knob.Choice{S: &cfg.Cluster.MaxMemoryPolicy, Among: knob.MaxMemoryPolicies}, "maxmemory-policy", "what a full node does: noeviction (refuse writes) or evict: "+strings.Join(knob.MaxMemoryPolicies[1:], ", ")+" (volatile-* evict only keys with a TTL, as every lock key has)")
	fs.Var(knob.Int{N: &cfg.Cluster.Replicas, Min: 0, Max: 8}, "replicas", "replicas of the primary")
	fs.Var(knob.Duration{D: &cfg.Cluster.DownAfter, Min: 100 * time.Millisecond, Why: "below that Sentinels flag healthy nodes down"}, "down-after", "Sentinel down-after-milliseconds")
	return minrep
}

// netFlags: the proxies and the network faults' sizes.
func netFlags(fs *flag.FlagSet, cfg *runner.Config) {
	fs.BoolVar(&cfg.Cluster.NetProxy, "net-proxy", cfg.Cluster.NetProxy, "a TCP proxy (toxiproxy, in this process; on 127.0.0.1, or on docker on the host's address in each node's network) in front of every Valkey node, announced as the node's address, and a second one for the lock clients: what the net-* faults act on (--topology sentinel)")
	fs.Var(knob.Duration{D: &cfg.Net.Latency, Min: time.Millisecond}, "net-latency", "net-latency: the delay added to each of the primary's replies (toxiproxy's latency), at most --time-limit")
	fs.Var(knob.Duration{D: &cfg.Net.Jitter, Min: 0}, "net-jitter", "net-latency: each delay is --net-latency ± this (0 to --net-latency)")
	fs.Func("net-share", "net-timeout: the share of the primary's connections that stop passing replies, above 0 and at most 1 (default 0.5)", func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f <= 1) {
			return fmt.Errorf("want a share above 0 and at most 1, e.g. 0.5")
		}
		cfg.Net.Share = f
		return nil
	})
}

// jobFlags: the work inside a hold, and the checker's tolerance.
func jobFlags(fs *flag.FlagSet, cfg *runner.Config, dur func(*time.Duration, string, time.Duration, string)) {
	fs.Var(knob.Int{N: &cfg.Job.Steps, Min: 1, Max: 100000}, "steps", "critical sections per lock hold")
	dur(&cfg.Job.Think, "think", 0, "work inside one critical section, between read and write")
	dur(&cfg.Job.Pause, "idle", 0, "a client's idle time between a release and its next acquire: with --steps 1 --think 0s, how rarely a lease is alive")
	dur(&cfg.Epsilon, "epsilon", 0, "checker's tolerance on lease bounds")
}

func runRun(args []string) int {
	var mo metricsOpts
	cfg, code, ok := runFlags("run", args, mo.register)
	if !ok {
		return code
	}
	if runfolder.HoldsRun(cfg.Out) {
		return fail("%s already holds a run: choose another --out (runs are never overwritten)", cfg.Out)
	}
	msrv, mcoll, code, ok := mo.start("run")
	if !ok {
		return code
	}
	if mcoll != nil {
		cfg.Metrics = mcoll.NewRun(runInfo(cfg))
	}
	// The first Ctrl-C stops the workload and still checks what was recorded;
	// processes are ended by the runner, never left behind.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runner.Preflight(ctx, cfg); err != nil {
		return fail("run: %v", err)
	}
	fmt.Printf("lockjepsen run: scenario %s, recipe %s, fence %s, seed %d -> %s\n", cfg.Scenario, cfg.Recipe, cfg.Fence, cfg.Seed, cfg.Out)
	if len(cfg.Schedule) > 0 {
		fmt.Println("fault schedule:")
		for _, s := range cfg.Schedule {
			fmt.Println("  " + s.String())
		}
	}
	start := time.Now()
	limitCheckMemory()
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
	mo.stop(ctx, msrv)
	return o.ExitCode
}

// withoutFlag drops --name VALUE (or --name=VALUE) from args.
func withoutFlag(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := strings.TrimLeft(args[i], "-")
		switch {
		case a == name && i+1 < len(args) && args[i] != a:
			i++
		case strings.HasPrefix(a, name+"=") && args[i] != a:
		default:
			out = append(out, args[i])
		}
	}
	return out
}
