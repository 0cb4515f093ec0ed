package workshop

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/shrink"
)

// RunFunc carries out `lockjepsen run ARGS --out DIR`, printing its progress to
// progress, and returns the run's summary and exit code. The CLI passes its
// own run command, so a lab runs exactly what the page tells attendees to type.
type RunFunc func(ctx context.Context, args []string, out string, progress io.Writer) (summary string, code int, err error)

// Options configure a lab session.
type Options struct {
	Dir        string    // lab folders go to Dir/<step name>; default DefaultDir
	ClusterDir string    // a `cluster up` topology lab 1 uses when it answers
	Run        RunFunc   // how run steps are carried out
	Out        io.Writer // what attendees read
	// Interactive waits for Enter after the prediction question (a terminal,
	// outside CI).
	Interactive bool
	In          io.Reader
}

// StepReport is what one step produced and whether its claims held.
type StepReport struct {
	Step     Step
	Dir      string
	Summary  string // the run's summary, or the transcript as printed
	Code     int    // the run's exit code (runs: 0 valid, 1 invalid)
	Claims   []ClaimResult
	Duration time.Duration
	Err      error
}

// ClaimResult is one claim's verdict.
type ClaimResult struct {
	Text, Observed string
	OK             bool
}

// Held reports whether every claim of the step held.
func (r StepReport) Held() bool {
	if r.Err != nil {
		return false
	}
	for _, c := range r.Claims {
		if !c.OK {
			return false
		}
	}
	return true
}

// Play runs lab l as `lockjepsen lab N` does: the question, a pause for the
// room's predictions, each step with its summary and claims, and what to open.
func Play(ctx context.Context, l Lab, opt Options) []StepReport {
	if opt.Dir == "" {
		opt.Dir = DefaultDir
	}
	w := opt.Out
	fmt.Fprintf(w, "Lab %d: %s\n\nPredict first: %s\n", l.N, l.Title, l.Question)
	if opt.Interactive {
		fmt.Fprint(w, "\nWrite your answer down, then press Enter to run it... ")
		_, _ = bufio.NewReader(opt.In).ReadString('\n')
	}
	var reports []StepReport
	for _, s := range l.Steps {
		fmt.Fprintf(w, "\n$ %s\n", s.Command())
		r := runStep(ctx, s, s.Args, opt)
		if step, stepped := hostClockStepped(ctx, s, r); stepped {
			// Valkey expires keys by the wall clock: a run whose host
			// clock stepped (a paused virtual machine) shows the host,
			// not the lesson. Seen in CI: a 9.1 s step in lab 2, a 95 ms
			// one in lab 5, both claims missed.
			fmt.Fprintf(w, "\nthis machine's wall clock moved %v during the run (a stepped clock or a paused machine), and Valkey expires keys by it: "+
				"the run shows the machine, not the lesson; once more:\n$ %s\n", step.Round(time.Millisecond), s.Command())
			r = runStep(ctx, s, s.Args, opt)
		}
		for try := 1; try <= s.Retries && r.Err == nil && !r.Held() && ctx.Err() == nil; try++ {
			// The race this lesson needs did not happen in this run (see
			// Step.Retries); the next seed draws another schedule.
			args := append(append([]string{}, s.Args...), "--seed", fmt.Sprint(1+try))
			fmt.Fprintf(w, "\nthe claims missed this time (the race did not happen); once more with the next seed:\n$ lockjepsen run %s\n", strings.Join(args, " "))
			r = runStep(ctx, s, args, opt)
		}
		reports = append(reports, r)
		if r.Summary != "" && s.Kind == KindRun {
			fmt.Fprintf(w, "\n%s", r.Summary)
		}
		if r.Err != nil {
			fmt.Fprintf(w, "\nlab %d: %s could not be carried out: %v\n", l.N, s.Name, r.Err)
			continue
		}
		fmt.Fprintln(w, "\nwhat the page claims:")
		for _, c := range r.Claims {
			mark := "yes"
			if !c.OK {
				mark = "NO "
			}
			fmt.Fprintf(w, "  [%s] %s  (%s)\n", mark, c.Text, c.Observed)
		}
		if len(s.Open) > 0 {
			var paths []string
			for _, o := range s.Open {
				paths = append(paths, filepath.Join(r.Dir, o))
			}
			fmt.Fprintf(w, "open: %s\n", strings.Join(paths, "  "))
		}
		fmt.Fprintf(w, "(%s took %v)\n", s.Name, r.Duration.Round(100*time.Millisecond))
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Fprintf(w, "\nread next: docs/workshop/lab%d.md (the explanation and a variation to try)\n", l.N)
	return reports
}

// runStep carries out one step in its folder and checks its claims.
func runStep(ctx context.Context, s Step, args []string, opt Options) StepReport {
	start := time.Now()
	dir := filepath.Join(opt.Dir, s.Name)
	r := StepReport{Step: s, Dir: dir}
	defer func() { r.Duration = time.Since(start) }()
	if err := fresh(dir); err != nil {
		r.Err = err
		r.Duration = time.Since(start)
		return r
	}
	switch s.Kind {
	case KindRun:
		if opt.Run == nil {
			r.Err = fmt.Errorf("no run function")
			break
		}
		r.Summary, r.Code, r.Err = opt.Run(ctx, args, dir, opt.Out)
		if r.Err == nil && r.Code > 1 {
			r.Err = fmt.Errorf("the run exited %d: see %s", r.Code, dir)
		}
	case KindScript:
		var b strings.Builder
		r.Err = runScript(ctx, s.Script, dir, opt, io.MultiWriter(opt.Out, &b))
		r.Summary = b.String()
	case KindShrink:
		r.Summary, r.Code, r.Err = shrinkStep(filepath.Join(opt.Dir, s.From), dir)
		fmt.Fprint(opt.Out, r.Summary)
	case KindReport:
		ev, err := Load(s, dir)
		if err != nil {
			r.Err = err
			break
		}
		r.Summary = Closing(ev)
		fmt.Fprint(opt.Out, r.Summary)
	}
	if r.Err == nil {
		ev, err := Load(s, dir)
		if err != nil {
			r.Err = err
		} else {
			for _, c := range s.Claims {
				obs, ok := c.Check(ev)
				r.Claims = append(r.Claims, ClaimResult{Text: c.Text, Observed: obs, OK: ok})
			}
		}
	}
	r.Duration = time.Since(start)
	return r
}

// fresh empties a step folder from an earlier session. Only folders that a
// lab made are removed (they hold config.json, transcript.json or are
// empty), so a mistyped --dir cannot delete anything else.
func fresh(dir string) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return fmt.Errorf("lab folder: %w", err)
	}
	ours := len(entries) == 0
	for _, e := range entries {
		if e.Name() == runfolder.Config || e.Name() == TranscriptFile || e.Name() == runfolder.Cluster {
			ours = true
		}
	}
	if !ours {
		return fmt.Errorf("%s holds something other than a lab's output: choose another --dir", dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear the previous session's %s: %w", dir, err)
	}
	return os.MkdirAll(dir, 0o755)
}

