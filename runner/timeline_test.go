package runner

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
)

// A history too long to draw is drawn as a window that starts a little
// before the first violation that counts, and says so: timelineEvents picks
// it from the file, as check does.
func TestTimelineWindow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// 50 acquires, one a second apart: invoke at base + i s, ok 0.5 s later.
	const base = int64(1e12)
	for i := int64(0); i < 50; i++ {
		tok := "t" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		for _, e := range []history.Event{
			{Index: 2 * i, Time: base + i*1e9, Process: history.Process(i), Client: int(i), Type: history.Invoke, F: history.FAcquire, Key: "lock:{job-1}", Token: tok, TTLMs: 500},
			{Index: 2*i + 1, Time: base + i*1e9 + 5e8, Process: history.Process(i), Client: int(i), Type: history.OK, F: history.FAcquire, Key: "lock:{job-1}", Token: tok, TTLMs: 500},
		} {
			if _, err := w.Write(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h, err := readHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if ev, note, err := timelineEvents(path, h, nil, 100); err != nil || len(ev) != 100 || note != "" {
		t.Fatalf("a short history was cut: %d events, note %q, %v", len(ev), note, err)
	}
	res := &checker.Result{Violations: []checker.Violation{{Affects: "none", Start: base + 10e9}, {Affects: "lock", Start: base + 30e9}}}
	ev, note, err := timelineEvents(path, h, res, 20)
	if err != nil || len(ev) != 20 || ev[0].Time != base+28e9 || !strings.Contains(note, "20 of 100 events") {
		t.Fatalf("window starts at %v with %d events, note %q, %v; want 28 s, 20 events", ev[0].Time, len(ev), note, err)
	}
	res.Violations[1].Start = base + 48e9 // too close to the end: the window ends with the history
	if ev, _, err := timelineEvents(path, h, res, 20); err != nil || len(ev) != 20 || ev[len(ev)-1].Time != base+49e9+5e8 {
		t.Fatalf("window at the end: %d events ending %v, %v", len(ev), ev[len(ev)-1].Time, err)
	}
}
