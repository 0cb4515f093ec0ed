package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/marks"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// Trial status in trial.json.
const (
	StatusOK          = "ok"          // run and check carried out
	StatusError       = "error"       // checked, but the run reported an error (e.g. a fault step failed)
	StatusFailed      = "failed"      // no verdict: the run could not be carried out
	StatusInterrupted = "interrupted" // Ctrl-C; resume runs it again
)

// Record is trial.json: written by the sweep after a trial ends. Its absence
// marks a trial that never finished (the sweep was killed), which --resume
// runs again.
type Record struct {
	Cell      string  `json:"cell"`
	Trial     int     `json:"trial"`
	Seed      int64   `json:"seed"`
	Status    string  `json:"status"`
	ExitCode  int     `json:"exit_code"`
	Error     string  `json:"error,omitempty"`
	StartedAt string  `json:"started_at"`
	WallS     float64 `json:"wall_s"`
	// Parallel is --parallel when the trial ran: trials at once on the
	// machine, which widen the race window and the latencies it measures
	// (docs/sweep.md, "Trials at once"). 0 in folders from before it was kept.
	Parallel int `json:"parallel,omitempty"`
}

// Counts reports whether the trial's results enter the aggregates: any trial
// the checker gave a verdict on, including one whose run noted an error, since
// its history is complete and what it measured happened.
func (r Record) Counts() bool { return r.Status == StatusOK || r.Status == StatusError }

// Acquires classifies every acquire of a trial by how it ended.
type Acquires struct {
	Total      int `json:"total"`
	OK         int `json:"ok"`
	Contention int `json:"contention"` // refused because another client holds the lock: the lock working
	Refused    int `json:"refused"`    // refused by an error (NOREPLICAS, WAIT shortfall, READONLY, unreachable)
	Unknown    int `json:"unknown"`    // info: timed out or connection lost
	// UnknownRefused are the Unknown acquires a majority had in fact
	// refused (history.RefusedByMajority: in histories recorded before the
	// Redlock recipe failed such an acquire, its cleanup of the node it got
	// was unconfirmed): an answer for availability, unknown to the checker.
	UnknownRefused int `json:"unknown_refused,omitempty"`
	// RefusedBy splits Refused by reason: noreplicas, wait, waitaof,
	// readonly, unreachable, other.
	RefusedBy map[string]int `json:"refused_by"`
}

func (a *Acquires) add(b Acquires) {
	a.Total += b.Total
	a.OK += b.OK
	a.Contention += b.Contention
	a.Refused += b.Refused
	a.Unknown += b.Unknown
	a.UnknownRefused += b.UnknownRefused
	if a.RefusedBy == nil {
		a.RefusedBy = map[string]int{}
	}
	for k, v := range b.RefusedBy {
		a.RefusedBy[k] += v
	}
}

// Trial is what the aggregates take from one trial folder: results.json for
// the verdicts, history.jsonl for what results.json does not keep (the reason
// an acquire failed, every latency, when each fault began).
type Trial struct {
	Record Record
	Dir    string
	Result *checker.Result

	Unit          string // failover | fault: what one opportunity is
	Faults        int    // fault injections of the cell's kinds
	Opportunities int
	DoubleGrants  int
	// Hit counts the opportunities (fault injections) after which at least
	// one double grant began: the numerator of P(double grant per failover).
	Hit int
	// StaleHit counts the opportunities after which at least one stale
	// write landed at the resource: a double holder (a double grant, or a
	// holder whose lease ran out, e.g. paused) whose older holder's write the
	// resource accepted while the newer one held the lock. The numerator of
	// P(stale write accepted per opportunity).
	StaleHit     int
	Unattributed int // double grants before any fault: a bug or a stray
	// Closed counts the opportunities the setting closed: injections whose
	// wait for a grant ended at the replication guard's refusal
	// (history.NClosedBySetting) and went on without one. They are among
	// Opportunities, judged by the checker like the others; ClosedHit counts
	// those of them that a double grant followed all the same.
	Closed       int
	ClosedHit    int
	Exposures    []float64
	AcquireOKMs  []float64
	AcquireAllMs []float64
	Acquires     Acquires
	// Liveness: the stuck locks the checker found, and for each injection
	// of the cell's kinds the time until every key asked for after it was
	// granted again (checker.FaultWindow.RegrantMs); NoRegrant counts the
	// injections after which some key never was, before the trial ended.
	StuckLocks int
	RegrantMs  []float64
	NoRegrant  int
	// Orphaned: the spans in which a key turned contenders away with no
	// client believing it held it (checker.OrphanedSpan), each one's ms;
	// OrphanedMeasured is false for a results.json written before the
	// checker measured them.
	OrphanedMs       []float64
	OrphanedMeasured bool
	// Coverage: the windows of the cell's kinds the checker judged
	// (results.json with coverage), and how many reached the fault's
	// dangerous moment (checker.FaultWindow.Reached); ReachedHit counts
	// the reached injections a double grant followed, the numerator of P
	// conditioned on a chance to fail.
	Windows, Reached, ReachedHit int
}

