package sweep

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// CellStats are the aggregates of one cell, the rows of sweep.csv.
type CellStats struct {
	Cell   string `json:"cell"`
	Config string `json:"config"`
	Fault  string `json:"fault"`

	Trials        int `json:"trials"`         // trials that count (checked)
	TrialsFailed  int `json:"trials_failed"`  // no verdict: left out of every figure below
	Interrupted   int `json:"interrupted"`    // stopped by Ctrl-C: --resume runs them again
	InvalidTrials int `json:"invalid_trials"` // checker said invalid
	UnknownTrials int `json:"unknown_trials"` // checker ran out of budget

	Unit          string `json:"unit"` // failover | fault
	Failovers     int    `json:"failovers"`
	Faults        int    `json:"faults"`
	Opportunities int    `json:"opportunities"`
	// DoubleGrants counts every double grant; Hits the opportunities that led
	// to at least one (P's numerator, so that P stays a probability when one
	// failover causes two).
	DoubleGrants int `json:"double_grants"`
	Hits         int `json:"hits"`
	Unattributed int `json:"unattributed"`
	// Closed counts the opportunities the setting closed (Trial.Closed):
	// the fault waited for a grant that its own condition left to the
	// replication guard, the guard refused one, and the fault went on
	// without a grant. They are opportunities like the others, in P's
	// denominator; ClosedHits those a double grant followed all the same
	// (in P's numerator too; expected 0, since no grant landed).
	Closed     int `json:"closed,omitempty"`
	ClosedHits int `json:"closed_hits,omitempty"`
	// P is Hits/Opportunities with its 95% Wilson interval; P is null when
	// no opportunity occurred ([0,1] interval).
	P    *float64 `json:"p"`
	PLow float64  `json:"p_low"`
	PHi  float64  `json:"p_high"`

	// StaleHits counts the opportunities after which at least one stale
	// write landed at the resource (Trial.StaleHit); PStale is
	// StaleHits/Opportunities with its 95% Wilson interval, null without an
	// opportunity. What the fence (or its absence) let through, per fault.
	StaleHits   int      `json:"stale_hits"`
	PStale      *float64 `json:"p_stale"`
	PStaleLow   float64  `json:"p_stale_low"`
	PStaleHigh  float64  `json:"p_stale_high"`
	Backend     string   `json:"backend,omitempty"` // what the fault kind mapped onto (sentinel, redlock, ...)
	NemesisKind []string `json:"nemesis_faults"`    // the nemesis faults the cell ran

	DoubleHolders int       `json:"double_holders"` // incl. honest expiries (paused clients)
	ExposureMs    Dist      `json:"exposure_ms"`    // overlap of each double grant
	Exposures     []float64 `json:"exposures_ms"`   // the sample, for the plot

	AcquireOKMs  Dist     `json:"acquire_ok_ms"`  // granted acquires: what a holder waits, WAIT included
	AcquireAllMs Dist     `json:"acquire_all_ms"` // every completed acquire, as results.json counts
	Acquires     Acquires `json:"acquires"`
	// RefusedShare is the share of acquires refused by an error (NOREPLICAS,
	// WAIT shortfall, ...); UnknownShare those that timed out. Availability
	// is 1 - both: the acquires that got an answer from a working lock (an
	// unknown that a majority of Redlock nodes refused counts as answered:
	// Acquires.UnknownRefused).
	RefusedShare float64 `json:"refused_share"`
	UnknownShare float64 `json:"unknown_share"`
	Availability float64 `json:"availability"`

	// Liveness: stuck locks (checker.LivenessResult) and the trials that
	// had one; RegrantMs the time from each injection until every key
	// clients asked for had been granted again, NoRegrant the injections
	// after which one never was before its trial ended. A cell aggregated
	// before these were measured has RegrantMs.Count 0.
	// Windows are the injections the checker judged for coverage, Reached
	// those that reached the fault's dangerous moment (a grant inside a
	// cut, a lease alive at a kill): a hit needs one, a valid cell whose
	// windows reached none proves nothing.
	Windows int `json:"windows"`
	Reached int `json:"reached"`
	// ReachedHits: the reached injections a double grant followed; PReached
	// is ReachedHits/Reached with its 95% Wilson interval, P conditioned on
	// the fault having had its chance (null when none reached it).
	ReachedHits  int      `json:"reached_hits"`
	PReached     *float64 `json:"p_reached"`
	PReachedLow  float64  `json:"p_reached_low"`
	PReachedHigh float64  `json:"p_reached_high"`

	// LivenessMeasured: the cell was aggregated by code that counts stuck
	// locks and regrants; false in a sweep.json written before, whose zeros
	// mean "not counted", not "none".
	LivenessMeasured bool `json:"liveness_measured"`
	StuckLocks       int  `json:"stuck_locks"`
	StuckTrials      int  `json:"stuck_trials"`
	RegrantMs        Dist `json:"regrant_ms"`
	NoRegrant        int  `json:"no_regrant"`
	// OrphanedMeasured: every trial of the cell was checked by code that
	// measures orphaned locks (keys that turned contenders away while no
	// client believed it held them); OrphanedMs is their spans' lengths,
	// OrphanedTrials the trials that had any.
	OrphanedMeasured bool `json:"orphaned_measured,omitempty"`
	OrphanedMs       Dist `json:"orphaned_ms"`
	OrphanedTrials   int  `json:"orphaned_trials,omitempty"`

	StaleWrites checker.StaleWrites `json:"stale_writes"`
	LostUpdates int                 `json:"lost_updates"`
	// Rewinds are accepted writes that set the value back (each counted
	// once, apart from the lost updates).
	Rewinds int     `json:"rewinds"`
	WallS   float64 `json:"wall_s"` // summed trial wall time
	// Parallel is the most trials that ran at once while this cell's trials
	// ran: its window and latencies are comparable only with cells measured
	// at the same figure.
	Parallel int `json:"parallel,omitempty"`
	// StoppedAtCap: the cell ran its plan's --max-trials (MaxTrials) and
	// still fell short of the stopping rule, so its interval is wider than
	// the rule asks (the table says so in its trials column). Set by
	// MarkCap from the counts, never stored alone.
	StoppedAtCap bool `json:"stopped_at_cap,omitempty"`
	MaxTrials    int  `json:"max_trials,omitempty"`
}

