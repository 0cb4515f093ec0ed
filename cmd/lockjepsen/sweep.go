package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/internal/tty"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/metrics"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/scenario"
	"github.com/lockjepsen/lockjepsen/sweep"
)

func init() {
	register(command{name: "sweep", summary: "run a scenario many times across settings × faults; P(double grant) with intervals, cost, plots", run: runSweep,
		subcommands: []string{"merge", "join", "evidence", "publish"}})
}

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func sweepUsage() string {
	var b strings.Builder
	b.WriteString("sweep [flags]                 a new sweep in results/<timestamp>-sweep\n" +
		"       lockjepsen sweep --resume DIR [--aggregate]\n" +
		"       lockjepsen sweep --shard I/N [flags]   one shard of a sweep (I defaults to $JOB_COMPLETION_INDEX)\n" +
		"       lockjepsen sweep merge [--out DIR] SHARD-DIR...   one sweep from shard folders\n" +
		"       lockjepsen sweep join --out DIR SWEEP-DIR...   one report from sweeps of disjoint cells (a row at a time)\n" +
		"       lockjepsen sweep evidence [--attempts N] DIR   a shrunk violating trial for each red cell, linked from its grid\n" +
		"       lockjepsen sweep publish --to ROW-DIR DIR   the sweep's figures, plan and evidence into a folder kept without its trials\n\nconfigurations (--configs; join with '+' to combine):\n")
	for _, c := range sweep.Catalog {
		fmt.Fprintf(&b, "  %-24s %s\n", c.Name, c.Note)
	}
	b.WriteString("\ndeployments (--configs too: the lock service itself; compare them under failover, paused-client, clock-jump):\n")
	for _, c := range sweep.Deployments {
		fmt.Fprintf(&b, "  %-24s %s\n", c.Name, c.Note)
	}
	b.WriteString("\nfaults (--faults; NAME:duration=4s:interval=8s sets parameters; any nemesis fault name works too, and a fault over a\n" +
		"target runs each deployment's own entry, n/a where it has no such node: " + strings.Join(targetNames(), ", ") + "):\n")
	for _, f := range sweep.FaultCatalog {
		if f.ByBackend != nil {
			var on []string
			for _, be := range sweep.Backends {
				if fs, ok := f.ByBackend[be]; ok {
					on = append(on, be+": "+strings.Join(fs, ","))
				} else if _, ok := f.NotOn[be]; ok {
					on = append(on, be+": n/a")
				}
			}
			fmt.Fprintf(&b, "  %-24s per deployment (%s)\n", f.Name, strings.Join(on, "; "))
			continue
		}
		fmt.Fprintf(&b, "  %-24s %s = %s\n", f.Name, strings.Join(f.Faults, ","), f.Note)
	}
	b.WriteString("\nexit codes: 0 every planned trial has a verdict (double grants are the measurement, not an error);\n" +
		"254 bad input (nothing ran); 255 the sweep was interrupted or some trials gave no verdict\n")
	return b.String()
}

func runSweep(args []string) int {
	if len(args) > 0 && args[0] == "merge" {
		return runSweepMerge(args[1:])
	}
	if len(args) > 0 && args[0] == "join" {
		return runSweepJoin(args[1:])
	}
	if len(args) > 0 && args[0] == "evidence" {
		return runSweepEvidence(args[1:])
	}
	if len(args) > 0 && args[0] == "publish" {
		return runSweepPublish(args[1:])
	}
	f, code, ok := parseSweepFlags(args)
	if !ok {
		return code
	}
	if *f.aggregate || *f.dry {
		f.mo.addr = "" // nothing runs: no endpoint
	}
	msrv, mcoll, code, ok := f.mo.start("sweep")
	if !ok {
		return code
	}
	var dir string
	var release func()
	if *f.resume != "" {
		dir, release, code, ok = f.resumeSweep()
	} else {
		dir, release, code, ok = f.newSweep()
	}
	if !ok {
		return code
	}
	defer release()
	return executeSweep(dir, msrv, mcoll, &f.mo)
}

// sweepFlags are the flags of 'lockjepsen sweep', parsed; set names the
// ones the user gave.
type sweepFlags struct {
	scen, configs, faults, file, pace, shard, out, resume *string
	custom                                                multiFlag
	trials, minFail, maxTrials, parallel                  *int
	limit                                                 *time.Duration
	untilCI, below                                        *float64
	seed                                                  *int64
	aggregate, cont, dry                                  *bool
	mo                                                    metricsOpts
	set                                                   map[string]bool
}