// Unit is what one opportunity of a fault axis point is.
func (f Fault) Unit() string {
	for _, k := range f.Faults {
		if nf, err := nemesis.Lookup(k); err != nil || !nf.Failover {
			return "fault"
		}
	}
	return "failover"
}

// ReadRecord reads a trial folder's trial.json.
func ReadRecord(dir string) (Record, error) {
	var r Record
	if err := runfolder.ReadJSON(filepath.Join(dir, TrialRecord), &r); err != nil {
		return r, fmt.Errorf("trial %s: %w", dir, err)
	}
	return r, nil
}

// LoadTrial reads one finished trial folder for the given fault axis point.
func LoadTrial(dir string, fault Fault) (*Trial, error) {
	rec, err := ReadRecord(dir)
	if err != nil {
		return nil, err
	}
	t := &Trial{Record: rec, Dir: dir, Unit: fault.Unit()}
	if !rec.Counts() {
		return t, nil
	}
	t.Result = new(checker.Result)
	if err := runfolder.ReadJSON(filepath.Join(dir, runfolder.Results), t.Result); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("trial %s has no %s (re-check it with 'lockjepsen check %s'): %w", dir, runfolder.Results, dir, err)
	} else if err != nil {
		return nil, fmt.Errorf("trial %s: %w", dir, err)
	}
	events, err := history.ReadFile(filepath.Join(dir, runfolder.History))
	if err != nil {
		return nil, fmt.Errorf("trial %s: %w", dir, err)
	}
	t.fromHistory(events, fault)
	t.fromResult(events, fault)
	return t, nil
}

func (t *Trial) fromHistory(events []history.Event, fault Fault) {
	inflight := map[history.Process]history.Event{}
	t.Acquires.RefusedBy = map[string]int{}
	for _, e := range events {
		if !e.IsClient() || e.F != history.FAcquire {
			continue
		}
		if e.Type == history.Invoke {
			inflight[e.Process] = e
			continue
		}
		inv, ok := inflight[e.Process]
		if !ok {
			continue
		}
		delete(inflight, e.Process)
		ms := float64(e.Time-inv.Time) / 1e6
		t.Acquires.Total++
		switch e.Type {
		case history.OK:
			t.Acquires.OK++
			t.AcquireOKMs = append(t.AcquireOKMs, ms)
			t.AcquireAllMs = append(t.AcquireAllMs, ms)
		case history.Fail:
			t.AcquireAllMs = append(t.AcquireAllMs, ms)
			if r := history.RefusalReason(e.Error); r == "contention" {
				t.Acquires.Contention++
			} else {
				t.Acquires.Refused++
				t.Acquires.RefusedBy[r]++
			}
		default:
			t.Acquires.Unknown++
			if history.RefusedByMajority(e.Error) {
				t.Acquires.UnknownRefused++
			}
		}
	}
	// An acquire still in flight when the history ended is unknown, as the
	// checker counts it.
	t.Acquires.Total += len(inflight)
	t.Acquires.Unknown += len(inflight)
}

