package shrink

import (
	"errors"
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
)

// revokedStaleWrite: A holds, the server ends A's session (a release, as
// the contract says), B is granted, and A, not knowing, writes once before
// B's first fenced read. The lock and the resource are valid; the stale
// write accepted is a finding that changes no verdict, and a sweep cell is
// red for it. Two more clients come and go before, which shrink drops.
func revokedStaleWrite() *Run {
	ms := func(t float64) int64 { return int64(t * 1e6) }
	var evs []history.Event
	v := func(n int64) *int64 { return &n }
	op := func(p int, f, tok string, fence int64, call, done float64, extra history.Event) {
		e := extra
		e.Process, e.Client, e.F, e.Key, e.Token, e.Fence = history.Process(p), p, f, "lock:{job}", tok, fence
		inv := e
		inv.Type, inv.Time = history.Invoke, ms(call)
		inv.Verdict = ""
		if f == history.FRead {
			inv.Value = nil // a read learns its value; a write sends it
		}
		evs = append(evs, inv)
		e.Type, e.Time = history.OK, ms(done)
		evs = append(evs, e)
	}
	acq := func(p int, tok string, fence int64, at float64) {
		op(p, history.FAcquire, tok, 0, at, at+1, history.Event{TTLMs: 1000, Fence: fence})
	}
	acq(2, "C", 1, 1)
	op(2, history.FRelease, "C", 0, 3, 4, history.Event{})
	acq(3, "D", 2, 5)
	op(3, history.FRelease, "D", 0, 7, 8, history.Event{})
	acq(0, "A", 3, 10)
	op(0, history.FRead, "A", 3, 12, 13, history.Event{Value: v(0), Verdict: history.Accepted})
	evs = append(evs,
		history.Event{Process: history.Nemesis, Type: history.Info, F: "test-end-session", Node: "pg-0", Key: "lock:{job}", Client: 0, Time: ms(100)},
		history.Event{Process: history.Nemesis, Type: history.Info, F: "test-session-gone", Node: "pg-0", Time: ms(120)})
	acq(1, "B", 4, 200)
	op(0, history.FWrite, "A", 3, 203, 204, history.Event{Value: v(1), Verdict: history.Accepted})
	op(1, history.FRead, "B", 4, 210, 211, history.Event{Value: v(1), Verdict: history.Accepted})
	op(1, history.FWrite, "B", 4, 212, 213, history.Event{Value: v(2), Verdict: history.Accepted})
	op(1, history.FRelease, "B", 0, 220, 221, history.Event{})
	for i := range evs {
		evs[i].Index = int64(i)
	}
	return &Run{Events: evs}
}

func TestShrinkAFindingThatChangesNoVerdict(t *testing.T) {
	r := revokedStaleWrite()
	whole, err := checker.Check(r.Events, nil, checker.Options{Marks: testMarks})
	if err != nil {
		t.Fatal(err)
	}
	if whole.Valid != checker.Valid || whole.StaleWrites.Accepted != 1 {
		t.Fatalf("the history checks %v with %d stale writes accepted; want valid with 1: %+v", whole.Valid, whole.StaleWrites.Accepted, whole.Violations)
	}
	// With no kind asked for there is nothing to shrink: the run is valid.
	if _, err := Shrink(r, Options{Check: checker.Options{Marks: testMarks}}); !errors.Is(err, ErrValid) {
		t.Fatalf("no kind: %v, want %v", err, ErrValid)
	}
	res, err := Shrink(r, Options{Check: checker.Options{Marks: testMarks}, Kind: "stale-write-accepted"})
	if err != nil {
		t.Fatalf("--kind stale-write-accepted: %v", err)
	}
	if err := res.Verify(r, checker.Options{Marks: testMarks}); err != nil {
		t.Fatal(err)
	}
	// The shrunk run tells the same story: valid, the stale write let in.
	// Without the revocation's events it would read as a double grant.
	shrunk, err := checker.Check(res.Shrunk.Events, nil, checker.Options{Marks: testMarks})
	if err != nil {
		t.Fatal(err)
	}
	if shrunk.Valid != checker.Valid || shrunk.StaleWrites.Accepted != 1 {
		t.Fatalf("the shrunk run checks %v with %d stale writes accepted; want valid with 1: %+v", shrunk.Valid, shrunk.StaleWrites.Accepted, shrunk.Violations)
	}
	if got, was := len(res.Shrunk.Events), len(r.Events); got >= was {
		t.Fatalf("shrunk to %d events of %d: clients C and D had nothing to do with it", got, was)
	}
}
