package checker

import (
	"slices"
	"testing"
)

// Every kind the checker gives on generated histories with faults (injected
// double grants, failovers, unfenced stale writes) is one ViolationKinds
// names, so that shrink --kind accepts what check prints.
func TestViolationKindsNameEveryKindGiven(t *testing.T) {
	seen := map[string]bool{}
	for seed := int64(1); seed <= 6; seed++ {
		for _, cfg := range []simConfig{
			{Seed: seed, Clients: 6, Keys: 2, Events: 3000, TTLms: 150, PInfo: 0.03, PPause: 0.05, Inject: true},
			{Seed: seed, Clients: 5, Keys: 1, Events: 3000, TTLms: 100, PPause: 0.08, Unfenced: true},
			{Seed: seed, Clients: 8, Keys: 2, Events: 1 << 30, Until: 4e9, TTLms: 500, PInfo: 0.01, PPause: 0.01, Failovers: 2, FailEvery: 15e8},
		} {
			events, attempts, _ := simulate(cfg)
			r, err := Check(events, attempts, Options{Marks: testMarks})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range r.Violations {
				seen[v.Kind] = true
				if !slices.Contains(ViolationKinds, v.Kind) {
					t.Errorf("seed %d: kind %q is not in ViolationKinds", seed, v.Kind)
				}
			}
		}
	}
	t.Logf("kinds seen: %v", seen)
	if len(seen) < 5 {
		t.Errorf("only %d kinds seen (%v): the histories no longer exercise the checker", len(seen), seen)
	}
}