// MarkCap sets cs.StoppedAtCap and cs.MaxTrials from plan, the plan of the
// unsharded sweep the cell was measured in: a cell that ran every trial its
// cap allows without meeting the rule stopped at the cap, not at the rule.
// A shard's folder judges no cap (its share of the trials is not the
// cell's); `sweep merge` marks the merged cells.
func MarkCap(plan Plan, cs *CellStats) {
	cs.StoppedAtCap, cs.MaxTrials = false, 0
	if !plan.Adaptive() || plan.Shard != nil {
		return
	}
	cs.MaxTrials = plan.MaxTrials
	cs.StoppedAtCap = cs.Trials+cs.TrialsFailed >= plan.MaxTrials && !plan.Enough(cs.Hits, cs.Opportunities)
}

// Report is sweep.json.
type Report struct {
	Lockjepsen string      `json:"lockjepsen"`
	Dir        string      `json:"dir"`
	Aggregated string      `json:"aggregated_at"`
	Plan       Plan        `json:"plan"`
	Cells      []CellStats `json:"cells"`
	// NotApplicable are the pairs of the matrix not run: the fault kind has
	// no counterpart on that deployment (the report prints them as n/a).
	NotApplicable []NACell `json:"not_applicable,omitempty"`
	// Joined, when set, makes this report a join of the reports of other
	// sweep folders (Join): its cells are theirs, and there are no trial
	// folders or plan.json here.
	Joined []Joined `json:"joined,omitempty"`
	// Totals over the sweep.
	Trials     int     `json:"trials"`
	Failed     int     `json:"failed"`
	Pending    int     `json:"pending"` // planned trials not (yet) finished
	TrialS     float64 `json:"trial_s"` // summed trial wall time
	MeanTrialS float64 `json:"mean_trial_s"`
	// SpanS runs from the first trial's start to the last one's end: the
	// sweep's wall time when it ran in one sitting (a resumed sweep's span
	// holds the pause too; shards merged after running side by side, their
	// common span). PerMinute is its opportunities a minute of SpanS, and
	// Rates the same per fault kind. 0 in a joined report (its parts ran
	// apart).
	SpanS     float64    `json:"span_s,omitempty"`
	PerMinute float64    `json:"opportunities_per_minute,omitempty"`
	Rates     []KindRate `json:"rates,omitempty"`
}

// KindRate is how fast one fault kind's cells gave opportunities.
type KindRate struct {
	Fault         string  `json:"fault"`
	Unit          string  `json:"unit"`
	Cells         int     `json:"cells"`
	Trials        int     `json:"trials"`
	Opportunities int     `json:"opportunities"`
	TrialS        float64 `json:"trial_s"`
	// PerTrialMinute is opportunities a minute of one trial's wall time;
	// PerMinute multiplies it by the sweep's trials at once on average
	// (TrialS / SpanS): the rate a machine running only this kind at the
	// sweep's concurrency would see.
	PerTrialMinute float64 `json:"per_trial_minute"`
	PerMinute      float64 `json:"per_minute"`
}