func parseSweepFlags(args []string) (*sweepFlags, int, bool) {
	f := &sweepFlags{set: map[string]bool{}}
	fs := newFlagSet("sweep", sweepUsage())
	f.scen = fs.String("scenario", "failover-race", "scenario every trial runs (its clients, TTL and job); the fault axis replaces its faults")
	f.configs = fs.String("configs", strings.Join(sweep.DefaultConfigs, ","), "comma-separated configurations (see above)")
	fs.Var(&f.custom, "config", "a configuration of your own, NAME=KNOB;KNOB... (wait=1:100ms, waitaof=1:1:100ms, min-replicas=1:10, appendonly, appendfsync=always, replicas=3, or a catalog name); repeatable, added to --configs")
	f.faults = fs.String("faults", strings.Join(sweep.DefaultFaults, ","), "comma-separated fault kinds (see above)")
	f.file = fs.String("file", "", "sweep file (JSON, the shape of plan.json); flags given explicitly override it")
	f.trials, f.minFail, f.maxTrials, f.parallel, f.limit = new(int), new(int), new(int), new(int), new(time.Duration)
	*f.trials, *f.parallel = sweep.DefaultTrials, 1
	fs.Var(knob.Int{N: f.trials, Min: 1, Max: 100000}, "trials", "trials per configuration × fault")
	fs.Var(knob.Int{N: f.minFail, Min: 0, Max: 100000}, "min-failovers", "keep adding trials to a cell until it saw this many failovers (faults, for kinds without one)")
	fs.Var(knob.Int{N: f.maxTrials, Min: 0, Max: 100000}, "max-trials", "cap on trials per cell with --min-failovers or --until-ci (default 4x the larger of --trials and --min-failovers; 10 with --until-ci)")
	f.untilCI = fs.Float64("until-ci", 0, "keep adding trials to a cell until its 95% Wilson interval is narrower than this width (e.g. 0.2), or, with no hit, its upper bound is below --below")
	f.below = fs.Float64("below", 0, "with --until-ci: a cell with no hit is done once its upper bound is below this rate (default: the --until-ci width); 0.04 takes ~93 opportunities")
	f.pace = fs.String("pace", "back-to-back", "back-to-back: each fault fires as soon as the previous one healed and the cluster is ready again; schedule: at the fault's planned span plus its interval (as lockjepsen run)")
	f.shard = fs.String("shard", "", "run one shard, I/N: the trials whose index is I mod N (I/N or /N with I from $JOB_COMPLETION_INDEX); join shards with 'lockjepsen sweep merge'")
	fs.Var(knob.Duration{D: f.limit, Min: 0}, "time-limit", "workload length of each trial, a duration or seconds (default: 2m back to back, the scenario's on a schedule)")
	f.seed = fs.Int64("seed", 1, "trial n of every cell runs with seed+n")
	fs.Var(knob.Int{N: f.parallel, Min: 1, Max: 16}, "parallel", "trials at once; each is a full cluster and 8+ client processes, so on 2 cores keep 1 (timings skew above that)")
	f.out = fs.String("out", "", "sweep folder (default results/<timestamp>-sweep)")
	f.resume = fs.String("resume", "", "continue the sweep in DIR: run what is missing, then re-aggregate")
	f.aggregate = fs.Bool("aggregate", false, "with --resume: run nothing, only recompute sweep.json, sweep.csv, plots and index.html from the trials")
	f.cont = fs.Bool("continue", false, "when --out already holds this very plan (a Kubernetes pod started again), resume it instead of refusing")
	f.dry = fs.Bool("dry-run", false, "print the matrix and the wall time estimate, run nothing (with --out: write its plan.json there, for --resume)")
	f.mo.register(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return nil, code, false
	}
	if fs.NArg() > 0 {
		return nil, fail("sweep: unexpected argument %q (flags go before it? see lockjepsen sweep -h)", fs.Arg(0)), false
	}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	return f, 0, true
}

// noRelease is the release of a sweep folder nothing claimed.
func noRelease() {}

