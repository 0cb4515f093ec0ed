package checker

import (
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
)

// The two ownership checks on hand-made histories: a grant reported already
// expired, and a second grant to the token that holds the lock while its
// lease is certainly alive. A release between, a lease that may have run
// out, another token, or a validity left over are no finding.
func TestOwnership(t *testing.T) {
	acqV := func(h *hb, p int, tok string, call, ret float64, validityMs int64) *hb {
		return h.op(p, history.Event{F: history.FAcquire, Token: tok, TTLMs: 1000}, call, ret, ok, history.Event{Fence: 1, ValidityMs: validityMs})
	}
	cases := []struct {
		name               string
		h                  *hb
		expired, regranted int
	}{
		{"one grant, validity left", acqV(newHB(), 0, "A", 10, 11, 990), 0, 0},
		{"one grant, no validity reported", newHB().acq(0, "A", 1000, 10, 11, ok, 1), 0, 0},
		{"handed already expired", acqV(newHB(), 0, "A", 10, 11, -3), 1, 0},
		{"granted again to its holder", newHB().acq(0, "A", 1000, 10, 11, ok, 1).acq(0, "A", 1000, 100, 101, ok, 2), 0, 1},
		{"extended, then granted again", newHB().acq(0, "A", 1000, 10, 11, ok, 1).ext(0, "A", 1000, 900, 901, ok).acq(0, "A", 1000, 1500, 1501, ok, 2), 0, 1},
		{"released between", newHB().acq(0, "A", 1000, 10, 11, ok, 1).rel(0, "A", 50, 51, ok).acq(0, "A", 1000, 100, 101, ok, 2), 0, 0},
		{"a failed release between still holds", newHB().acq(0, "A", 1000, 10, 11, ok, 1).rel(0, "A", 50, 51, history.Fail).acq(0, "A", 1000, 100, 101, ok, 2), 0, 1},
		{"after the lease may have run out", newHB().acq(0, "A", 1000, 10, 11, ok, 1).acq(0, "A", 1000, 1005, 1011, ok, 2), 0, 0},
		{"another token", newHB().acq(0, "A", 1000, 10, 11, ok, 1).rel(0, "A", 50, 51, ok).acq(1, "B", 1000, 100, 101, ok, 2), 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Check(c.h.build(), nil, Options{Marks: testMarks})
			if err != nil {
				t.Fatal(err)
			}
			o := r.Ownership
			if len(o.ExpiredOnArrival) != c.expired || len(o.Regranted) != c.regranted {
				t.Fatalf("expired on arrival %d, regranted %d; want %d, %d: %+v", len(o.ExpiredOnArrival), len(o.Regranted), c.expired, c.regranted, o)
			}
			want := Valid
			if c.expired+c.regranted > 0 {
				want = Invalid
			}
			if o.Valid != want || (want == Invalid && r.Valid != Invalid) {
				t.Fatalf("ownership %v (run %v), want %v", o.Valid, r.Valid, want)
			}
		})
	}
}