// rates fills rep.SpanS, PerMinute and Rates from the cells and the span of
// the trials' start and end times (first, last, Unix seconds).
func (rep *Report) rates(first, last float64) {
	if last <= first {
		return
	}
	rep.SpanS = last - first
	conc := rep.TrialS / rep.SpanS
	total := 0
	for _, f := range rep.Plan.Faults {
		kr := KindRate{Fault: f.Name, Unit: f.Unit()}
		for _, c := range rep.Cells {
			if c.Fault == f.Name {
				kr.Cells++
				kr.Trials += c.Trials + c.TrialsFailed
				kr.Opportunities += c.Opportunities
				kr.TrialS += c.WallS
			}
		}
		if kr.TrialS > 0 {
			kr.PerTrialMinute = float64(kr.Opportunities) / (kr.TrialS / 60)
			kr.PerMinute = kr.PerTrialMinute * conc
		}
		total += kr.Opportunities
		rep.Rates = append(rep.Rates, kr)
	}
	rep.PerMinute = float64(total) / (rep.SpanS / 60)
}

// ReadPlan reads plan.json of a sweep folder.
func ReadPlan(dir string) (Plan, error) {
	var p Plan
	err := runfolder.ReadJSON(filepath.Join(dir, PlanFile), &p)
	if errors.Is(err, os.ErrNotExist) {
		return p, fmt.Errorf("%s is not a sweep folder (no %s): %w", dir, PlanFile, err)
	}
	return p, err
}

// TrialDirs lists a cell's trial folders with a trial.json, by trial number.
func TrialDirs(dir string, cell Cell) ([]string, error) {
	base := filepath.Join(dir, Trials, cell.ID())
	ents, err := os.ReadDir(base)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", base, err)
	}
	type td struct {
		n int
		p string
	}
	var out []td
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue // interrupted leftovers are renamed <n>.interrupted
		}
		p := filepath.Join(base, e.Name())
		if _, err := os.Stat(filepath.Join(p, TrialRecord)); err == nil {
			out = append(out, td{n, p})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n < out[j].n })
	paths := make([]string, len(out))
	for i, t := range out {
		paths[i] = t.p
	}
	return paths, nil
}

// Aggregate recomputes every figure of a sweep from its trial folders.
func Aggregate(dir string) (*Report, error) {
	plan, err := ReadPlan(dir)
	if err != nil {
		return nil, err
	}
	rep := &Report{Lockjepsen: lockjepsenVersion(), Dir: dir, Aggregated: time.Now().UTC().Format(time.RFC3339), Plan: plan}
	var first, last float64 // the trials' span, Unix seconds
	for ci, cell := range plan.Cells() {
		dirs, err := TrialDirs(dir, cell)
		if err != nil {
			return nil, err
		}
		var trials []*Trial
		for _, d := range dirs {
			t, err := LoadTrial(d, cell.Fault)
			if err != nil {
				return nil, err
			}
			trials = append(trials, t)
			if at, err := time.Parse(time.RFC3339, t.Record.StartedAt); err == nil {
				start := float64(at.Unix())
				if first == 0 || start < first {
					first = start
				}
				last = max(last, start+t.Record.WallS)
			}
		}
		cs := Combine(cell, trials)
		cs.Backend = plan.Backend(cell.Config)
		MarkCap(plan, &cs)
		if cs.Trials+cs.TrialsFailed > 0 {
			cs.Parallel = max(cs.Parallel, plan.HostParallel)
		}
		rep.Cells = append(rep.Cells, cs)
		rep.Trials += cs.Trials
		rep.Failed += cs.TrialsFailed
		rep.TrialS += cs.WallS
		if done, want := cs.Trials+cs.TrialsFailed, plan.Owned(ci); done < want {
			rep.Pending += want - done
		}
	}
	rep.NotApplicable = plan.NotApplicable()
	if n := rep.Trials + rep.Failed; n > 0 {
		rep.MeanTrialS = rep.TrialS / float64(n)
	}
	rep.rates(first, last)
	return rep, nil
}

