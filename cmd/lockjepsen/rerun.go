package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/shrink"
)

// Files shrink --rerun writes beside its runs.
const (
	rerunRecord = "rerun.json"
	reproScript = "repro.sh"
)

// rerunRecordJSON is rerun.json: the violation, the search's seeds and
// every candidate with the seeds it ran, and the command that reproduces
// the result.
type rerunRecordJSON struct {
	From        string                 `json:"from"`
	Kind        string                 `json:"kind"`
	Key         string                 `json:"key"`
	Cause       string                 `json:"cause"`
	Seeds       []int64                `json:"seeds"`
	Min         int                    `json:"min"`
	Result      *shrink.ScheduleResult `json:"result"`
	Command     []string               `json:"command"`
	Interrupted bool                   `json:"interrupted,omitempty"`
	Error       string                 `json:"error,omitempty"`
	ElapsedS    float64                `json:"elapsed_s"`
}

// runShrinkRerun is `shrink --rerun DIR`: the run's scenario run again
// (in-process, as bench scenario runs it) with subsets of the faults it
// injected and shorter time limits, each run in a folder of its own under
// out.
func runShrinkRerun(dir, out, kind, key string, seeds, min int) int {
	j, code, ok := loadRerun(dir, out, kind, key, seeds, min)
	if !ok {
		return code
	}
	if _, err := j.config(j.before, j.base.Seed, ""); err != nil {
		return fail("shrink --rerun: the run's own faults cannot be scheduled again (%v): was %s made by an older lockjepsen?", err, dir)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fail("shrink --rerun: create %s: %v", out, err)
	}
	// The first Ctrl-C ends the run under way (the runner stops every
	// process it started) and the search with it; what was found is kept.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runner.Preflight(ctx, j.base); err != nil {
		return fail("shrink --rerun: %v", err)
	}
	fmt.Printf("shrink --rerun %s: %s on %s (cause: %s); each candidate runs seeds %d to %d until %d reproduce it\n",
		dir, j.v.Kind, j.v.Key, j.v.Cause, j.seeds[0], j.seeds[len(j.seeds)-1], min)
	fmt.Printf("before: %s (the run itself)\n", j.before)
	began := time.Now()
	result, err := shrink.ShrinkSchedule(ctx, j.before, shrink.RerunOptions{Seeds: j.seeds, Min: min, MinTimeLimit: j.floor, Try: j.trial})
	if result == nil {
		return fail("shrink --rerun: %v", err)
	}
	return j.finish(result, err, ctx.Err() != nil, time.Since(began))
}

// rerunJob is one shrink --rerun: the run it starts from, the violation it
// must bring back, and the seeds each candidate schedule runs.
type rerunJob struct {
	dir, out string
	base     runner.Config
	v        *checker.Violation
	before   shrink.Schedule
	seeds    []int64
	min      int
	tries    int
}

// loadRerun reads the run folder: its config, its verdicts (the violation
// to shrink) and the faults its nemesis injected. false: the exit code to
// return.
func loadRerun(dir, out, kind, key string, seeds, min int) (*rerunJob, int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, runfolder.Config))
	if err != nil {
		return nil, fail("shrink --rerun: %s has no readable %s (%v): --rerun runs the run's own config again", dir, runfolder.Config, err), false
	}
	j := &rerunJob{dir: dir, out: out, min: min}
	if err := json.Unmarshal(b, &j.base); err != nil {
		return nil, fail("shrink --rerun: %s/%s is corrupt: %v", dir, runfolder.Config, err), false
	}
	var res checker.Result
	if err := runfolder.ReadJSON(filepath.Join(dir, runfolder.Results), &res); err != nil {
		return nil, fail("shrink --rerun: %v: 'lockjepsen check %s' writes it", err, dir), false
	}
	j.v, err = shrink.Pick(&res, kind, key)
	if code, ok := nothingToShrink(err); ok {
		return nil, code, false
	}
	if err != nil {
		return nil, fail("shrink --rerun: %v", err), false
	}
	nem, err := history.ReadFile(filepath.Join(dir, runfolder.Nemesis))
	if err != nil {
		return nil, fail("shrink --rerun: %v", err), false
	}
	faults, err := injectedFaults(j.base, nem)
	if err != nil {
		return nil, fail("shrink --rerun: %s: %v", dir, err), false
	}
	if len(faults) == 0 {
		return nil, fail("shrink --rerun: %s injected no fault: there is no schedule to shrink (its %s is not a fault's doing)", dir, j.v.Kind), false
	}
	j.seeds = make([]int64, seeds)
	for i := range j.seeds {
		j.seeds[i] = j.base.Seed + int64(i)
	}
	j.before = shrink.Schedule{Faults: faults, TimeLimit: j.base.TimeLimit}
	return j, 0, true
}