func (t *Trial) fromResult(events []history.Event, fault Fault) {
	kinds := map[string]bool{}
	// byGrant: the cell's faults whose dangerous moment is a grant made
	// during the injection (the failover race: a grant on the cut-off
	// primary alone). Their double grants belong to the injection that lost
	// the stale holder's grant.
	byGrant := false
	for _, k := range fault.Faults {
		// A fault's first mark is logged at injection: it anchors the fault
		// on the history's clock.
		if f, err := nemesis.Lookup(k); err == nil {
			kinds[f.Marks[0].Event] = true
			byGrant = byGrant || f.Marks[0].Moment == marks.MomentGrant
		} else {
			kinds[k] = true
		}
	}
	var starts []int64
	closed := map[int]bool{} // injections the setting closed
	for _, e := range events {
		switch {
		case e.IsClient():
		case kinds[e.F]:
			starts = append(starts, e.Time)
		case e.F == history.NClosedBySetting && len(starts) > 0:
			// Logged during the wait of the injection that began last.
			closed[len(starts)-1] = true
		}
	}
	t.Faults = len(starts)
	t.StuckLocks = len(t.Result.Liveness.StuckLocks)
	t.OrphanedMeasured = t.Result.Ownership.Orphaned != nil
	for _, o := range t.Result.Ownership.Orphaned {
		t.OrphanedMs = append(t.OrphanedMs, o.Ms)
	}
	// reached[i]: injection i's window reached its moment. Each injection
	// logs its first mark once, so the cell's windows, in time order, are
	// its injections; a count that differs leaves the map empty.
	var reachedWins []bool
	for _, w := range t.Result.FaultWindows {
		if kinds[w.Fault] && w.Moment != "" {
			t.Windows++
			reachedWins = append(reachedWins, w.Reached)
			if w.Reached {
				t.Reached++
			}
		}
		switch {
		case !kinds[w.Fault] || w.RegrantMs == nil:
		case *w.RegrantMs < 0:
			t.NoRegrant++
		default:
			t.RegrantMs = append(t.RegrantMs, *w.RegrantMs)
		}
	}
	if t.Unit == "failover" {
		t.Opportunities = t.Result.Failovers
	} else {
		t.Opportunities = t.Faults
	}
	injection := latestInjection(starts)
	hit, stale := map[int]bool{}, map[int]bool{}
	for _, d := range t.Result.DoubleHolderList {
		a := creditedInjection(injection, d, byGrant)
		if d.StaleWrite == history.Accepted && a >= 0 {
			stale[a] = true
		}
		if !d.DoubleGrant {
			continue
		}
		t.DoubleGrants++
		t.Exposures = append(t.Exposures, d.OverlapMs)
		if a < 0 {
			t.Unattributed++
			continue
		}
		hit[a] = true
	}
	t.Hit = min(len(hit), t.Opportunities)
	if len(reachedWins) == len(starts) {
		for a := range hit {
			if reachedWins[a] {
				t.ReachedHit++
			}
		}
	}
	t.StaleHit = min(len(stale), t.Opportunities)
	// A closed injection whose kill the trial's end cut short made no
	// failover: it is no opportunity, so the count stays within them.
	t.Closed = min(len(closed), t.Opportunities)
	for a := range closed {
		if hit[a] {
			t.ClosedHit++
		}
	}
	t.ClosedHit = min(t.ClosedHit, t.Closed)
}

// latestInjection returns, for a time, the latest of the injections
// beginning at starts (in time order) that began at or before it, or -1.
func latestInjection(starts []int64) func(int64) int {
	return func(at int64) int {
		a := -1
		for i, s := range starts {
			if s <= at {
				a = i
			}
		}
		return a
	}
}

// creditedInjection is the injection a double holding is credited to:
// the latest that began before the second holder's start, except that for
// a fault whose dangerous moment is a grant made during it, the injection
// under which the stale holder was granted. With faults back to back, a
// failover's lost lease runs on past the next cut: every grant the new
// primary makes until it ends is a double grant with it, and crediting those
// to the next injection counted that failover a hit it never caused
// (Sentinel's failover cell: 45 of 46 credited so, 23 of 46 by the grant
// each lost; results/comparison/README.md).
func creditedInjection(injection func(int64) int, d checker.DoubleHolder, byGrant bool) int {
	a := injection(d.Start)
	if byGrant && d.StaleGranted > 0 {
		if g := injection(d.StaleGranted); g >= 0 && g <= a {
			return g
		}
	}
	return a
}
