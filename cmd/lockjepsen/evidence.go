package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/sweep"
)

// runSweepEvidence gives each red cell of a sweep folder its evidence: a
// committed row keeps its aggregates, not its trials (tens of MB each), so
// a red cell linked nothing a reader could open. The cell is run again on
// its own until a trial shows the violation, and that trial, shrunk (a few
// KB), is kept in evidence/<cell>/ with its timeline and porcupine picture.
func runSweepEvidence(args []string) int {
	fs := newFlagSet("sweep evidence", "sweep evidence [--attempts N] DIR   for each red cell of the sweep in DIR (double grants or stale\n"+
		"       writes) that has no evidence yet: run the cell again on its own, one trial at a time, until a trial shows\n"+
		"       it (invalid, or valid with a stale write let in), shrink that trial (lockjepsen shrink) into DIR/evidence/<cell>/ and check it there; the\n"+
		"       grid of DIR's index.html then links it (make docs redraws a committed row's page)\n")
	attempts := 3
	fs.Var(knob.Int{N: &attempts, Min: 1, Max: 50}, "attempts", "trials to run per cell before giving up on it (a cell at 3% needs many)")
	cells := fs.String("cells", "", "only these cells (comma-separated ids, config.fault; default: every red cell)")
	dirs, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(dirs) != 1 {
		return fail("sweep evidence: want one sweep folder, e.g. lockjepsen sweep evidence results/comparison-rows/postgres (got %d)", len(dirs))
	}
	dir := dirs[0]
	r, err := sweep.ReadReport(dir)
	if err != nil {
		return fail("sweep evidence: %s: %v (give a folder a sweep wrote)", dir, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fail("sweep evidence: %v", err)
	}
	want := map[string]bool{}
	for _, c := range strings.Split(*cells, ",") {
		if c = strings.TrimSpace(c); c != "" {
			want[c] = true
		}
	}
	var red []sweep.GridCell
	known := map[string]bool{}
	for _, row := range sweep.Grid(r, nil, nil) {
		for _, c := range row.Cells {
			known[c.Cell] = true
			if c.Class == "hit" && (len(want) == 0 || want[c.Cell]) {
				red = append(red, c)
			}
		}
	}
	for c := range want {
		if !known[c] {
			return fail("sweep evidence: --cells %s: %s has no cell %q (its cells are config.fault, as in its grid's ids)", *cells, dir, c)
		}
	}
	missing := 0
	for _, c := range red {
		ev := sweep.EvidenceDir(dir, c.Cell)
		if _, err := os.Stat(filepath.Join(ev, runfolder.Index)); err == nil {
			fmt.Printf("%s: evidence already in %s\n", c.Cell, ev)
			continue
		}
		args := rerunArgsOf(r, c.Cell)
		if args == nil {
			fmt.Printf("%s: a fault point with parameters, no rerun command: skipped\n", c.Cell)
			missing++
			continue
		}
		found, err := evidenceFor(exe, args, c.Cell, ev, attempts)
		if err != nil {
			return failCrashed("sweep evidence: %s: %v", c.Cell, err)
		}
		if !found {
			fmt.Printf("%s: no trial showed it in %d attempt(s) (%s); --attempts raises it\n", c.Cell, attempts, c.Lock)
			missing++
		}
	}
	b, err := sweep.RenderIndex(dir, r)
	if err != nil {
		return failCrashed("sweep evidence: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, runfolder.Index), b, 0o644); err != nil {
		return failCrashed("sweep evidence: %v", err)
	}
	fmt.Printf("%d red cell(s), %d without evidence; open %s\n", len(red), missing, filepath.Join(dir, runfolder.Index))
	return exitValid
}

// rerunArgsOf is the sweep that runs cell again, one trial.
func rerunArgsOf(r *sweep.Report, cell string) []string {
	c, ok := r.Plan.Cell(cell)
	if !ok {
		return nil
	}
	return sweep.RerunArgs(r.Plan, c.Config, c.Fault, 1)
}

// evidenceFor runs the cell's one-trial sweep up to attempts times; the
// first invalid trial is shrunk into ev and checked there.
func evidenceFor(exe string, args []string, cell, ev string, attempts int) (bool, error) {
	for i := 1; i <= attempts; i++ {
		fmt.Printf("%s: attempt %d of %d: lockjepsen %s --seed %d\n", cell, i, attempts, sweep.ShellJoin(args), i)
		found, err := evidenceAttempt(exe, args, cell, ev, i)
		if err != nil {
			return false, err
		}
		if found {
			fmt.Printf("%s: trial %d showed it; shrunk into %s\n", cell, i, ev)
			return true, nil
		}
	}
	return false, nil
}

// evidenceAttempt runs the cell's one-trial sweep with seed in a folder of
// its own, removed after: an invalid trial is shrunk into ev first.
func evidenceAttempt(exe string, args []string, cell, ev string, seed int) (bool, error) {
	tmp, err := os.MkdirTemp("", "lockjepsen-evidence-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "sweep")
	cmd := exec.Command(exe, append(append([]string{}, args...), "--seed", fmt.Sprint(seed), "--out", out)...)
	cmd.Stderr = os.Stderr
	// The cell's sweep ends with this command, even one SIGKILLed: SIGTERM
	// lets it stop its trial as a Ctrl-C would, its clients and nodes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Run(); err != nil {
		return false, fmt.Errorf("the cell's sweep: %w", err)
	}
	trials, _ := filepath.Glob(filepath.Join(out, sweep.Trials, cell, "*")) // one trial: its number is the sweep's
	if len(trials) != 1 {
		return false, nil
	}
	kind, ok := evidenceIn(trials[0])
	if !ok {
		return false, nil
	}
	return true, shrinkInto(exe, trials[0], ev, kind)
}

// evidenceIn says whether the run folder shows what makes a cell red, and
// the violation kind its shrink keeps (sweep.EvidenceKind).
func evidenceIn(run string) (string, bool) {
	var res checker.Result
	if runfolder.ReadJSON(filepath.Join(run, runfolder.Results), &res) != nil {
		return "", false
	}
	return sweep.EvidenceKind(&res)
}

// shrinkInto shrinks the trial into ev, keeping a violation of kind ("":
// the first that falsifies a verdict; lockjepsen shrink exits 1 when it
// wrote a shrunk run), and checks it there, for its index.html: invalid,
// or for a kind that changes no verdict, valid and showing it.
func shrinkInto(exe, trial, ev, kind string) (err error) {
	if err := os.MkdirAll(filepath.Dir(ev), 0o755); err != nil {
		return err
	}
	// A half-written folder would read as evidence next time.
	defer func() {
		if err != nil {
			_ = os.RemoveAll(ev)
		}
	}()
	args := []string{"shrink", "--out", ev}
	want := exitInvalid
	if kind != "" {
		args = append(args, "--kind", kind)
		want = exitValid
	}
	sh := exec.Command(exe, append(args, trial)...)
	if out, err := sh.CombinedOutput(); sh.ProcessState == nil || sh.ProcessState.ExitCode() != exitInvalid {
		return fmt.Errorf("shrink %s: %v\n%s", trial, err, out)
	}
	ck := exec.Command(exe, "check", ev)
	if out, err := ck.CombinedOutput(); ck.ProcessState == nil || ck.ProcessState.ExitCode() != want {
		return fmt.Errorf("check %s: %v\n%s", ev, err, out)
	}
	return dropSVG(ev)
}

// The timeline's SVG embeds its font: 530 KB for a history of four
// operations, against 40 KB for the PNG. Evidence is committed a cell at a
// time, so it keeps the PNG (check draws the SVG again from the history).
var (
	svgObject = regexp.MustCompile(`<object[^>]*data="timeline\.svg">(<img[^>]*>)</object>`)
	svgLink   = regexp.MustCompile(` ?\(?<a href="timeline\.svg">[^<]*</a>\)?`)
	svgItem   = regexp.MustCompile(`<li><a href="timeline\.svg">[^<]*</a></li>`)
)

func dropSVG(ev string) error {
	index := filepath.Join(ev, runfolder.Index)
	b, err := os.ReadFile(index)
	if err != nil {
		return err
	}
	b = svgObject.ReplaceAll(b, []byte("$1"))
	b = svgItem.ReplaceAll(b, nil)
	b = svgLink.ReplaceAll(b, nil)
	b = bytes.ReplaceAll(b, []byte("Point at a bar, a cross or a band for who, token, fence and times."),
		[]byte("The picture alone, without its hover: <code>lockjepsen check</code> on this folder draws the SVG again."))
	if err := os.WriteFile(index, b, 0o644); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(ev, "timeline.svg")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// failCrashed prints an error in the house style and returns exit code 255:
// the work could not be carried out to the end (what was written stays).
func failCrashed(format string, a ...any) int {
	fail(format, a...)
	return exitCrashed
}