// config is the run of candidate s with seed into folder. Every candidate
// is validated (for each seed: the durations a seed draws set the spans)
// before anything runs, as a run's flags are.
func (j *rerunJob) config(s shrink.Schedule, seed int64, folder string) (runner.Config, error) {
	c := j.base
	c.Out, c.Seed, c.TimeLimit = folder, seed, s.TimeLimit
	c.Schedule, c.WorkloadStart, c.Versions, c.Exe, c.Cluster.Dir = nil, 0, runner.Versions{}, "", ""
	c.FaultsAt = nil
	for _, f := range s.Faults {
		c.FaultsAt = append(c.FaultsAt, nemesis.Step{At: f.At, Fault: f.Name})
	}
	c.Command = reproCommand(j.base, s, seed)
	return c, c.Validate()
}

// floor is the shortest time limit that still schedules fs on every seed.
func (j *rerunJob) floor(fs []shrink.Fault) (time.Duration, error) {
	least := runner.MinTimeLimit
	for _, seed := range j.seeds {
		c, err := j.config(shrink.Schedule{Faults: fs, TimeLimit: max(j.base.TimeLimit, time.Hour)}, seed, "")
		if err != nil {
			return 0, err
		}
		least = max(least, nemesis.MinTimeLimit(c.PlanParamsForEstimate(), c.Schedule))
	}
	return least, nil
}

// trial runs candidate s with seed in a folder of its own and says whether
// it brought the violation back.
func (j *rerunJob) trial(ctx context.Context, s shrink.Schedule, seed int64) (bool, error) {
	j.tries++
	folder := filepath.Join(j.out, fmt.Sprintf("%02d-seed-%d", j.tries, seed))
	c, err := j.config(s, seed, folder)
	if err != nil {
		return false, fmt.Errorf("%s with seed %d: %w", s, seed, err)
	}
	began := time.Now()
	o := runner.Run(ctx, c, io.Discard)
	if ctx.Err() != nil {
		return false, fmt.Errorf("interrupted during %s (%s kept what was recorded)", s, folder)
	}
	if !o.Checked {
		return false, fmt.Errorf("run %s could not be carried out: %v", folder, o.Err)
	}
	var r checker.Result
	if err := runfolder.ReadJSON(filepath.Join(folder, runfolder.Results), &r); err != nil {
		return false, err
	}
	ok := shows(&r, j.v.Kind, j.v.Key)
	verdict := "not reproduced"
	if ok {
		verdict = "reproduced"
	}
	fmt.Printf("  %2d. %s, seed %d: %s (%.0f s) -> %s\n", j.tries, s, seed, verdict, time.Since(began).Seconds(), folder)
	return ok, nil
}

// finish writes rerun.json and repro.sh beside the runs and prints the
// result; the exit code is invalid (the violation stands), or crashed when
// the search or the writing failed.
func (j *rerunJob) finish(result *shrink.ScheduleResult, err error, interrupted bool, took time.Duration) int {
	seed := j.base.Seed
	if last := result.Last(); last != nil {
		seed = last.Reproduced[0]
	}
	cmd := reproCommand(j.base, result.After, seed)
	rec := rerunRecordJSON{From: j.dir, Kind: j.v.Kind, Key: j.v.Key, Cause: j.v.Cause, Seeds: j.seeds, Min: j.min, Result: result,
		Command: cmd, Interrupted: interrupted, ElapsedS: took.Seconds()}
	if err != nil {
		rec.Error = err.Error()
	}
	werr := runfolder.WriteJSON(filepath.Join(j.out, rerunRecord), rec)
	if werr == nil {
		script := fmt.Sprintf("#!/bin/sh\n# %s on %s, shrunk by 'lockjepsen shrink --rerun %s' from %s\n%s\n", j.v.Kind, j.v.Key, j.dir, j.before, runner.ShellJoin(cmd))
		werr = runfolder.WriteFileAtomic(filepath.Join(j.out, reproScript), []byte(script), 0o755)
	}
	fmt.Print(rerunText(result, j.min, cmd, j.out, err != nil))
	switch {
	case werr != nil:
		fmt.Fprintf(os.Stderr, "lockjepsen: shrink --rerun: %v\n", werr)
		return exitCrashed
	case err != nil:
		fmt.Fprintf(os.Stderr, "lockjepsen: shrink --rerun: %v\n", err)
		return exitCrashed
	}
	return exitInvalid
}