// shrinkStep is `lockjepsen shrink FROM --out DIR` on the session's own
// run, then the check that draws the shrunk run's timeline and index.html
// (the shrink writes the run folder only). Its code is the check's.
func shrinkStep(from, dir string) (string, int, error) {
	run, err := shrink.Load(from)
	if err != nil {
		return "", 0, fmt.Errorf("shrink: %w (its run step must run first in the same session)", err)
	}
	opts, err := run.CheckOptions()
	if err != nil {
		return "", 0, fmt.Errorf("shrink %s: %w", from, err)
	}
	opts.Marks = nemesis.Catalog()
	res, err := shrink.Shrink(run, shrink.Options{Check: opts})
	if err != nil {
		return "", 0, fmt.Errorf("shrink %s: %w", from, err)
	}
	if err := res.WriteDir(from, dir); err != nil {
		return "", 0, fmt.Errorf("shrink %s: %w", from, err)
	}
	_, code, err := runner.CheckDir(dir)
	if err != nil {
		return "", code, fmt.Errorf("check the shrunk run: %w", err)
	}
	return res.Text(from, dir), code, nil
}

// hostClockStepped: a run step that ran, and whose host wall clock stepped
// during it (runner.HostClockStepped); the folder is read only then.
func hostClockStepped(ctx context.Context, s Step, r StepReport) (time.Duration, bool) {
	if s.Kind != KindRun || r.Err != nil || ctx.Err() != nil {
		return 0, false
	}
	return runner.HostClockStepped(r.Dir)
}