// resumeSweep is --resume DIR: the plan.json there, with the stopping
// rule's flags applied, and the folder claimed. --aggregate ends here, done
// (ok false, with its exit code).
func (f *sweepFlags) resumeSweep() (string, func(), int, bool) {
	set := f.set
	for _, fl := range []string{"scenario", "configs", "config", "faults", "file", "trials", "time-limit", "seed", "out", "pace", "shard"} {
		if set[fl] {
			return "", nil, fail("sweep: --%s cannot change a sweep being resumed (its plan.json fixes the matrix); only --parallel, --min-failovers, --until-ci, --below and --max-trials can", fl), false
		}
	}
	dir := *f.resume
	plan, err := sweep.ReadPlan(dir)
	if err != nil {
		return "", nil, fail("sweep: --resume: %v", err), false
	}
	// Claimed before the plan is rewritten: a second --resume must not
	// change the plan a running sweep decides by. --aggregate alone
	// only reads the trials, so it may look at a sweep under way.
	release := noRelease
	if !*f.aggregate {
		if release, err = claim(dir); err != nil {
			return "", nil, fail("sweep: %v", err), false
		}
	}
	if set["parallel"] || set["min-failovers"] || set["max-trials"] || set["until-ci"] || set["below"] {
		if set["parallel"] {
			plan.Parallel = *f.parallel
		}
		if set["min-failovers"] {
			plan.MinFailovers = *f.minFail
		}
		if set["max-trials"] {
			plan.MaxTrials = *f.maxTrials
		}
		if set["until-ci"] {
			plan.UntilCI = *f.untilCI
		}
		if set["below"] {
			plan.Below = *f.below
		}
		plan.Defaults()
		if err := plan.Validate(); err != nil {
			release()
			return "", nil, fail("sweep: %v", err), false
		}
		if err := sweep.RewritePlan(dir, plan); err != nil {
			release()
			return "", nil, fail("sweep: %v", err), false
		}
	}
	if *f.aggregate {
		release()
		return "", nil, reaggregate(dir), false
	}
	return dir, release, 0, true
}

// newSweep makes the plan from the flags (and --file), prints it, and
// starts its folder, claimed. --dry-run ends here, done (ok false, exit 0).
func (f *sweepFlags) newSweep() (string, func(), int, bool) {
	set := f.set
	if *f.aggregate {
		return "", nil, fail("sweep: --aggregate needs --resume DIR"), false
	}
	plan, code, ok := sweepPlan(set, *f.file, *f.scen, *f.configs, f.custom, *f.faults, *f.trials, *f.minFail, *f.maxTrials, *f.limit, *f.seed, *f.parallel)
	if !ok {
		return "", nil, code, false
	}
	if set["until-ci"] {
		plan.UntilCI = *f.untilCI
	}
	if set["below"] {
		plan.Below = *f.below
	}
	if *f.file == "" || set["pace"] {
		switch *f.pace {
		case "back-to-back":
			plan.BackToBack = true
		case "schedule":
			plan.BackToBack = false
		default:
			return "", nil, fail("--pace %q: want back-to-back or schedule", *f.pace), false
		}
	}
	if plan.BackToBack && plan.TimeLimit == 0 {
		plan.TimeLimit = sweep.Duration(sweep.BackToBackTimeLimit)
	}
	// Before the plan is printed: a folder no one can create was
	// found by sweep.Start, with no flag named.
	out := *f.out
	if out != "" {
		if err := runfolder.CanCreate(out); err != nil {
			return "", nil, fail("sweep: --out %s cannot be created: %v", out, err), false
		}
	}
	if *f.shard != "" {
		sh, err := sweep.ParseShard(*f.shard, os.Getenv("JOB_COMPLETION_INDEX"))
		if err != nil {
			return "", nil, fail("--shard: %v", err), false
		}
		plan.Shard = &sh
	}
	plan.Defaults()
	if err := plan.Validate(); err != nil {
		return "", nil, fail("sweep: %v", err), false
	}
	noteDefaultInterval(plan)
	printPlan(plan)
	if *f.dry {
		// With --out, write the plan and run nothing: 'sweep --resume
		// DIR' runs it later, and the plan is there to compare.
		if out != "" {
			if err := sweep.Start(out, plan); err != nil {
				return "", nil, fail("sweep: %v", err), false
			}
			fmt.Printf("plan written to %s\n", filepath.Join(out, sweep.PlanFile))
		}
		return "", nil, exitValid, false
	}
	dir := out
	if dir == "" {
		name := "sweep"
		if plan.Shard != nil {
			name = fmt.Sprintf("sweep-shard-%d-of-%d", plan.Shard.Index, plan.Shard.Count)
		}
		dir = runfolder.NewDir(runfolder.Root, time.Now(), name)
	}
	if err := startOrContinue(dir, plan, *f.cont); err != nil {
		return "", nil, fail("sweep: %v", err), false
	}
	release, err := claim(dir)
	if err != nil {
		return "", nil, fail("sweep: %v", err), false
	}
	return dir, release, 0, true
}