// shows says whether a rerun's verdicts hold a violation of kind on key:
// the same kind on the same key is what a rerun must bring back (its
// operations are new ones; its cause is the kept faults').
func shows(r *checker.Result, kind, key string) bool {
	for _, v := range r.Violations {
		if v.Kind == kind && v.Key == key {
			return true
		}
	}
	return false
}

func rerunText(r *shrink.ScheduleResult, min int, cmd []string, out string, partial bool) string {
	var b strings.Builder
	label := "after: "
	if partial {
		label = "so far:"
	}
	fmt.Fprintf(&b, "%s %s", label, r.After)
	if last := r.Last(); last != nil {
		fmt.Fprintf(&b, ": reproduced by %d of the %d seeds run (%s)\n", len(last.Reproduced), len(last.Seeds), joinSeeds(last.Reproduced))
	} else {
		fmt.Fprintf(&b, ": no smaller schedule reproduced it in %d of the seeds; the run's own is the smallest found\n", min)
	}
	fmt.Fprintf(&b, "runs: %d, each in a folder under %s\n", r.Runs, out)
	fmt.Fprintf(&b, "reproduce it:\n  %s\n", runner.ShellJoin(cmd))
	fmt.Fprintf(&b, "written: %s, %s\n", filepath.Join(out, reproScript), filepath.Join(out, rerunRecord))
	return b.String()
}

func joinSeeds(s []int64) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = fmt.Sprintf("seed %d", x)
	}
	return strings.Join(parts, ", ")
}

// injectedFaults are the faults a run actually injected, with the offset
// each fired at: the schedule's steps in order, each found by its fault's
// first mark (the event it logs at injection) in nemesis.jsonl at or after
// the step's planned offset, and after the previous step's (the nemesis
// runs one step at a time, so a step not found, and every later one, never
// fired). The offset is that event's time since the workload's start,
// rounded down to the runner's StepTick: the step fired on that tick, and
// an offset on it fires on the same tick again. A config.json without the
// workload's start (runs made before it was recorded) takes the first
// step's planned offset as the time of its first mark, and rounds to the
// nearest tick.
func injectedFaults(cfg runner.Config, nem []history.Event) ([]shrink.Fault, error) {
	start := cfg.WorkloadStart
	// An estimated start is late by the first step's delay before its
	// mark, so offsets from it are early by as much: round them to the
	// nearest tick instead of down.
	round := time.Duration(0)
	if start == 0 {
		round = runner.StepTick / 2
	}
	var out []shrink.Fault
	j := 0
	for i, s := range cfg.Schedule {
		f, err := nemesis.Lookup(s.Fault)
		if err != nil {
			return nil, fmt.Errorf("its schedule names %w", err)
		}
		first := f.Marks[0].Event
		found := -1
		for k := j; k < len(nem); k++ {
			if nem[k].F == first && (start == 0 && i == 0 || nem[k].Time >= start+int64(s.At)) {
				found = k
				break
			}
		}
		if found < 0 {
			break
		}
		if start == 0 {
			start = nem[found].Time - int64(s.At)
		}
		at := (time.Duration(nem[found].Time-start) + round).Truncate(runner.StepTick)
		out = append(out, shrink.Fault{Name: s.Fault, At: max(at, runner.Warmup)})
		j = found + 1
	}
	return out, nil
}

// reproCommand is the run's own command line with the schedule's seed,
// time limit and faults: the run's other flags (recipe, fence, knobs)
// unchanged. A run started from code has none: then only its scenario.
func reproCommand(cfg runner.Config, s shrink.Schedule, seed int64) []string {
	args := []string{"--scenario", cfg.Scenario}
	if len(cfg.Command) > 2 {
		args = cfg.Command[2:]
		for _, name := range []string{"seed", "out", "faults", "faults-at", "time-limit"} {
			args = withoutFlag(args, name)
		}
	}
	return append(append([]string{"lockjepsen", "run"}, args...),
		"--seed", fmt.Sprint(seed), "--time-limit", s.TimeLimit.String(), "--faults-at", s.FaultsAt())
}
