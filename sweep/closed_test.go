package sweep

import (
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
)

// TestClosedOpportunities: an injection whose wait ended at the replication
// guard's refusal (history.NClosedBySetting) is an opportunity like any
// other, in P's denominator, counted once as closed; a double grant after it
// still counts as a hit (the checker judged it, nothing is assumed); a
// closed wait whose kill the trial's end cut short made no failover and is
// no opportunity.
func TestClosedOpportunities(t *testing.T) {
	nem := func(at int64, f string) history.Event {
		return history.Event{Time: at, Process: history.Nemesis, Type: history.Info, F: f, Node: "valkey-0", Role: "primary"}
	}
	cut, kill, closed, failover := "cut-replication", "kill", history.NClosedBySetting, history.NFailover
	for _, tc := range []struct {
		name         string
		events       []history.Event
		failovers    int
		doubleAt     []int64 // second grants of double grants
		opps, closed int
		hits         int
		closedHits   int
	}{
		{name: "every wait closed, no double grant",
			events:    []history.Event{nem(100, cut), nem(110, closed), nem(300, kill), nem(500, failover), nem(1000, cut), nem(1001, closed), nem(1200, kill), nem(1400, failover)},
			failovers: 2, opps: 2, closed: 2},
		{name: "a closed wait beside a grant that double-granted",
			events:    []history.Event{nem(100, cut), nem(300, kill), nem(500, failover), nem(1000, cut), nem(1001, closed), nem(1200, kill), nem(1400, failover)},
			failovers: 2, doubleAt: []int64{600}, opps: 2, closed: 1, hits: 1},
		{name: "a double grant after a closed wait is a hit all the same",
			events:    []history.Event{nem(100, cut), nem(110, closed), nem(300, kill), nem(500, failover)},
			failovers: 1, doubleAt: []int64{600}, opps: 1, closed: 1, hits: 1, closedHits: 1},
		{name: "two refusals logged in one wait close it once",
			events:    []history.Event{nem(100, cut), nem(110, closed), nem(120, closed), nem(300, kill), nem(500, failover)},
			failovers: 1, opps: 1, closed: 1},
		{name: "the trial ended before the closed wait's failover",
			events:    []history.Event{nem(100, cut), nem(110, closed), nem(300, kill), nem(500, failover), nem(1000, cut), nem(1001, closed)},
			failovers: 1, opps: 1, closed: 1},
		{name: "a refusal before any injection closes nothing",
			events:    []history.Event{nem(50, closed), nem(100, cut), nem(300, kill), nem(500, failover)},
			failovers: 1, opps: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := LookupFault("link-down")
			if err != nil {
				t.Fatal(err)
			}
			res := &checker.Result{Failovers: tc.failovers}
			for _, at := range tc.doubleAt {
				res.DoubleHolderList = append(res.DoubleHolderList, checker.DoubleHolder{Start: at, DoubleGrant: true, StaleWrite: "none"})
			}
			tr := &Trial{Record: Record{Status: StatusOK}, Result: res, Unit: f.Unit()}
			tr.fromResult(tc.events, f)
			if tr.Opportunities != tc.opps || tr.Closed != tc.closed || tr.Hit != tc.hits || tr.ClosedHit != tc.closedHits {
				t.Errorf("opportunities %d, closed %d, hits %d, closed hits %d; want %d %d %d %d",
					tr.Opportunities, tr.Closed, tr.Hit, tr.ClosedHit, tc.opps, tc.closed, tc.hits, tc.closedHits)
			}
			cs := Combine(Cell{Config: Config{Name: "wait-1-100ms"}, Fault: f}, []*Trial{tr})
			lo, hi := Wilson(tc.hits, tc.opps, Z95)
			if cs.Opportunities != tc.opps || cs.Closed != tc.closed || cs.ClosedHits != tc.closedHits || cs.PLow != lo || cs.PHi != hi {
				t.Errorf("cell: opportunities %d closed %d closed hits %d P [%v, %v]; want %d %d %d [%v, %v]",
					cs.Opportunities, cs.Closed, cs.ClosedHits, cs.PLow, cs.PHi, tc.opps, tc.closed, tc.closedHits, lo, hi)
			}
		})
	}
}