// executeSweep runs the sweep in dir and prints what it found.
func executeSweep(dir string, msrv *metrics.Server, mcoll *metrics.Collector, mo *metricsOpts) int {
	fmt.Printf("lockjepsen sweep -> %s (trial folders under trials/, progress of each in its run.log)\n", dir)
	// The first Ctrl-C lets the trials in flight stop, check what they
	// recorded, and the sweep aggregate what finished; a second one kills.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // restore the default: a second Ctrl-C ends the process
	}()
	start := time.Now()
	opts := sweep.Options{Progress: os.Stdout, TTY: tty.IsTerminal(os.Stdout)}
	if exe, err := os.Executable(); err == nil {
		// Each red cell's first violating trial, shrunk into evidence/<cell>/
		// as it finishes: the row's grid links it, and a committed row keeps
		// it where it drops its trials.
		opts.Evidence = func(trial, ev, kind string) error { return shrinkInto(exe, trial, ev, kind) }
	}
	if mcoll != nil {
		// One endpoint and one registry for the whole sweep: counters add up
		// across trials, lockjepsen_trial names the trial under way.
		opts.Run = func(ctx context.Context, cfg runner.Config, p io.Writer) runner.Outcome {
			cfg.Metrics = mcoll.NewRun(trialInfo(dir, cfg))
			return runner.Run(ctx, cfg, p)
		}
	}
	rep, err := sweep.Execute(ctx, dir, opts)
	defer mo.stop(ctx, msrv)
	if rep != nil {
		printFindings(rep)
		fmt.Printf("\nsweep took %v; open %s\n", time.Since(start).Round(time.Second), filepath.Join(dir, runfolder.Index))
	}
	if err != nil && ctx.Err() != nil {
		// Interrupted, as a run's Ctrl-C: 255, not a refused input.
		fmt.Fprintf(os.Stderr, "lockjepsen: sweep: %v\n", err)
		return exitCrashed
	}
	if err != nil {
		return fail("sweep: %v", err)
	}
	if rep.Failed > 0 || rep.Pending > 0 {
		fmt.Fprintf(os.Stderr, "lockjepsen: sweep: %d trial(s) gave no verdict, %d not run; see their trial.json and run.log\n", rep.Failed, rep.Pending)
		return exitCrashed
	}
	return exitValid
}

// reaggregate is --resume DIR --aggregate. A folder with no trial folders is
// refused before anything is written: its sweep.json, sweep.csv, plots and
// index.html (if any) are what a mistyped folder or moved trials would lose.
func reaggregate(dir string) int {
	rep, err := sweep.Aggregate(dir)
	if err != nil {
		return fail("sweep: %v", err)
	}
	if rep.TrialFolders() == 0 {
		return fail("sweep: %s holds no trial folders (%s/<cell>/<n>/%s): nothing to aggregate, and nothing in it was changed; "+
			"run its trials with 'lockjepsen sweep --resume %s' (without --aggregate), or give the sweep folder that holds them",
			dir, filepath.Join(dir, sweep.Trials), sweep.TrialRecord, dir)
	}
	if err := sweep.Publish(dir, rep); err != nil {
		return fail("sweep: %v", err)
	}
	printFindings(rep)
	fmt.Printf("\nre-aggregated %d trial(s); open %s\n", rep.Trials, filepath.Join(dir, runfolder.Index))
	return exitValid
}

