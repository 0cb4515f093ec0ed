package report

import (
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/nemesis"
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
	res, err := checker.Check(ev, nil, checker.Options{Pictures: true, Marks: nemesis.Catalog()})
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
