package sweep

import (
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
)

// TestLivenessColumns: a cell pools its trials' stuck locks and the regrant
// time of each injection of its own kinds (another fault's window, and one
// from a results.json that predates the measure, count for nothing), counts
// the injections after which a key never came back, and the decision table
// and CSV carry them.
func TestLivenessColumns(t *testing.T) {
	f, err := LookupFault("kill-primary")
	if err != nil {
		t.Fatal(err)
	}
	kill := "kill" // the event kill-primary logs at injection
	ms := func(v float64) *float64 { return &v }
	trial := func(stuck int, ws ...checker.FaultWindow) *Trial {
		res := &checker.Result{FaultWindows: ws}
		for range stuck {
			res.Liveness.StuckLocks = append(res.Liveness.StuckLocks, checker.StuckLock{Key: "k"})
		}
		tr := &Trial{Record: Record{Status: StatusOK}, Result: res, Unit: f.Unit()}
		var events []history.Event
		for _, w := range ws {
			events = append(events, history.Event{Time: int64(w.StartS * 1e9), Process: history.Nemesis, Type: history.Info, F: w.Fault})
		}
		tr.fromResult(events, f)
		return tr
	}
	ts := []*Trial{
		trial(0, checker.FaultWindow{Fault: kill, StartS: 1, RegrantMs: ms(4000), Moment: "held", Reached: true}, checker.FaultWindow{Fault: kill, StartS: 9, RegrantMs: ms(-1), Moment: "held"}),
		trial(2, checker.FaultWindow{Fault: kill, StartS: 1, RegrantMs: ms(6000)}, checker.FaultWindow{Fault: "pause", StartS: 5, RegrantMs: ms(99000)}),
		trial(0, checker.FaultWindow{Fault: kill, StartS: 1}), // checked before regrant was measured
	}
	cs := Combine(Cell{Config: Config{Name: "none"}, Fault: f}, ts)
	if cs.Windows != 2 || cs.Reached != 1 {
		t.Errorf("coverage: %d of %d windows reached, want 1 of 2 (a window without a moment predates coverage)", cs.Reached, cs.Windows)
	}
	if cs.StuckLocks != 2 || cs.StuckTrials != 1 || cs.NoRegrant != 1 || cs.RegrantMs.Count != 2 || cs.RegrantMs.Max != 6000 {
		t.Fatalf("stuck %d in %d trials, no regrant %d, regrant %+v; want 2 in 1, 1, two samples up to 6000 ms",
			cs.StuckLocks, cs.StuckTrials, cs.NoRegrant, cs.RegrantMs)
	}
	r := &Report{Plan: Plan{Configs: []Config{{Name: "none"}}, Faults: []Fault{f}}, Cells: []CellStats{cs}}
	tab := DecisionTable(r)
	for _, w := range []string{"liveness: stuck locks", "1 of 2 injections reached the dangerous moment", "2 stuck (in 1 trial(s)); 4000 / 6000 ms; 1 fault(s) after which a key was never granted again"} {
		if !strings.Contains(tab, w) {
			t.Errorf("table lacks %q:\n%s", w, tab)
		}
	}
	var csv strings.Builder
	if err := r.writeCSV(&csv); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if !strings.HasSuffix(lines[0], "stuck_locks,stuck_trials,regrant_p50_ms,regrant_p99_ms,regrant_max_ms,regrant_count,no_regrant,windows,reached,reached_hits,p_reached,p_reached_low,p_reached_high") ||
		!strings.Contains(lines[1], ",2,1,4000,6000,6000,2,1,2,1,0,0,0,") {
		t.Errorf("sweep.csv:\n%s", csv.String())
	}
}

// TestPConditionedOnReached: a double grant after an injection that reached
// its moment counts in P conditioned on reaching it; one after an injection
// that did not counts in P alone.
func TestPConditionedOnReached(t *testing.T) {
	f, err := LookupFault("kill-primary")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name          string
		grantAfterS   float64 // the double grant's start, s
		hits, reached int
	}{
		{"after the reached injection", 2, 1, 1},
		{"after the injection that did not reach", 10, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := &checker.Result{FaultWindows: []checker.FaultWindow{
				{Fault: "kill", StartS: 1, Moment: "held", Reached: true},
				{Fault: "kill", StartS: 9, Moment: "held"},
			}, DoubleHolderList: []checker.DoubleHolder{{Start: int64(c.grantAfterS * 1e9), DoubleGrant: true}}}
			tr := &Trial{Record: Record{Status: StatusOK}, Result: res, Unit: "fault"}
			events := []history.Event{
				{Time: 1e9, Process: history.Nemesis, Type: history.Info, F: "kill"},
				{Time: 9e9, Process: history.Nemesis, Type: history.Info, F: "kill"},
			}
			tr.fromResult(events, f)
			cs := Combine(Cell{Config: Config{Name: "none"}, Fault: f}, []*Trial{tr})
			if cs.Hits != c.hits || cs.ReachedHits != c.reached || cs.Reached != 1 || cs.PReached == nil || *cs.PReached != float64(c.reached) {
				t.Fatalf("hits %d, reached hits %d of %d reached, P|reached %v; want %d, %d of 1", cs.Hits, cs.ReachedHits, cs.Reached, cs.PReached, c.hits, c.reached)
			}
		})
	}
}

// TestOrphanedColumn: a cell pools its trials' orphaned spans, and says
// so only when every trial was checked by code that measures them (a
// results.json from before has no ownership.orphaned at all).
func TestOrphanedColumn(t *testing.T) {
	f, err := LookupFault("kill-primary")
	if err != nil {
		t.Fatal(err)
	}
	trial := func(spans []checker.OrphanedSpan) *Trial {
		res := &checker.Result{}
		res.Ownership.Orphaned = spans
		tr := &Trial{Record: Record{Status: StatusOK}, Result: res, Unit: f.Unit()}
		tr.fromResult(nil, f)
		return tr
	}
	none := []checker.OrphanedSpan{}
	two := []checker.OrphanedSpan{{Key: "k", Ms: 300}, {Key: "k", Ms: 900}}
	cases := []struct {
		name   string
		trials []*Trial
		want   string // in the liveness column
		absent string
	}{
		{"none orphaned", []*Trial{trial(none), trial(none)}, "; 0 orphaned spans", "orphaned span(s)"},
		{"two spans in one trial", []*Trial{trial(two), trial(none)}, "; 2 orphaned span(s) (in 1 trial(s)), p50 300 / max 900 ms", "0 orphaned"},
		{"a trial checked before the measure", []*Trial{trial(two), trial(nil)}, "", "orphaned"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := Combine(Cell{Config: Config{Name: "none"}, Fault: f}, c.trials)
			col := liveness(&cs)
			if !strings.Contains(col, c.want) || strings.Contains(col, c.absent) {
				t.Fatalf("liveness column %q: want %q, not %q", col, c.want, c.absent)
			}
		})
	}
}