// Combine aggregates one cell's trials. Samples are pooled across trials
// (a p99 of pooled latencies, not a mean of per-trial p99s), so a cell's
// figures do not depend on how its operations fell into trials.
func Combine(cell Cell, trials []*Trial) CellStats {
	cs := CellStats{Cell: cell.ID(), Config: cell.Config.Name, Fault: cell.Fault.Name, Unit: cell.Fault.Unit(),
		NemesisKind: append([]string{}, cell.Fault.Faults...), LivenessMeasured: true}
	cs.Acquires.RefusedBy = map[string]int{}
	var ok, all, regrant, orphanedMs []float64
	cs.Exposures = []float64{}
	measured := 0
	for _, t := range trials {
		cs.WallS += t.Record.WallS
		cs.Parallel = max(cs.Parallel, t.Record.Parallel)
		if t.Record.Status == StatusInterrupted {
			cs.Interrupted++
			continue
		}
		if !t.Record.Counts() {
			cs.TrialsFailed++
			continue
		}
		r := t.Result
		cs.Trials++
		switch r.Valid {
		case checker.Invalid:
			cs.InvalidTrials++
		case checker.Unknown:
			cs.UnknownTrials++
		}
		cs.Failovers += r.Failovers
		cs.Faults += t.Faults
		cs.Opportunities += t.Opportunities
		cs.DoubleGrants += t.DoubleGrants
		cs.Hits += t.Hit
		cs.StaleHits += t.StaleHit
		cs.Unattributed += t.Unattributed
		cs.Closed += t.Closed
		cs.ClosedHits += t.ClosedHit
		cs.DoubleHolders += r.DoubleHolders
		cs.Exposures = append(cs.Exposures, t.Exposures...)
		ok = append(ok, t.AcquireOKMs...)
		all = append(all, t.AcquireAllMs...)
		regrant = append(regrant, t.RegrantMs...)
		cs.NoRegrant += t.NoRegrant
		cs.Windows += t.Windows
		cs.Reached += t.Reached
		cs.ReachedHits += t.ReachedHit
		cs.StuckLocks += t.StuckLocks
		if t.OrphanedMeasured {
			measured++
		}
		orphanedMs = append(orphanedMs, t.OrphanedMs...)
		if len(t.OrphanedMs) > 0 {
			cs.OrphanedTrials++
		}
		if t.StuckLocks > 0 {
			cs.StuckTrials++
		}
		cs.Acquires.add(t.Acquires)
		cs.StaleWrites.Attempted += r.StaleWrites.Attempted
		cs.StaleWrites.Rejected += r.StaleWrites.Rejected
		cs.StaleWrites.Accepted += r.StaleWrites.Accepted
		cs.StaleWrites.Unknown += r.StaleWrites.Unknown
		cs.LostUpdates += r.Resource.LostUpdates
		cs.Rewinds += r.Resource.Rewinds
	}
	cs.PLow, cs.PHi = Wilson(cs.Hits, cs.Opportunities, Z95)
	if cs.Opportunities > 0 {
		p := float64(cs.Hits) / float64(cs.Opportunities)
		cs.P = &p
	}
	cs.PReachedLow, cs.PReachedHigh = Wilson(cs.ReachedHits, cs.Reached, Z95)
	if cs.Reached > 0 {
		p := float64(cs.ReachedHits) / float64(cs.Reached)
		cs.PReached = &p
	}
	cs.PStaleLow, cs.PStaleHigh = Wilson(cs.StaleHits, cs.Opportunities, Z95)
	if cs.Opportunities > 0 {
		p := float64(cs.StaleHits) / float64(cs.Opportunities)
		cs.PStale = &p
	}
	cs.ExposureMs = Summarize(append([]float64(nil), cs.Exposures...))
	sort.Float64s(cs.Exposures)
	cs.AcquireOKMs = Summarize(ok)
	cs.AcquireAllMs = Summarize(all)
	cs.RegrantMs = Summarize(regrant)
	cs.OrphanedMeasured = measured > 0 && measured == cs.Trials
	cs.OrphanedMs = Summarize(orphanedMs)
	if n := cs.Acquires.Total; n > 0 {
		cs.RefusedShare = float64(cs.Acquires.Refused) / float64(n)
		cs.UnknownShare = float64(cs.Acquires.Unknown) / float64(n)
		// An unknown a majority refused got its answer (Acquires.UnknownRefused).
		cs.Availability = 1 - cs.RefusedShare - float64(cs.Acquires.Unknown-cs.Acquires.UnknownRefused)/float64(n)
	}
	return cs
}

