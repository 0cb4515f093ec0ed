package checker

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/lockjepsen/lockjepsen/history"
)

// A crashed run's history.jsonl is not sorted: each process's events are in
// order, the processes interleave anyhow. The Builder streams the file as it
// stands, so its History must judge exactly what Check judges on the sorted
// events (results.json byte for byte), and its Replay must give the sorted
// events back in the same order.
func TestStreamedHistoryMatchesSorted(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		cfg := simConfig{Seed: seed, Clients: 3 + int(seed%6), Keys: 1 + int(seed%3), Events: 4000,
			TTLms: 50 + seed%5*50, PInfo: 0.03, PPause: 0.05, Inject: seed%2 == 0}
		if seed%3 == 0 {
			cfg = simConfig{Seed: seed, Clients: 8, Keys: 2, Events: 1 << 30, Until: int64(8e9), TTLms: 1000,
				PInfo: 0.001, PPause: 0.005, Failovers: 2, FailEvery: int64(3e9)}
		}
		sorted, attempts, _ := simulate(cfg)
		want, err := Check(sorted, attempts, Options{Marks: testMarks})
		if err != nil {
			t.Fatal(err)
		}
		// All of process 0's events, then process 1's, ...: the most
		// shuffled file a process-by-process writer could leave.
		file := slices.Clone(sorted)
		slices.SortStableFunc(file, func(a, b history.Event) int { return int(a.Process) - int(b.Process) })
		b := NewBuilder()
		for i := range file {
			if err := b.Add(&file[i]); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
		idx := NewAttemptIndex()
		for i := range attempts {
			idx.Add(&attempts[i])
		}
		h := b.History()
		got := CheckHistory(h, idx, Options{Marks: testMarks})
		wj, gj := withoutTimes(t, want), withoutTimes(t, got)
		if wj != gj {
			t.Fatalf("seed %d: streamed history judged differently\nsorted:   %s\nstreamed: %s", seed, wj, gj)
		}
		if h.Sorted() || h.Len() != len(sorted) || h.Start() != sorted[0].Time || h.End() != sorted[len(sorted)-1].Time {
			t.Fatalf("seed %d: sorted %v, %d events from %d to %d", seed, h.Sorted(), h.Len(), h.Start(), h.End())
		}
		i := 0
		for e := range h.Replay() {
			s := sorted[i]
			if e.Index != s.Index || e.Time != s.Time || e.Process != s.Process || e.Type != s.Type || e.F != s.F ||
				e.Key != s.Key || e.Token != s.Token || e.Verdict != s.Verdict {
				t.Fatalf("seed %d: replayed event %d is %+v, want %+v", seed, i, e, s)
			}
			i++
		}
		if i != len(sorted) {
			t.Fatalf("seed %d: replayed %d events of %d", seed, i, len(sorted))
		}
	}
}

// withoutTimes is a result's JSON without the check_ms timings.
func withoutTimes(t *testing.T, r *Result) string {
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var strip func(any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "check_ms")
			for _, y := range x {
				strip(y)
			}
		case []any:
			for _, y := range x {
				strip(y)
			}
		}
	}
	strip(v)
	b, _ = json.Marshal(v)
	return string(b)
}
