package checker

import (
	"testing"
)

// A correct lease server never yields an invalid verdict, whatever the
// clients do: pauses past the lease, lost replies, crashes mid-operation.
// The same server with one injected double grant always does.
func TestPropertyCorrectServerIsValid(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 10
	}
	for seed := int64(1); seed <= int64(n); seed++ {
		cfg := simConfig{Seed: seed, Clients: 2 + int(seed%9), Keys: 1 + int(seed%3), Events: 3000,
			TTLms: 50 + seed%5*50, PInfo: 0.03, PPause: 0.05}
		events, attempts, _ := simulate(cfg)
		for _, withLog := range []bool{false, true} {
			as := attempts
			if !withLog {
				as = nil
			}
			r, err := Check(events, as, Options{})
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if r.Valid != Valid {
				b, _ := r.MarshalIndent()
				t.Fatalf("seed %d (log %v): correct server judged %v\n%s", seed, withLog, r.Valid, b)
			}
		}
	}
}

func TestPropertyInjectedDoubleGrantIsInvalid(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 10
	}
	for seed := int64(1); seed <= int64(n); seed++ {
		cfg := simConfig{Seed: seed, Clients: 2 + int(seed%9), Keys: 1 + int(seed%3), Events: 3000,
			TTLms: 100 + seed%5*50, PInfo: 0.03, PPause: 0.05, Inject: true}
		events, _, s := simulate(cfg)
		if !s.injected {
			t.Logf("seed %d: no moment to inject", seed)
			continue
		}
		r, err := Check(events, nil, Options{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if r.Lock.Valid != Invalid || r.Valid != Invalid {
			b, _ := r.MarshalIndent()
			t.Fatalf("seed %d: injected double grant judged lock %v\n%s", seed, r.Lock.Valid, b)
		}
		found := false
		for _, v := range r.Violations {
			found = found || v.Kind == "double-grant"
		}
		if !found {
			t.Fatalf("seed %d: no double-grant violation", seed)
		}
	}
}
