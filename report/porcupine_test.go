package report

import (
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
)

// Drawing is report's job: the checker's pictures become porcupine pages
// named by the run folder's rule, each violation links to its page, and the
// page carries the fault in force.
func TestDrawPorcupineWritesPagesAndLinks(t *testing.T) {
	ms := int64(1e6)
	ev := []history.Event{
		{Time: 5 * ms, Process: history.Nemesis, Type: history.Info, F: "kill", Node: "valkey-1"},
		{Time: 0, Process: 0, Type: history.Invoke, F: history.FAcquire, Key: "lock:{job-1}", Token: "A", TTLMs: 1000},
		{Time: 1 * ms, Process: 0, Type: history.OK, F: history.FAcquire, Key: "lock:{job-1}", Token: "A"},
		{Time: 10 * ms, Process: 1, Client: 1, Type: history.Invoke, F: history.FAcquire, Key: "lock:{job-1}", Token: "B", TTLMs: 1000},
		{Time: 11 * ms, Process: 1, Client: 1, Type: history.OK, F: history.FAcquire, Key: "lock:{job-1}", Token: "B"},
		{Time: 20 * ms, Process: history.Nemesis, Type: history.Info, F: "restart", Node: "valkey-1"},
	}
	for i := range ev {
		ev[i].Index = int64(i)
	}
	history.Sort(ev)
	res, err := checker.Check(ev, nil, checker.Options{Pictures: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := DrawPorcupine(dir, res); err != nil {
		t.Fatal(err)
	}
	if len(res.Visualizations) != 1 || res.Violations[0].Picture != res.Visualizations[0] {
		t.Fatalf("pages %v, violation links %q", res.Visualizations, res.Violations[0].Picture)
	}
	if res.Visualizations[0] != "porcupine-lock-job-1.html" {
		t.Errorf("page named %q", res.Visualizations[0])
	}
	b, err := os.ReadFile(filepath.Join(dir, res.Visualizations[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "kill valkey-1") {
		t.Error("page lacks the nemesis annotation")
	}
	// Titled with the key and the run, not "Porcupine"; a heading says so too.
	run := filepath.Base(dir)
	if want := "<title>" + html.EscapeString(PageTitle("lock", "lock:{job-1}", run)) + "</title>"; !strings.Contains(string(b), want) {
		t.Errorf("page lacks %s", want)
	}
	if strings.Contains(string(b), "<title>Porcupine</title>") || !strings.Contains(string(b), "<h1") || !strings.Contains(string(b), `href="index.html"`) {
		t.Error("page keeps porcupine's title or lacks its heading and way back")
	}
}

// A history too long to draw is drawn as a window that starts a little
// before the first violation that counts, and says so.
func TestTimelineWindow(t *testing.T) {
	var ev []history.Event
	for i := 0; i < 100; i++ {
		ev = append(ev, history.Event{Index: int64(i), Time: int64(i) * 1e9})
	}
	if w, note := TimelineWindow(ev, nil, 100); len(w) != 100 || note != "" {
		t.Fatalf("a short history was cut: %d events, note %q", len(w), note)
	}
	res := &checker.Result{Violations: []checker.Violation{{Affects: "none", Start: 10e9}, {Affects: "lock", Start: 50e9}}}
	w, note := TimelineWindow(ev, res, 20)
	if len(w) != 20 || w[0].Time != 48e9 || !strings.Contains(note, "20 of 100 events") {
		t.Fatalf("window starts at %v with %d events, note %q; want 48 s, 20 events", w[0].Time, len(w), note)
	}
	res.Violations[1].Start = 95e9 // too close to the end: the window ends with the history
	if w, _ := TimelineWindow(ev, res, 20); w[len(w)-1].Time != 99e9 || len(w) != 20 {
		t.Fatalf("window at the end: %d events ending %v", len(w), w[len(w)-1].Time)
	}
}
