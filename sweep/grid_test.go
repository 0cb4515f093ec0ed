package sweep

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestGrid: one cell per planned pair, coloured by hits and upper bounds,
// n/a with its reason, each measured cell with the command that reruns it;
// the page opens on the grid, its rows named for what the sweep compares.
func TestGrid(t *testing.T) {
	p := deploymentPlan(t, []string{"sentinel-fence", "redlock"}, []string{"failover", "paused-client"})
	p.Trials = 2
	cell := func(cfg, fault string, hits, stale, opps int) CellStats {
		cs := CellStats{Cell: cfg + "." + fault, Config: cfg, Fault: fault, Unit: "fault", Trials: 2,
			Opportunities: opps, Hits: hits, StaleHits: stale}
		cs.PLow, cs.PHi = Wilson(hits, opps, Z95)
		cs.PStaleLow, cs.PStaleHigh = Wilson(stale, opps, Z95)
		pp, ps := float64(hits)/float64(opps), float64(stale)/float64(opps)
		cs.P, cs.PStale = &pp, &ps
		return cs
	}
	r := &Report{Plan: p, Cells: []CellStats{
		cell("sentinel-fence", "failover", 30, 0, 90),
		cell("sentinel-fence", "paused-client", 0, 0, 100),
		cell("redlock", "failover", 0, 0, 20),
	}, NotApplicable: []NACell{{Config: "redlock", Fault: "paused-client", Reason: "a test's reason"}}}
	g := Grid(r, map[string][]string{"sentinel-fence.failover": {"trials/sentinel-fence.failover-0"}}, map[string]string{"sentinel-fence.failover": "evidence/sentinel-fence.failover"})
	want := [][]string{{"hit", "ok"}, {"open", "na"}}
	if len(g) != 2 {
		t.Fatalf("%d rows, want 2", len(g))
	}
	for i, row := range g {
		for j, c := range row.Cells {
			if c.Class != want[i][j] {
				t.Errorf("%s × %s: class %s, want %s (%+v)", row.Config, p.Faults[j].Name, c.Class, want[i][j], c)
			}
		}
	}
	if c := g[0].Cells[0]; c.Trial != "trials/sentinel-fence.failover-0" || c.Shrunk != "evidence/sentinel-fence.failover" || !strings.Contains(c.Command, "--configs sentinel-fence --faults failover --trials 2") ||
		!strings.HasPrefix(c.Lock, "30/90 = 33%") {
		t.Errorf("the red cell: %+v", c)
	}
	if c := g[1].Cells[1]; c.Lock != "n/a" || c.Title != "a test's reason" {
		t.Errorf("the n/a cell: %+v", c)
	}
	// A configuration the catalog lacks reruns alone, by its spec: a
	// --config without --configs '' would run the default settings too.
	custom := Config{Name: "mine", Recipe: "exec:./adapter", Fence: "none"}
	if got, want := rerunCommand(p, custom, p.Faults[0]), "lockjepsen sweep --scenario "+p.Scenario+" --configs '' --config 'mine=recipe=exec:./adapter;fence=none' --faults failover --trials 2"; got != want {
		t.Errorf("rerun of a custom configuration:\n got %s\nwant %s", got, want)
	}
	dir := t.TempDir()
	if err := WriteReport(dir, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	grid, reading := strings.Index(page, `<table class="grid">`), strings.Index(page, "<h2>Reading</h2>")
	if grid < 0 || reading < 0 || grid > reading || strings.Count(page, `<td class="`) != 4 || !strings.Contains(page, "<th>deployment</th>") {
		t.Errorf("the page does not open on a 2×2 grid of deployments (grid at %d, reading at %d)", grid, reading)
	}
}

// A configuration's spec parses back to it.
func TestConfigSpecRoundTrip(t *testing.T) {
	for _, c := range []Config{
		{Name: "strict", Wait: "1:100ms", AppendOnly: true, AppendFsync: "always"},
		{Name: "redsync-5", Topology: "redlock", Recipe: "redsync", Fence: "none", Nodes: 5},
		{Name: "cache", MaxMemory: "16mb", MaxMemoryPolicy: "volatile-lru", Replicas: 3, MinReplicas: "1:10"},
		{Name: "pooled", Topology: "postgres", Recipe: "pg-advisory", Fence: "read-write", Opts: map[string]string{"pooler": "transaction"}},
	} {
		got, err := ParseConfig(c.Spec())
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Errorf("%s: parsed back %+v, %v; want %+v", c.Spec(), got, err, c)
		}
	}
}

// A red cell links its evidence: the sweep folder's own, or, in a joined
// report, the evidence of the row folder the cell came from, relative to
// the page; a cell without evidence links none.
func TestEvidenceLinks(t *testing.T) {
	root := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module x\n")
	write("results/rows/a/evidence/pg.failover/index.html", "")
	write("results/joined/evidence/own.failover/index.html", "")
	r := &Report{Cells: []CellStats{{Cell: "pg.failover"}, {Cell: "own.failover"}, {Cell: "none.failover"}},
		Joined: []Joined{{Dir: "results/rows/a", Cells: []string{"pg.failover", "none.failover"}}}}
	got := evidenceLinks(filepath.Join(root, "results", "joined"), r, nil)
	want := map[string]string{"pg.failover": "../rows/a/evidence/pg.failover", "own.failover": "evidence/own.failover"}
	if len(got) != len(want) || got["pg.failover"] != want["pg.failover"] || got["own.failover"] != want["own.failover"] {
		t.Errorf("evidence links %v, want %v", got, want)
	}
	if got := evidenceLinks(filepath.Join(root, "results", "joined"), r, func(string) bool { return false }); len(got) != 0 {
		t.Errorf("links to uncommitted evidence: %v", got)
	}
}
