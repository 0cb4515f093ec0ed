package sweep

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/runfolder"
	"github.com/lockjepsen/lockjepsen/runner"
)

func lockjepsenVersion() string { return runner.Version }

// RunFunc carries out one trial; runner.Run in production, a stand-in in tests
// of the scheduling.
type RunFunc func(ctx context.Context, cfg runner.Config, progress io.Writer) runner.Outcome

// Options of a sweep execution.
type Options struct {
	Progress io.Writer // the progress bar; nil: none
	TTY      bool      // redraw the bar in place; else one line per trial
	Run      RunFunc   // nil: runner.Run
	// Evidence, when set, is given each cell's first trial that shows what
	// makes the cell red (EvidenceKind: invalid, or a stale write let in) as
	// it finishes, the cell's evidence folder (EvidenceDir) to shrink it
	// into and the violation kind to keep, unless that folder already holds
	// one: a row's red cells then
	// link a violating trial without running again (lockjepsen sweep
	// evidence does it for rows swept before). Its error is reported on the
	// progress writer and does not stop the sweep.
	Evidence func(trialDir, evidenceDir, kind string) error
}

// job is one trial to run.
type job struct {
	cell Cell
	n    int
}

// state is what the scheduler knows about one cell.
type state struct {
	cell      Cell
	done      map[int]bool // trials with a trial.json that counts or failed
	next      int          // lowest trial number not yet started
	inflight  int
	opps      int // opportunities seen in finished trials
	hits      int // of which led to a double grant
	ci        int // index in plan.Cells(): with the trial number, the shard
	scheduled int
}

// advance moves st.next past finished trials and, in a shard, past the
// trials other shards own.
func (st *state) advance(plan Plan) {
	for st.done[st.next] || !plan.Owns(st.ci, st.next) {
		st.next++
	}
}

// Start creates a sweep folder: plan.json and trials/. It refuses a folder
// that already holds a plan, so a sweep is never overwritten (--resume it).
func Start(dir string, plan Plan) error {
	if _, err := os.Stat(filepath.Join(dir, PlanFile)); err == nil {
		return fmt.Errorf("%s already holds a sweep: resume it with --resume %s, or choose another --out", dir, dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, Trials), 0o755); err != nil {
		return fmt.Errorf("create sweep folder: %w", err)
	}
	return writePlan(filepath.Join(dir, PlanFile), plan)
}

// Execute runs every trial of the plan in dir that has not finished yet (all
// of them for a new sweep), keeping --parallel trials in flight, and
// re-aggregates. A cancelled ctx (Ctrl-C) lets the trials in flight stop and
// check what they recorded; they are marked interrupted and run again on
// resume, while every finished trial is kept.
func Execute(ctx context.Context, dir string, opt Options) (*Report, error) {
	plan, err := ReadPlan(dir)
	if err != nil {
		return nil, err
	}
	if opt.Run == nil {
		opt.Run = runner.Run
	}
	s, err := newScheduler(ctx, dir, plan, opt)
	if err != nil {
		return nil, err
	}
	stopBar := s.bar.start()
	firstErr := s.work(dir, opt)
	stopBar()

	rep, err := Aggregate(dir)
	if err != nil {
		return nil, err
	}
	if err := Publish(dir, rep); err != nil {
		return rep, err
	}
	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("interrupted: %d trial(s) kept; continue with 'lockjepsen sweep --resume %s': %w", rep.Trials+rep.Failed, dir, ctx.Err())
	}
	return rep, firstErr
}

// scheduler hands the trials of a sweep to its workers: every cell's state,
// the progress bar, and the lock and condition the workers wait on for a
// cell's trials in flight to end.
type scheduler struct {
	ctx   context.Context
	plan  Plan
	cells []*state
	bar   *bar
	mu    sync.Mutex
	cond  *sync.Cond
	// The cells whose evidence is being written, so that two invalid
	// trials of one cell finishing together shrink only one.
	evMu   sync.Mutex
	evBusy map[string]bool
}

