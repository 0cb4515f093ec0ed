package checker

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/lockjepsen/lockjepsen/history"
)

// lockLinearizable runs the lock model alone, without the direct check.
func lockLinearizable(t *testing.T, h *hb) bool {
	t.Helper()
	ops, _, err := splitHistory(h.build())
	if err != nil {
		t.Fatal(err)
	}
	var live []*Op
	for i := range ops {
		if isLockOp(&ops[i]) && ops[i].Outcome != fail {
			live = append(live, &ops[i])
		}
	}
	m := modelFrom(lockState{holder: free, now: math.MinInt64}, simStart)
	return porcupine.CheckOperations(m, toOperations(live, 10e6))
}

func TestLockModel(t *testing.T) {
	cases := []struct {
		name string
		h    *hb
		want bool
	}{
		{"sequential", newHB().acq(0, "A", 100, 0, 1, ok, 0).rel(0, "A", 2, 3, ok).acq(1, "B", 100, 4, 5, ok, 0), true},
		{"grant after expiry", newHB().acq(0, "A", 100, 0, 1, ok, 0).acq(1, "B", 100, 200, 201, ok, 0), true},
		{"grant within epsilon of expiry", newHB().acq(0, "A", 100, 0, 1, ok, 0).acq(1, "B", 100, 95, 96, ok, 0), true},
		{"double grant", newHB().acq(0, "A", 100, 0, 1, ok, 0).acq(1, "B", 100, 50, 51, ok, 0), false},
		// Without the model's notion of "now", C's unknown acquire could be
		// placed between A's and B's grants and explain B's.
		{"unknown acquire does not launder", newHB().acq(0, "A", 1000, 0, 1, ok, 0).acq(2, "C", 1000, 5, 50, info, 0).acq(1, "B", 1000, 10, 11, ok, 0), false},
		{"unknown release may free", newHB().acq(0, "A", 1000, 0, 1, ok, 0).rel(0, "A", 5, 50, info).acq(1, "B", 1000, 10, 11, ok, 0), true},
		{"release by non-holder", newHB().acq(0, "A", 1000, 0, 1, ok, 0).rel(1, "B", 5, 6, ok), false},
		{"release after own expiry", newHB().acq(0, "A", 100, 0, 1, ok, 0).rel(0, "A", 500, 501, ok), false},
		{"extend keeps lease", newHB().acq(0, "A", 100, 0, 1, ok, 0).ext(0, "A", 100, 80, 81, ok).acq(1, "B", 100, 150, 151, ok, 0), false},
		{"extend then expiry", newHB().acq(0, "A", 100, 0, 1, ok, 0).ext(0, "A", 100, 80, 81, ok).acq(1, "B", 100, 190, 191, ok, 0), true},
		{"unknown extend may prolong", newHB().acq(0, "A", 100, 0, 1, ok, 0).ext(0, "A", 100, 80, 90, info).rel(100, "A", 150, 151, ok), true},
		// A server that never expires a lock (PostgreSQL's advisory locks)
		// answers a late unlock ok; a grant to another client in between
		// still makes it one no server allows.
		{"unexpiring: release after the client's lease", newHB().acqNoExpiry(0, "A", 100, 0, 1).rel(0, "A", 500, 501, ok), true},
		{"unexpiring: extend after the client's lease", newHB().acqNoExpiry(0, "A", 100, 0, 1).extNoExpiry(0, "A", 100, 300, 301).rel(0, "A", 900, 901, ok), true},
		{"unexpiring: double grant", newHB().acqNoExpiry(0, "A", 100, 0, 1).acqNoExpiry(1, "B", 100, 50, 51), false},
		{"unexpiring: release after a regrant", newHB().acqNoExpiry(0, "A", 100, 0, 1).acqNoExpiry(1, "B", 100, 200, 201).rel(0, "A", 500, 501, ok), false},
	}
	for _, c := range cases {
		if got := lockLinearizable(t, c.h); got != c.want {
			t.Errorf("%s: linearizable %v, want %v", c.name, got, c.want)
		}
	}
}

// acqNoExpiry and extNoExpiry are an ok acquire and extend on a server
// that never expires the lock (the history's expiry none).
func (h *hb) acqNoExpiry(p int, tok string, ttl int64, call, ret float64) *hb {
	return h.op(p, history.Event{F: history.FAcquire, Token: tok, TTLMs: ttl, Expiry: history.ExpiryNone}, call, ret, ok, history.Event{})
}

func (h *hb) extNoExpiry(p int, tok string, ttl int64, call, ret float64) *hb {
	return h.op(p, history.Event{F: history.FExtend, Token: tok, TTLMs: ttl, Expiry: history.ExpiryNone}, call, ret, ok, history.Event{})
}

// TestUnexpiringLockLateUnlockIsValid: the whole check, not the model
// alone, reads an unlock after the client's own lease on a server that
// never expires the lock as valid; the same history on a TTL server is a
// violation.
func TestUnexpiringLockLateUnlockIsValid(t *testing.T) {
	for _, c := range []struct {
		name string
		h    *hb
		want Validity
	}{
		{"never expires", newHB().acqNoExpiry(0, "A", 100, 0, 1).rel(0, "A", 500, 501, ok), Valid},
		{"expires after its TTL", newHB().acq(0, "A", 100, 0, 1, ok, 0).rel(0, "A", 500, 501, ok), Invalid},
	} {
		r, err := Check(c.h.build(), nil, Options{Marks: testMarks})
		if err != nil {
			t.Fatal(err)
		}
		if r.Lock.Valid != c.want {
			t.Errorf("%s: lock %s, want %s", c.name, r.Lock.Valid, c.want)
		}
	}
}

func TestSegmentsAgreeWithWhole(t *testing.T) {
	events, _, _ := simulate(simConfig{Seed: 7, Clients: 8, Keys: 1, Events: 6000, TTLms: 200, PInfo: 0.02, PPause: 0.02})
	ops, _, err := splitHistory(events)
	if err != nil {
		t.Fatal(err)
	}
	byK, keys := byKey(ops, isLockOp)
	var live []*Op
	for _, o := range byK[keys[0]] {
		if o.Outcome != fail {
			live = append(live, o)
		}
	}
	segs := lockSegments(live, 50)
	if len(segs) < 5 {
		t.Fatalf("only %d segments", len(segs))
	}
	for i, s := range segs {
		if !porcupine.CheckOperations(modelFrom(s.init, simStart), toOperations(s.ops, 10e6)) {
			t.Fatalf("segment %d of a correct history is not linearizable", i)
		}
	}
}
