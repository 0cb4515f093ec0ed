package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/exitcode"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/shrink"
)

func init() {
	register(command{
		name:    "shrink",
		summary: "cut a failing run down to a 1-minimal history that shows its violation (exit 1: written, 0: nothing to shrink)",
		run:     runShrink,
	})
}

func runShrink(args []string) int {
	fs := newFlagSet("shrink", "shrink [flags] DIR\n\n"+
		"Finds a small sub-history of the run in DIR that `lockjepsen check` still judges invalid with the same\n"+
		"violation (its kind on its key, its cause, the operations it names), removing whole operations and\n"+
		"faults until no single one can go, and writes it as a run folder. Exit 1 when it wrote one (the shrunk\n"+
		"run is invalid, as check says), 0 when the history is valid (nothing to shrink), 2 when its verdict is\n"+
		"unknown, 254 on bad input. A --kind that changes no verdict (a stale write accepted, say) is shrunk in a\n"+
		"valid run too: the shrunk run is valid and shows it.\n\n"+
		"With --rerun it shrinks the fault schedule instead, on real runs: DIR's scenario (its config.json) is run\n"+
		"again with subsets of the faults DIR injected (each at the offset nemesis.jsonl shows it fired at, by\n"+
		"--faults-at) and then with shorter time limits, keeping the smallest schedule that still shows the\n"+
		"violation's kind on its key in --min of --seeds seeds (DIR's seed and the next ones). Every run goes to\n"+
		"a folder under --out (default DIR-rerun), with rerun.json and repro.sh, the command that reproduces it.\n"+
		"A candidate stops at its --min-th reproduction: a failing one costs --seeds runs. Exit 1 when it\n"+
		"found one, 255 when a run failed or Ctrl-C stopped it (what it found so far is printed and written).")
	kind := fs.String("kind", "", "violation kind to keep (default: the first violation that makes the run invalid); one of "+strings.Join(checker.ViolationKinds, ", "))
	key := fs.String("key", "", "lock key of the violation (default: the first violation's)")
	out := fs.String("out", "", "folder to write the shrunk run to (default: DIR-shrunk, with --rerun DIR-rerun); must not exist or be empty")
	rerun := fs.Bool("rerun", false, "shrink the fault schedule by running the scenario again (see above), not the history")
	seeds := 5
	fs.Var(knob.Int{N: &seeds, Min: 1, Max: 100}, "seeds", "--rerun: seeds each candidate schedule may run with: DIR's seed and the next ones")
	// Why one by default: the flag's help says it, for the user.
	minRepro := 1
	fs.Var(knob.Int{N: &minRepro, Min: 1, Max: 100}, "min", "--rerun: reproductions among --seeds a candidate needs; one is enough by default, as the checker reports only what a history shows, so one run that shows it proves the schedule can cause it; ask 3 for a reproducer that fails reliably, at more runs)")
	dirs, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(dirs) != 1 {
		return fail("shrink: want exactly one run directory, e.g. lockjepsen shrink results/latest (got %d)", len(dirs))
	}
	dir := dirs[0]
	if *kind != "" && !slices.Contains(checker.ViolationKinds, *kind) {
		return fail("shrink: --kind %q is no violation kind; use one of %s", *kind, strings.Join(checker.ViolationKinds, ", "))
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fail("shrink: %s is not a run directory: give the folder a run wrote (results/latest is the newest)", dir)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !*rerun && (set["seeds"] || set["min"]) {
		return fail("shrink: --seeds and --min are for --rerun (the history shrink runs nothing)")
	}
	if minRepro > seeds {
		return fail("shrink: --min %d of --seeds %d can never hold: want --min at most --seeds", minRepro, seeds)
	}
	if *out == "" {
		*out = filepath.Clean(dir) + "-shrunk"
		if *rerun {
			*out = filepath.Clean(dir) + "-rerun"
		}
	}
	if err := freshFolder(dir, *out); err != nil {
		return fail("shrink: %v", err)
	}
	if *rerun {
		return runShrinkRerun(dir, *out, *kind, *key, seeds, minRepro)
	}
	// Two passes over the history: the whole run checked streamed, then
	// the violation's key's events alone kept (shrink.LoadPart). The first
	// is check's own work, so it runs under check's memory limit.
	limitCheckMemory()
	cat := nemesis.Catalog()
	r, err := shrink.LoadPart(dir, shrink.Options{Kind: *kind, Key: *key, Check: checker.Options{Marks: cat}})
	if code, ok := nothingToShrink(err); ok {
		return code
	}
	if err != nil {
		return fail("shrink: %v", err)
	}
	opts, err := r.CheckOptions()
	if err != nil {
		return fail("shrink: %s: %v", dir, err)
	}
	opts.Marks = cat
	res, err := shrink.Shrink(r, shrink.Options{Kind: *kind, Key: *key, Check: opts})
	if code, ok := nothingToShrink(err); ok {
		return code
	}
	var nf *shrink.NotFoundError
	switch {
	case errors.As(err, &nf):
		return fail("shrink: %v", err)
	case err != nil:
		fmt.Fprintf(os.Stderr, "lockjepsen: shrink %s: %v\n", dir, err)
		return exitCrashed
	}
	if err := res.WriteDir(dir, *out); err != nil {
		fmt.Fprintf(os.Stderr, "lockjepsen: shrink: %v\n", err)
		return exitCrashed
	}
	fmt.Print(res.Text(dir, *out))
	return exitInvalid
}

// freshFolder refuses an --out that is the run itself or holds anything:
// a shrunk run beside an old verdict or another run's files would be read
// as one.
func freshFolder(dir, out string) error {
	a, errA := filepath.Abs(dir)
	b, errB := filepath.Abs(out)
	if errA == nil && errB == nil && a == b {
		return fmt.Errorf("--out %s is the run itself; give a new folder", out)
	}
	entries, err := os.ReadDir(out)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// Asked now, not when the shrunk run is written after the search.
		if err := runfolder.CanCreate(out); err != nil {
			return fmt.Errorf("--out %s cannot be created: %v", out, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("--out %s cannot be used: %v", out, err)
	case len(entries) > 0:
		return fmt.Errorf("--out %s already exists and is not empty; remove it or give a new folder", out)
	}
	return nil
}

// nothingToShrink is the answer to a run with no violation to shrink: a
// valid history (exit 0) or an unknown one (exit 2), said on stdout.
func nothingToShrink(err error) (int, bool) {
	switch {
	case errors.Is(err, shrink.ErrValid):
		fmt.Println(err)
		return exitValid, true
	case errors.Is(err, shrink.ErrUnknown):
		fmt.Println(err)
		return exitcode.Unknown, true
	}
	return 0, false
}