// newScheduler reads each cell's finished trials from dir and sizes the
// progress bar to what remains.
func newScheduler(ctx context.Context, dir string, plan Plan, opt Options) (*scheduler, error) {
	s := &scheduler{ctx: ctx, plan: plan, evBusy: map[string]bool{}}
	s.cond = sync.NewCond(&s.mu)
	total := 0
	for ci, c := range plan.Cells() {
		st, err := scanCell(dir, c)
		if err != nil {
			return nil, err
		}
		st.ci = ci
		s.cells = append(s.cells, st)
		total += max(plan.Owned(ci), len(st.done))
	}
	s.bar = newBar(opt.Progress, opt.TTY, total, plan.Parallel)
	for _, st := range s.cells {
		s.bar.done += len(st.done)
	}
	s.bar.skipped = s.bar.done
	return s, nil
}

// work runs --parallel workers until pick has nothing left, and returns the
// first trial's error.
func (s *scheduler) work(dir string, opt Options) error {
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	for w := 0; w < s.plan.Parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, ok := s.pick()
				if !ok {
					return
				}
				s.bar.begin(j)
				t, err := runTrial(s.ctx, dir, s.plan, j, opt.Run)
				s.bar.end(j)
				s.finish(j, t)
				if opt.Evidence != nil && t != nil && t.Record.Counts() && s.ctx.Err() == nil {
					keepEvidence(dir, j.cell.ID(), t, opt, &s.evMu, s.evBusy)
				}
				if err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
				}
			}
		}()
	}
	// Wake pick when ctx ends so that workers waiting on cond return.
	go func() {
		<-s.ctx.Done()
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	}()
	wg.Wait()
	return firstErr
}

// pick returns the next job, or false when nothing is left. Fixed trials
// come first, cell by cell; then, with --min-failovers or --until-ci, a
// cell short of its stopping rule gets one more trial at a time, only
// when none of its trials is in flight, so that the counts it decides on
// are final. A shard skips the trials other shards own.
func (s *scheduler) pick() (job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.ctx.Err() != nil {
			return job{}, false
		}
		for _, st := range s.cells {
			st.advance(s.plan)
			if st.next < s.plan.Trials {
				st.inflight++
				j := job{st.cell, st.next}
				st.next++
				return j, true
			}
		}
		waiting := false
		for _, st := range s.cells {
			if !s.plan.Adaptive() || s.plan.Enough(st.hits, st.opps) {
				continue
			}
			st.advance(s.plan)
			if st.next >= s.plan.MaxTrials {
				continue
			}
			if st.inflight > 0 {
				waiting = true
				continue
			}
			st.inflight++
			j := job{st.cell, st.next}
			st.next++
			s.bar.grow()
			return j, true
		}
		if !waiting {
			return job{}, false
		}
		s.cond.Wait()
	}
}

// finish counts a trial that ended (an interrupted one runs again on resume)
// and wakes the workers waiting for its cell.
func (s *scheduler) finish(j job, t *Trial) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.cells {
		if st.cell.ID() == j.cell.ID() {
			st.inflight--
			if t != nil && t.Record.Status != StatusInterrupted {
				st.done[j.n] = true
				st.opps += t.Opportunities
				st.hits += t.Hit
			}
		}
	}
	if t != nil && t.Record.Status != StatusInterrupted {
		s.bar.finished(t)
	}
	s.cond.Broadcast()
}

// scanCell finds a cell's finished trials and moves unfinished leftovers
// (a folder without trial.json, or one marked interrupted or failed) aside to
// <n>.interrupted or <n>.failed, so the trial runs again in a clean folder while what the
// interrupted one recorded stays on disk.
func scanCell(dir string, c Cell) (*state, error) {
	st := &state{cell: c, done: map[int]bool{}}
	base := filepath.Join(dir, Trials, c.ID())
	ents, err := os.ReadDir(base)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("scan %s: %w", base, err)
	}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		p := filepath.Join(base, e.Name())
		rec, rerr := ReadRecord(p)
		// A failed trial (no verdict) is retried too: its cause is usually
		// the machine (a cluster that did not come up), not the setting.
		if rerr == nil && rec.Status != StatusInterrupted && rec.Status != StatusFailed {
			st.done[n] = true
			if rec.Counts() {
				if t, err := LoadTrial(p, c.Fault); err == nil {
					st.opps += t.Opportunities
					st.hits += t.Hit
				}
			}
			continue
		}
		suffix := ".interrupted"
		if rerr == nil && rec.Status == StatusFailed {
			suffix = ".failed"
		}
		aside := p + suffix
		for i := 2; ; i++ {
			if _, err := os.Stat(aside); os.IsNotExist(err) {
				break
			}
			aside = fmt.Sprintf("%s%s-%d", p, suffix, i)
		}
		if err := os.Rename(p, aside); err != nil {
			return nil, fmt.Errorf("move unfinished trial aside: %w", err)
		}
	}
	return st, nil
}