// csvHeader is sweep.csv's first line; docs/sweep.md explains each column.
var csvHeader = []string{
	"cell", "config", "fault", "trials", "trials_failed", "invalid_trials", "unit", "failovers", "faults",
	"opportunities", "double_grants", "hits", "p", "p_low", "p_high",
	"exposure_p50_ms", "exposure_p99_ms", "exposure_max_ms",
	"acquire_ok_p50_ms", "acquire_ok_p99_ms", "acquire_all_p50_ms", "acquire_all_p99_ms",
	"acquires", "acquires_ok", "contention", "refused", "unknown", "refused_share", "unknown_share", "availability",
	"refused_noreplicas", "refused_wait", "refused_waitaof", "refused_readonly", "refused_unreachable", "refused_other",
	"stale_writes", "stale_rejected", "stale_accepted", "stale_unknown", "lost_updates",
	"stale_hits", "p_stale", "p_stale_low", "p_stale_high", "nemesis_faults", "unknown_refused", "rewinds",
	"closed", "closed_hits", "stopped_at_cap",
	"stuck_locks", "stuck_trials", "regrant_p50_ms", "regrant_p99_ms", "regrant_max_ms", "regrant_count", "no_regrant", "windows", "reached",
	"reached_hits", "p_reached", "p_reached_low", "p_reached_high",
}

func f64(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// optF64 is an optional figure: "" when there is none.
func optF64(v *float64) string {
	if v == nil {
		return ""
	}
	return f64(*v)
}

// WriteFiles writes sweep.json and sweep.csv into the sweep folder.
func (r *Report) WriteFiles(dir string) error {
	if err := runfolder.WriteJSON(filepath.Join(dir, ReportJSON), r); err != nil {
		return err
	}
	return runfolder.WriteAtomic(filepath.Join(dir, ReportCSV), 0o644, r.writeCSV)
}

func (r *Report) writeCSV(out io.Writer) error {
	w := csv.NewWriter(out)
	_ = w.Write(csvHeader)
	for _, c := range r.Cells {
		p, ps := optF64(c.P), optF64(c.PStale)
		rb := c.Acquires.RefusedBy
		_ = w.Write([]string{
			c.Cell, c.Config, c.Fault, strconv.Itoa(c.Trials), strconv.Itoa(c.TrialsFailed), strconv.Itoa(c.InvalidTrials),
			c.Unit, strconv.Itoa(c.Failovers), strconv.Itoa(c.Faults), strconv.Itoa(c.Opportunities),
			strconv.Itoa(c.DoubleGrants), strconv.Itoa(c.Hits), p, f64(c.PLow), f64(c.PHi),
			f64(c.ExposureMs.P50), f64(c.ExposureMs.P99), f64(c.ExposureMs.Max),
			f64(c.AcquireOKMs.P50), f64(c.AcquireOKMs.P99), f64(c.AcquireAllMs.P50), f64(c.AcquireAllMs.P99),
			strconv.Itoa(c.Acquires.Total), strconv.Itoa(c.Acquires.OK), strconv.Itoa(c.Acquires.Contention),
			strconv.Itoa(c.Acquires.Refused), strconv.Itoa(c.Acquires.Unknown),
			f64(c.RefusedShare), f64(c.UnknownShare), f64(c.Availability),
			strconv.Itoa(rb["noreplicas"]), strconv.Itoa(rb["wait"]), strconv.Itoa(rb["waitaof"]),
			strconv.Itoa(rb["readonly"]), strconv.Itoa(rb["unreachable"]), strconv.Itoa(rb["other"]),
			strconv.Itoa(c.StaleWrites.Attempted), strconv.Itoa(c.StaleWrites.Rejected),
			strconv.Itoa(c.StaleWrites.Accepted), strconv.Itoa(c.StaleWrites.Unknown), strconv.Itoa(c.LostUpdates),
			strconv.Itoa(c.StaleHits), ps, f64(c.PStaleLow), f64(c.PStaleHigh), strings.Join(c.NemesisKind, "+"),
			strconv.Itoa(c.Acquires.UnknownRefused), strconv.Itoa(c.Rewinds),
			strconv.Itoa(c.Closed), strconv.Itoa(c.ClosedHits), strconv.FormatBool(c.StoppedAtCap),
			strconv.Itoa(c.StuckLocks), strconv.Itoa(c.StuckTrials), f64(c.RegrantMs.P50), f64(c.RegrantMs.P99),
			f64(c.RegrantMs.Max), strconv.Itoa(c.RegrantMs.Count), strconv.Itoa(c.NoRegrant),
			strconv.Itoa(c.Windows), strconv.Itoa(c.Reached),
			strconv.Itoa(c.ReachedHits), optF64(c.PReached), f64(c.PReachedLow), f64(c.PReachedHigh),
		})
	}
	w.Flush()
	return w.Error()
}
