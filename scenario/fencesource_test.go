package scenario

import (
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
)

// failover-race with numbers from the database: the stale holder must be the
// one turned away and the counter must not regress; the demo's outcome (the
// newer holder turned away) fails that expectation, and sql-lease-restart
// refuses a double grant and a run that never lost its lock service.
func TestFenceSourceExpectations(t *testing.T) {
	base := func() *checker.Result {
		return &checker.Result{Valid: checker.Invalid, Lock: checker.LockResult{Valid: checker.Invalid},
			Resource:    checker.ResourceResult{Valid: checker.Valid},
			Violations:  []checker.Violation{{Kind: "double-grant", Cause: "failover", Affects: "lock"}},
			StaleWrites: checker.StaleWrites{Attempted: 1, Rejected: 1}, DoubleHolders: 1,
			DoubleHolderList: []checker.DoubleHolder{{StaleTurnedAway: "write", FenceSource: "resource"}}}
	}
	s, _ := Get("failover-race")
	ps := s.Expected(Knobs{Recipe: "native", Fenced: true, FenceSource: "resource"})
	if ok, saw := Holds(ps, base()); !ok {
		t.Errorf("the stale holder turned away does not satisfy the expectation: %v", saw)
	}
	// The demo's outcome: the newer holder turned away because the failover
	// set the counter back.
	demo := base()
	demo.DoubleHolderList = []checker.DoubleHolder{{NewTurnedAway: "read"}}
	demo.FenceTokens = checker.FenceTokens{Regressions: 1}
	if ok, _ := Holds(ps, demo); ok {
		t.Error("the demo's outcome satisfies the --fence-source resource expectation")
	}
	// An older holder that stalled before asking for its number: the newer
	// holder turned away once, numbers never set back, the stale one turned
	// away elsewhere: the database did its part.
	stall := base()
	stall.DoubleHolderList = append(stall.DoubleHolderList, checker.DoubleHolder{NewTurnedAway: "write", FenceSource: "resource"})
	if ok, saw := Holds(ps, stall); !ok {
		t.Errorf("a stall before the number request fails the expectation: %v", saw)
	}
	regress := base()
	regress.FenceTokens = checker.FenceTokens{Regressions: 1}
	if ok, _ := Holds(ps, regress); ok {
		t.Error("a fence regression satisfies the --fence-source resource expectation")
	}

	lease, _ := Get("sql-lease-restart")
	if lease.Recipe != "sql-lease" {
		t.Fatalf("sql-lease-restart recipe %q", lease.Recipe)
	}
	good := &checker.Result{Valid: checker.Valid, Lock: checker.LockResult{Valid: checker.Valid},
		Resource: checker.ResourceResult{Valid: checker.Valid},
		Ops:      map[string]*checker.OpCounts{"acquire": {OK: 50, Fail: 900, Info: 300}}}
	if ok, saw := Holds(lease.Expected(Knobs{}), good); !ok {
		t.Errorf("a valid run with unanswered acquires fails sql-lease-restart: %v", saw)
	}
	never := *good
	never.Ops = map[string]*checker.OpCounts{"acquire": {OK: 50, Fail: 900}}
	if ok, _ := Holds(lease.Expected(Knobs{}), &never); ok {
		t.Error("a run whose lock never went down satisfies sql-lease-restart")
	}
	if ok, _ := Holds(lease.Expected(Knobs{}), base()); ok {
		t.Error("a double grant satisfies sql-lease-restart")
	}
}