// runTrial runs trial j.n of its cell into trials/<cell>/<n>/, writes
// trial.json and loads the result. The runner's own phase log goes to
// run.log in the trial folder; the terminal shows the sweep's bar only.
func runTrial(ctx context.Context, dir string, plan Plan, j job, run RunFunc) (*Trial, error) {
	out := filepath.Join(dir, Trials, j.cell.ID(), strconv.Itoa(j.n))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("create trial folder: %w", err)
	}
	cfg, err := plan.RunConfig(j.cell, j.n, out)
	if err != nil {
		return nil, fmt.Errorf("trial %s/%d: %w", j.cell.ID(), j.n, err)
	}
	start := time.Now()
	// The runner keeps its own run.log in the trial folder.
	o := run(ctx, cfg, io.Discard)
	rec := Record{Cell: j.cell.ID(), Trial: j.n, Seed: cfg.Seed, ExitCode: o.ExitCode,
		StartedAt: start.UTC().Format(time.RFC3339), WallS: time.Since(start).Seconds(), Parallel: plan.Parallel}
	switch {
	case ctx.Err() != nil:
		rec.Status = StatusInterrupted
	case !o.Checked:
		rec.Status = StatusFailed
	case o.Err != nil:
		rec.Status = StatusError
	default:
		rec.Status = StatusOK
	}
	if o.Err != nil {
		rec.Error = o.Err.Error()
	}
	if err := runfolder.WriteJSON(filepath.Join(out, TrialRecord), rec); err != nil {
		return nil, err
	}
	if rec.Status == StatusInterrupted {
		return &Trial{Record: rec, Dir: out}, nil
	}
	t, err := LoadTrial(out, j.cell.Fault)
	if err != nil {
		// The trial's own files are broken: record it as failed so that the
		// sweep goes on and the report says so.
		rec.Status, rec.Error = StatusFailed, err.Error()
		_ = runfolder.WriteJSON(filepath.Join(out, TrialRecord), rec)
		return &Trial{Record: rec, Dir: out}, nil
	}
	return t, nil
}

// EvidenceKind says whether a trial's result shows what makes a cell red,
// and the violation kind a shrink must keep for it: "" (the first that
// falsifies a verdict) for an invalid trial, stale-write-accepted for a
// valid one whose fence let a stale write in (a finding that changes no
// verdict: a write that lands before the newer holder's first fenced
// access, which no fence can refuse).
func EvidenceKind(r *checker.Result) (string, bool) {
	switch {
	case r == nil:
		return "", false
	case r.Valid == checker.Invalid:
		return "", true
	case r.Valid == checker.Valid && r.StaleWrites.Accepted > 0:
		return "stale-write-accepted", true
	}
	return "", false
}

// keepEvidence shrinks t, if it shows what makes its cell red
// (EvidenceKind, on the result LoadTrial read), into the cell's evidence
// folder, unless the cell has evidence already or another of its trials is
// being shrunk.
func keepEvidence(dir, cell string, t *Trial, opt Options, mu *sync.Mutex, busy map[string]bool) {
	kind, ok := EvidenceKind(t.Result)
	if !ok {
		return
	}
	trial := t.Dir
	ev := EvidenceDir(dir, cell)
	mu.Lock()
	_, err := os.Stat(filepath.Join(ev, runfolder.Index))
	if busy[cell] || err == nil {
		mu.Unlock()
		return
	}
	busy[cell] = true
	mu.Unlock()
	defer func() {
		mu.Lock()
		delete(busy, cell)
		mu.Unlock()
	}()
	if err := opt.Evidence(trial, ev, kind); err != nil {
		// A half-written folder would read as evidence on a resume.
		_ = os.RemoveAll(ev)
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "evidence for %s from %s not kept: %v\n", cell, trial, err)
		}
	}
}
