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
			r, err := Check(events, as, Options{Marks: testMarks})
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
		if !s.Injected {
			t.Logf("seed %d: no moment to inject", seed)
			continue
		}
		r, err := Check(events, nil, Options{Marks: testMarks})
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

// An unfenced resource under paused holders: their stale writes land. The
// resource is invalid exactly when some accepted write did not raise the
// value; each lost update pairs two clients whose sections overlapped, each
// rewind is a write that really lowered the value, and none is counted twice.
func TestPropertyUnfencedStaleWritesAreRewindsAndLostUpdates(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 10
	}
	totalRewinds := 0
	for seed := int64(1); seed <= int64(n); seed++ {
		cfg := simConfig{Seed: seed, Clients: 2 + int(seed%7), Keys: 1, Events: 3000,
			TTLms: 50 + seed%5*50, PInfo: 0, PPause: 0.08, Unfenced: true}
		events, attempts, s := simulate(cfg)
		r, err := Check(events, attempts, Options{Marks: testMarks})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		wantInvalid := s.Rewinds+s.Repeats > 0
		if (r.Resource.Valid == Invalid) != wantInvalid {
			t.Fatalf("seed %d: resource %v, but the simulated value went back %d times and repeated %d times", seed, r.Resource.Valid, s.Rewinds, s.Repeats)
		}
		if r.Resource.Rewinds > s.Rewinds {
			t.Errorf("seed %d: %d rewinds found, the value really went back %d times", seed, r.Resource.Rewinds, s.Rewinds)
		}
		if r.Resource.LostUpdates > s.Repeats+s.Rewinds {
			t.Errorf("seed %d: %d lost updates found, only %d accepted writes did not raise the value", seed, r.Resource.LostUpdates, s.Repeats+s.Rewinds)
		}
		for _, v := range r.Violations {
			if v.Start > v.End {
				t.Errorf("seed %d: %s starts at %d after its end %d", seed, v.Kind, v.Start, v.End)
			}
			if v.Kind == "lost-update" && (v.Clients[0] == v.Clients[1] || v.Tokens[0] == v.Tokens[1]) {
				t.Errorf("seed %d: a lost update pairs client %d with itself", seed, v.Clients[0])
			}
		}
		totalRewinds += r.Resource.Rewinds
	}
	if totalRewinds == 0 {
		t.Fatal("no rewind in any seed: the generator no longer makes one")
	}
}
