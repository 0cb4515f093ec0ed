package redlock

import (
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// redlock-partition-minority asks for grants inside every partition window:
// a run whose lock stayed valid but which granted nothing while the nodes
// were cut off fails it, as does one that logged no partition at all.
func TestGrantsDuringPartition(t *testing.T) {
	s, err := scenario.Get("redlock-partition-minority")
	if err != nil {
		t.Fatal(err)
	}
	ps := s.Expected(scenario.Knobs{Recipe: "redlock"})
	valid := func(ws ...checker.FaultWindow) *checker.Result {
		return &checker.Result{Valid: checker.Valid, Lock: checker.LockResult{Valid: checker.Valid},
			Resource: checker.ResourceResult{Valid: checker.Valid}, FaultWindows: ws}
	}
	if ok, saw := scenario.Holds(ps, valid(checker.FaultWindow{Fault: "isolate-node", Node: "valkey-2", Grants: 8},
		checker.FaultWindow{Fault: "isolate-node", Node: "valkey-3", Grants: 7})); !ok {
		t.Errorf("grants in both windows: %v", saw)
	}
	if ok, _ := scenario.Holds(ps, valid(checker.FaultWindow{Fault: "isolate-node", Node: "valkey-2", Grants: 8},
		checker.FaultWindow{Fault: "isolate-node", Node: "valkey-3"})); ok {
		t.Error("a window without a grant satisfies the expectation")
	}
	if ok, _ := scenario.Holds(ps, valid()); ok {
		t.Error("a run with no partition satisfies the expectation")
	}
}
