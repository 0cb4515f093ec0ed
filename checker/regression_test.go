package checker

import (
	"fmt"
	"testing"
	"time"
)

// Regressions of issue 12, one hand-written history per class, with the exact
// verdict and words. Times are ms since the run's first event.
func TestVerdictRegressions(t *testing.T) {
	cases := []struct {
		name  string
		h     *hb
		opts  Options
		valid Validity
		// kind and explanation of the first violation; "" for none
		kind, explanation string
		startS            float64
		doubleHolders     int
		exposureMs        float64
		warnings          []string
	}{
		{
			name: "class 1: a shorter extend shortens the lease; a later grant is legal",
			h: newHB().acq(0, "A", 1000, 0, 1, ok, 0).ext(100, "A", 100, 10, 11, ok).
				acq(1, "B", 1000, 200, 201, ok, 0),
			valid: Valid,
		},
		{
			name: "class 1: a grant inside the shortened lease is still a double grant",
			h: newHB().acq(0, "A", 1000, 0, 1, ok, 0).ext(100, "A", 100, 10, 11, ok).
				acq(1, "B", 1000, 50, 51, ok, 0),
			valid: Invalid, kind: "double-grant", startS: 0.051, doubleHolders: 1, exposureMs: 59,
			explanation: "Client 0 and client 1 held lock:{job} at the same time: client 0's lease was certainly alive from 0.001 s to 0.105 s, yet the lock service also granted the lock to client 1 at 0.051 s. A correct lock server never grants a lock whose lease cannot have expired. No injected fault was in force at the time, which points at the lock recipe, the server, or a client slower than its lease.",
		},
		{
			name: "class 2: a token granted again after another holder is a new lease",
			h: newHB().acq(0, "A", 100, 0, 1, ok, 0).
				acq(1, "B", 100, 150, 151, ok, 0).
				acq(0, "A", 100, 300, 301, ok, 0).rel(0, "A", 350, 351, ok),
			valid: Valid,
		},
		{
			name: "class 2: a token granted again inside its own lease is a double grant",
			h: newHB().acq(0, "A", 1000, 0, 1, ok, 0).
				acq(200, "A", 1000, 10, 11, ok, 0),
			valid: Invalid, kind: "double-grant", startS: 0.011,
			explanation: "Client 0 (token A) and client 0 again (same token) held lock:{job} at the same time: client 0 (token A)'s lease was certainly alive from 0.001 s to 0.995 s, yet the lock service also granted the lock to client 0 again (same token) at 0.011 s. A correct lock server never grants a lock whose lease cannot have expired. No injected fault was in force at the time, which points at the lock recipe, the server, or a client slower than its lease.",
		},
		{
			name: "class 4: a failed, late release is not an act of a holder",
			h: newHB().acq(0, "A", 100, 0, 1, ok, 0).
				acq(1, "B", 100, 200, 201, ok, 0).
				rel(0, "A", 300, 301, fail),
			valid: Valid, doubleHolders: 0, exposureMs: 0,
		},
		{
			name:  "class 4: epsilon of half the lease or more is warned about",
			h:     newHB().acq(0, "A", 100, 0, 1, ok, 0).acq(1, "B", 100, 60, 61, ok, 0),
			opts:  Options{Marks: testMarks, Epsilon: 50 * time.Millisecond},
			valid: Valid, doubleHolders: 1, exposureMs: 39,
			warnings: []string{"epsilon 50ms is at least half the shortest lease (100ms): a lease is certain for at most half its length, so double grants go unseen; a VALID verdict proves little (use an epsilon well below TTL/2)"},
		},
		{
			name:     "class 4: a negative epsilon is warned about",
			h:        newHB().acq(0, "A", 100, 0, 1, ok, 0).rel(0, "A", 10, 11, ok),
			opts:     Options{Marks: testMarks, Epsilon: -time.Millisecond},
			valid:    Valid,
			warnings: []string{"epsilon -1ms is negative: lease bounds are narrower than a correct server guarantees, so legal histories may be judged invalid"},
		},
		{
			name: "class 5: a failed release does not end the lease",
			h: newHB().acq(0, "A", 1000, 0, 1, ok, 0).rel(0, "A", 5, 6, fail).
				acq(1, "B", 1000, 10, 11, ok, 0),
			valid: Invalid, kind: "double-grant", startS: 0.011, doubleHolders: 0,
			explanation: "Client 0 and client 1 held lock:{job} at the same time: client 0's lease was certainly alive from 0.001 s to 0.995 s, yet the lock service also granted the lock to client 1 at 0.011 s. A correct lock server never grants a lock whose lease cannot have expired. No injected fault was in force at the time, which points at the lock recipe, the server, or a client slower than its lease.",
		},
		{
			name: "class 5: two tokens of one client are named by token",
			h: newHB().acq(0, "A", 1000, 0, 1, ok, 0).
				acq(100, "B", 1000, 10, 11, ok, 0),
			valid: Invalid, kind: "double-grant", startS: 0.011, doubleHolders: 1, exposureMs: 989,
			explanation: "Client 0 (token A) and client 0 (token B) held lock:{job} at the same time: client 0 (token A)'s lease was certainly alive from 0.001 s to 0.995 s, yet the lock service also granted the lock to client 0 (token B) at 0.011 s. A correct lock server never grants a lock whose lease cannot have expired. No injected fault was in force at the time, which points at the lock recipe, the server, or a client slower than its lease.",
		},
		{
			name: "class 5: a porcupine-only violation starts at the offending operation",
			h: newHB().acq(0, "A", 1000, 0, 50, info, 0).
				ext(100, "A", 1000, 60, 61, ok).
				acq(1, "B", 1000, 100, 101, ok, 0),
			valid: Invalid, kind: "lock-not-linearizable", startS: 0.100, doubleHolders: 0,
			explanation: "No single correct lock server could have given client 1's acquire ok (token B) on lock:{job} at 0.100 s: for every outcome of the earlier operations whose outcome is unknown, the lock was not in a state that allows that reply.",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := checkExplained(c.h.build(), nil, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if r.Valid != c.valid {
				t.Errorf("valid %v, want %v", r.Valid, c.valid)
			}
			var lockViolations []Violation
			for _, v := range r.Violations {
				if v.Affects == "lock" {
					lockViolations = append(lockViolations, v)
				}
			}
			if c.kind == "" && len(lockViolations) > 0 {
				t.Errorf("violations %+v, want none", lockViolations)
			}
			if c.kind != "" {
				if len(lockViolations) == 0 {
					t.Fatalf("no violation, want %s", c.kind)
				}
				v := lockViolations[0]
				if v.Kind != c.kind || v.Explanation != c.explanation || fmt.Sprintf("%.3f", v.StartS) != fmt.Sprintf("%.3f", c.startS) {
					t.Errorf("got %s at %.3f s:\n  %s\nwant %s at %.3f s:\n  %s", v.Kind, v.StartS, v.Explanation, c.kind, c.startS, c.explanation)
				}
			}
			if r.DoubleHolders != c.doubleHolders || r.ExposureMs.Total != c.exposureMs {
				t.Errorf("double holders %d exposure %v ms, want %d and %v", r.DoubleHolders, r.ExposureMs.Total, c.doubleHolders, c.exposureMs)
			}
			if fmt.Sprint(r.Warnings) != fmt.Sprint(c.warnings) {
				t.Errorf("warnings %q, want %q", r.Warnings, c.warnings)
			}
		})
	}
}
