package main

// The sweep's commands over finished sweep folders: merge the shards of one
// sweep, publish a re-swept row into results/, join rows into one report.

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/sweep"
)

// runSweepMerge is `lockjepsen sweep merge [--out DIR] SHARD-DIR...`.
func runSweepMerge(args []string) int {
	fs := newFlagSet("sweep merge", "sweep merge [--out DIR] SHARD-DIR...   one sweep (plan.json, sweep.json, csv, plots, index.html) from the\n"+
		"       folders of 'lockjepsen sweep --shard I/N'; refuses folders of different plans, shards that overlap, and a trial twice\n")
	out := fs.String("out", "", "the merged sweep folder (default results/<timestamp>-sweep)")
	hostParallel := fs.Int("host-parallel", 0, "the shards ran side by side on one machine, N trials at once in all (e.g. 3 containers at\n"+
		"--parallel 1: 3); every cell then counts N for its caveat. 0: each shard had its own machine")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *hostParallel < 0 {
		return fail("sweep merge: --host-parallel %d is negative: give the trials that ran at once on the machine (e.g. --host-parallel 3), or 0", *hostParallel)
	}
	if fs.NArg() == 0 {
		return fail("sweep merge: give the shard folders (lockjepsen sweep merge [--out DIR] SHARD-DIR...)")
	}
	dir := *out
	if dir == "" {
		dir = runfolder.NewDir(runfolder.Root, time.Now(), "sweep")
	}
	if err := runfolder.CanCreate(dir); err != nil {
		return fail("sweep merge: --out %s cannot be created: %v", dir, err)
	}
	rep, err := sweep.MergeOn(dir, fs.Args(), *hostParallel)
	if rep != nil {
		printFindings(rep)
	}
	if err != nil {
		return fail("sweep %v", err)
	}
	fmt.Printf("\nmerged %d shard folder(s), %d trial(s) into %s; open %s\n", fs.NArg(), rep.Trials+rep.Failed, dir, filepath.Join(dir, runfolder.Index))
	if rep.Pending > 0 {
		fmt.Fprintf(os.Stderr, "lockjepsen: sweep merge: %d planned trial(s) are in none of the shards (a shard missing or unfinished)\n", rep.Pending)
		return exitCrashed
	}
	return exitValid
}

// runSweepPublish is `lockjepsen sweep publish --to ROW-DIR SWEEP-DIR`: a
// re-swept row of results lands in its folder in one step, its README and
// cited trials kept.
func runSweepPublish(args []string) int {
	fs := newFlagSet("sweep publish", "sweep publish --to ROW-DIR SWEEP-DIR   the report of the sweep in SWEEP-DIR (plan.json, sweep.json, csv,\n"+
		"       table, plots, index.html and each red cell's evidence) into ROW-DIR, a folder kept without its trials (results/rows/NAME);\n"+
		"       ROW-DIR's other files (its README.md, a trial it cites) stay\n")
	to := fs.String("to", "", "the folder to publish into, e.g. results/rows/resync-window")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *to == "" || fs.NArg() != 1 {
		return fail("sweep publish: want --to ROW-DIR and one sweep folder, e.g. lockjepsen sweep publish --to results/rows/resync-window results/2026-12-07-sweep (got --to %q and %d folder(s))", *to, fs.NArg())
	}
	src := fs.Arg(0)
	if _, err := sweep.ReadReport(src); err != nil {
		return fail("sweep publish: %v", err)
	}
	if sweep.SameFolder(src, *to) {
		return fail("sweep publish: --to %s is the sweep's own folder: give the row's folder, e.g. results/rows/NAME", *to)
	}
	rep, err := sweep.PublishTo(src, *to)
	if err != nil {
		return failCrashed("sweep publish: %v", err)
	}
	fmt.Printf("published %s (%d cell(s), %d trial(s)) into %s; its README.md there is yours to update\n", src, len(rep.Cells), rep.Trials, *to)
	return exitValid
}

// runSweepJoin is `lockjepsen sweep join --out DIR SWEEP-DIR...`.
func runSweepJoin(args []string) int {
	fs := newFlagSet("sweep join", "sweep join --out DIR SWEEP-DIR...   one report (sweep.json, csv, plots, index.html) from the reports of\n"+
		"       sweeps that measured disjoint cells of one matrix under one rule (a row of fault kinds at a time, on other\n"+
		"       days or machines); refuses different rules, a cell twice (unless --replace), and a cell in none of them\n")
	out := fs.String("out", "", "the folder of the joined report (required: e.g. results/reference)")
	replace := fs.Bool("replace", false, "a cell in more than one folder is taken from the last one given (a row re-run to a higher --max-trials\n"+
		"replaces the old row's cells); the report names each replaced cell")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *out == "" || fs.NArg() == 0 {
		return fail("sweep join: give --out and the sweep folders (lockjepsen sweep join --out DIR SWEEP-DIR...)")
	}
	if err := runfolder.CanCreate(*out); err != nil {
		return fail("sweep join: --out %s cannot be created: %v", *out, err)
	}
	join := sweep.Join
	if *replace {
		join = sweep.JoinReplacing
	}
	rep, err := join(*out, fs.Args())
	if err != nil {
		return fail("sweep %v", err)
	}
	printFindings(rep)
	for _, j := range rep.Joined {
		for _, c := range j.Replaced {
			fmt.Printf("\n%s replaces %s", j.Dir, c)
		}
	}
	fmt.Printf("\njoined %d sweep folder(s), %d cell(s), %d trial(s) into %s; open %s\n", fs.NArg(), len(rep.Cells), rep.Trials+rep.Failed, *out, filepath.Join(*out, runfolder.Index))
	if rep.Pending > 0 {
		fmt.Fprintf(os.Stderr, "lockjepsen: sweep join: %d planned trial(s) of the joined sweeps are unfinished: their cells may be short of the stopping rule\n", rep.Pending)
		return exitCrashed
	}
	return exitValid
}