// sweepPlan builds a plan from the sweep file (if any) and the flags; a flag
// the user typed wins over the file.
func sweepPlan(set map[string]bool, file, scen, configs string, custom []string, faults string, trials, minFail, maxTrials int,
	limit time.Duration, seed int64, parallel int) (sweep.Plan, int, bool) {
	var plan sweep.Plan
	if file != "" {
		p, err := sweep.ReadPlanFile(file)
		if err != nil {
			return plan, fail("sweep: --file: %v", err), false
		}
		plan = p
	}
	if file == "" || set["scenario"] {
		// An empty one was taken as failover-race (the plan's default).
		if scen == "" {
			return plan, fail("--scenario is empty: name one (lockjepsen run -h lists them)"), false
		}
		plan.Scenario = scen
	}
	if _, err := scenario.Get(plan.Scenario); plan.Scenario != "" && err != nil {
		return plan, fail("--scenario: %v", err), false
	}
	if file == "" || set["configs"] {
		plan.Configs = nil
		for _, n := range strings.Split(configs, ",") {
			if n = strings.TrimSpace(n); n == "" {
				continue
			}
			c, err := sweep.LookupConfig(n)
			if err != nil {
				return plan, fail("--configs: %v", err), false
			}
			plan.Configs = append(plan.Configs, c)
		}
		// Said here, naming the flag: the plan's check says "the matrix
		// is empty" (a --config may still add one).
		if len(plan.Configs) == 0 && len(custom) == 0 {
			return plan, fail("--configs %q names no configuration (see lockjepsen sweep -h)", configs), false
		}
	}
	for _, s := range custom {
		c, err := sweep.ParseConfig(s)
		if err != nil {
			return plan, fail("%v", err), false
		}
		plan.Configs = append(plan.Configs, c)
	}
	if file == "" || set["faults"] {
		plan.Faults = nil
		for _, n := range strings.Split(faults, ",") {
			if n = strings.TrimSpace(n); n == "" {
				continue
			}
			f, err := sweep.LookupFault(n)
			if err != nil {
				return plan, fail("--faults: %v", err), false
			}
			plan.Faults = append(plan.Faults, f)
		}
		if len(plan.Faults) == 0 {
			return plan, fail("--faults %q names no fault kind (see lockjepsen sweep -h)", faults), false
		}
	}
	if file == "" || set["trials"] {
		plan.Trials = trials
	}
	if file == "" || set["seed"] {
		plan.Seed = seed
	}
	if file == "" || set["parallel"] {
		plan.Parallel = parallel
	}
	if set["min-failovers"] {
		plan.MinFailovers = minFail
	}
	if set["max-trials"] {
		plan.MaxTrials = maxTrials
	}
	if set["time-limit"] {
		plan.TimeLimit = sweep.Duration(limit)
	}
	plan.Defaults()
	if err := plan.Validate(); err != nil {
		return plan, fail("sweep: %v", err), false
	}
	return plan, 0, true
}

// noteDefaultInterval says on stderr which fault entries run at
// scenario.DefaultFaultInterval because the scenario has no faults (and so
// no gap) of its own, as run --faults does.
func noteDefaultInterval(p sweep.Plan) {
	sc, err := scenario.Get(p.Scenario)
	if err != nil || sc.Interval != 0 || p.BackToBack {
		return
	}
	var names []string
	for _, f := range p.Faults {
		if f.Interval == 0 {
			names = append(names, f.Name)
		}
	}
	if len(names) > 0 {
		fmt.Fprintf(os.Stderr, "lockjepsen: scenario %s has no faults of its own: %s run every %v on average (a fault entry's interval sets the gap)\n",
			p.Scenario, strings.Join(names, ", "), scenario.DefaultFaultInterval)
	}
}

func printPlan(p sweep.Plan) {
	cells := p.Cells()
	est := sweep.Estimate(p)
	fmt.Printf("sweep: scenario %s, %d configuration(s) × %d fault(s) = %d cell(s), %d trial(s) each", p.Scenario, len(p.Configs), len(p.Faults), len(cells), p.Trials)
	if p.MinFailovers > 0 {
		fmt.Printf(", more until %d failovers", p.MinFailovers)
	}
	if p.UntilCI > 0 {
		z, h := p.OpportunitiesFor()
		fmt.Printf(", more until the 95%% interval is narrower than %.2f (or, with no hit, below %.2f: %d opportunities; %d at P = 1/2)", p.UntilCI, p.ZeroHitBound(), z, h)
	}
	if p.Adaptive() {
		fmt.Printf(" (at most %d)", p.MaxTrials)
	}
	fmt.Printf(", %d at a time\n", p.Parallel)
	pace := "on a schedule (span + interval)"
	if p.BackToBack {
		pace = "back to back (each fault once the previous one healed)"
	}
	fmt.Printf("faults fire %s; workload %v a trial\n", pace, est.TimeLimit)
	if p.Shard != nil {
		fmt.Printf("shard %d of %d: the trials whose index is %d mod %d\n", p.Shard.Index, p.Shard.Count, p.Shard.Index, p.Shard.Count)
	}
	for _, c := range p.Configs {
		fmt.Printf("  config %-24s %s\n", c.Name, c.Note)
	}
	for _, f := range est.Faults {
		fmt.Printf("  fault  %-24s %-16s ~%4.1f %ss a trial, %4.1f a minute; ~%d trial(s) a cell\n", f.Name, strings.Join(f.Faults, ","),
			f.PerTrial, f.Unit, f.PerMinute, f.TrialsPerCell)
		if runs := cellFaults(cells, f.Name); runs != "" {
			fmt.Printf("         %-24s runs %s\n", "", runs)
		}
	}
	for _, na := range p.NotApplicable() {
		fmt.Printf("  n/a    %s × %s: %s\n", na.Config, na.Fault, na.Reason)
	}
	if p.Parallel > 1 {
		fmt.Printf("%d trials at a time multiply these rates by up to %d; figures %s\n", p.Parallel, p.Parallel, sweep.ParallelCaveat(p.Parallel))
	}
	fmt.Printf("estimated wall time: %v for %d trial(s) (%v a trial on 2 cores)\n", est.Total.Round(time.Minute), est.Trials, est.PerTrial.Round(time.Second))
}

