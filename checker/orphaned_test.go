package checker

import (
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
)

func (h *hb) refused(p int, tok string, call, ret float64) *hb {
	return h.op(p, history.Event{F: history.FAcquire, Token: tok, TTLMs: 1000}, call, ret, fail,
		history.Event{Error: "SET NX PX: held by another client"})
}

// endSession ends client 0's session on lock:{job} at ms, healed 20 ms on
// (the test mark of revoke_test.go).
func endSession(h *hb, at float64) *hb {
	h.events = append(h.events, history.Event{Process: history.Nemesis, Type: history.Info, F: "test-end-session",
		Node: "pg-0", Key: "lock:{job}", Client: 0, Time: ms2ns(at)},
		history.Event{Process: history.Nemesis, Type: history.Info, F: "test-session-gone", Node: "pg-0", Time: ms2ns(at + 20)})
	return h
}

// Orphaned spans on hand-made histories: a refusal while some client
// believed it held the key, or while another acquire was in flight, is the
// lock working; a refusal after the only token's owner let go of it (a
// release whose reply was lost, an acquire that timed out) is orphaned,
// and a grant ends the span. None changes the verdict.
func TestOrphaned(t *testing.T) {
	cases := []struct {
		name    string
		h       *hb
		spans   int
		refused int     // in the first span
		ms      float64 // the first span's length
		leftBy  string  // the first span's newest candidate: f/outcome
	}{
		{name: "refused while held", h: newHB().acq(0, "A", 1000, 10, 11, ok, 1).refused(1, "B", 20, 21).rel(0, "A", 50, 51, ok)},
		{name: "refused during a slow ok release", h: newHB().acq(0, "A", 1000, 10, 11, ok, 1).rel(0, "A", 50, 80, ok).refused(1, "B", 60, 61)},
		{name: "refused while the holder's unreleased lease may live", h: newHB().acq(0, "A", 1000, 10, 11, ok, 1).refused(1, "B", 900, 901).refused(1, "B2", 1005, 1006)},
		{name: "refused during another acquire in flight", h: newHB().acq(2, "C", 1000, 100, 140, fail, 0).refused(1, "B", 110, 111)},
		{name: "released with its reply lost", h: newHB().acq(0, "A", 1000, 10, 11, ok, 1).rel(0, "A", 50, 60, info).
			refused(1, "B", 100, 101).refused(1, "B2", 400, 402),
			spans: 1, refused: 2, ms: 302, leftBy: "release/info"},
		{name: "acquire timed out, then walked away", h: newHB().acq(0, "A", 1000, 10, 60, info, 0).
			refused(1, "B", 300, 301).refused(2, "C", 600, 601).refused(1, "B2", 900, 901),
			spans: 1, refused: 3, ms: 601, leftBy: "acquire/info"},
		{name: "a grant ends the span", h: newHB().acq(0, "A", 1000, 10, 60, info, 0).
			refused(1, "B", 300, 301).acq(2, "C", 1000, 1100, 1101, ok, 2).rel(2, "C", 1200, 1201, ok).
			acq(3, "D", 1000, 1300, 1350, info, 0).refused(1, "B2", 1500, 1501),
			spans: 2, refused: 1, ms: 1, leftBy: "acquire/info"},
		{name: "refusals overlapping each other explain nothing", h: newHB().acq(0, "A", 1000, 10, 60, info, 0).
			refused(1, "B", 300, 340).refused(2, "C", 310, 350),
			spans: 1, refused: 2, ms: 50, leftBy: "acquire/info"},
		{name: "Redlock attempts that split the votes explain each other", h: newHB().
			op(1, history.Event{F: history.FAcquire, Token: "B", TTLMs: 1000}, 300, 340, fail, history.Event{Error: "redlock acquire: 2 OK, 3 refused, 0 unknown, 0 unreachable of 5 nodes, quorum 3"}).
			op(2, history.Event{F: history.FAcquire, Token: "C", TTLMs: 1000}, 310, 350, fail, history.Event{Error: "redlock acquire: 2 OK, 3 refused, 0 unknown, 0 unreachable of 5 nodes, quorum 3"})},
		{name: "a lock that never expires, held", h: newHB().acqNoExpiry(0, "A", 1000, 10, 11).refused(1, "B", 3000, 3001)},
		{name: "refused after a session's end, with nothing left behind", h: endSession(newHB().acqNoExpiry(0, "A", 1000, 10, 11), 100).
			refused(1, "B", 3000, 3001)},
		{name: "refused with no holder while others were refused: nothing left behind", h: newHB().acq(0, "A", 1000, 10, 11, ok, 1).rel(0, "A", 50, 51, ok).
			refused(1, "B", 300, 340).refused(2, "C", 310, 350)},
		{name: "a timed-out acquire cleaned up after is no candidate", h: newHB().acq(0, "A", 1000, 10, 11, ok, 1).
			op(0, history.Event{F: history.FRelease, Token: "A"}, 50, 51, fail, history.Event{Error: "DELIFEQ: READONLY You can't write against a read only replica."}).
			acq(2, "C", 1000, 60, 70, info, 0).
			op(2, history.Event{F: history.FRelease, Token: "C"}, 80, 81, fail, history.Event{Error: "DELIFEQ returned 0: the lock expired or another client holds it (not held)"}).
			refused(1, "B", 300, 301),
			spans: 1, refused: 1, ms: 1, leftBy: "release/fail"},
		{name: "a refusal for another reason is not counted", h: newHB().acq(0, "A", 1000, 10, 60, info, 0).
			op(1, history.Event{F: history.FAcquire, Token: "B", TTLMs: 1000}, 300, 301, fail, history.Event{Error: "NOREPLICAS Not enough good replicas to write."})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Check(c.h.build(), nil, Options{Marks: testMarks})
			if err != nil {
				t.Fatal(err)
			}
			o := r.Ownership.Orphaned
			if len(o) != c.spans {
				t.Fatalf("%d orphaned span(s), want %d: %+v", len(o), c.spans, o)
			}
			if r.Ownership.Valid != Valid {
				t.Fatalf("ownership %v: orphaned spans are a measure, not a verdict", r.Ownership.Valid)
			}
			if c.spans == 0 {
				return
			}
			s := o[0]
			if s.Refused != c.refused || s.Ms < c.ms-0.5 || s.Ms > c.ms+0.5 {
				t.Fatalf("first span %d refused over %.1f ms, want %d over %.0f: %+v", s.Refused, s.Ms, c.refused, c.ms, s)
			}
			if len(s.LeftBy) == 0 || s.LeftBy[0].F+"/"+string(s.LeftBy[0].Outcome) != c.leftBy {
				t.Fatalf("left by %+v, want %s first", s.LeftBy, c.leftBy)
			}
		})
	}
}