func targetNames() []string {
	var out []string
	for _, t := range nemesis.Targets {
		out = append(out, t.Name)
	}
	return out
}

// cellFaults says which nemesis faults a fault of the plan runs on each
// configuration, when that differs between them (a kind or a fault over a
// target mapped per deployment); "" when every cell runs the same.
func cellFaults(cells []sweep.Cell, fault string) string {
	var parts []string
	same := true
	var first string
	for _, c := range cells {
		if c.Fault.Name != fault {
			continue
		}
		runs := strings.Join(c.Fault.Faults, "+")
		if first == "" {
			first = runs
		}
		same = same && runs == first
		parts = append(parts, c.Config.Name+" "+runs)
	}
	if same {
		return ""
	}
	return strings.Join(parts, ", ")
}

func printFindings(rep *sweep.Report) {
	for _, f := range sweep.Findings(rep) {
		fmt.Printf("\n%s:\n", f.Fault)
		for _, l := range f.Lines {
			fmt.Printf("  %s\n", l)
		}
	}
	for _, na := range rep.NotApplicable {
		fmt.Printf("\n%s × %s: n/a (not run): %s\n", na.Config, na.Fault, na.Reason)
	}
	if rep.Plan.HasDeployments() {
		fmt.Printf("\ndecision table (%s):\n\n%s", sweep.TableFile, sweep.DecisionTable(rep))
	}
	if rep.SpanS > 0 {
		fmt.Printf("\nopportunities a minute: %.1f (%d trial(s) in %s, %.1f at once on average)\n",
			rep.PerMinute, rep.Trials+rep.Failed, time.Duration(rep.SpanS*float64(time.Second)).Round(time.Second), rep.TrialS/rep.SpanS)
		for _, k := range rep.Rates {
			fmt.Printf("  %-24s %5d %s(s) in %3d trial(s): %5.1f a trial-minute, %5.1f a minute at this concurrency\n",
				k.Fault, k.Opportunities, k.Unit, k.Trials, k.PerTrialMinute, k.PerMinute)
		}
	}
}

// claim takes the sweep folder for this sweep (sweep.Claim); on a
// filesystem that takes no locks it warns and lets the sweep run.
func claim(dir string) (func(), error) {
	release, err := sweep.Claim(dir)
	if errors.Is(err, sweep.ErrUnclaimed) {
		fmt.Fprintf(os.Stderr, "lockjepsen: sweep: warning: %v\n", err)
		return release, nil
	}
	return release, err
}

// startOrContinue creates the sweep folder, or with --continue accepts one
// that already holds the same plan (a pod restarted by its Job resumes its
// shard; the remaining trials run and the finished ones are kept).
func startOrContinue(dir string, plan sweep.Plan, cont bool) error {
	if cont {
		if old, err := sweep.ReadPlan(dir); err == nil {
			a, _ := json.Marshal(old)
			b, _ := json.Marshal(plan)
			if string(a) != string(b) {
				return fmt.Errorf("--continue: %s holds a different plan; resume it with --resume, or choose another --out", dir)
			}
			fmt.Printf("continuing the sweep in %s\n", dir)
			return nil
		}
	}
	return sweep.Start(dir, plan)
}
