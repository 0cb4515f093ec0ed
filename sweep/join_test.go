package sweep

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// runRow runs a sweep of plan (fakeRun) in a new folder and returns it.
func runRow(t *testing.T, plan Plan) string {
	t.Helper()
	dir := t.TempDir()
	if err := Start(dir, plan); err != nil {
		t.Fatal(err)
	}
	if _, err := Execute(context.Background(), dir, Options{Run: fakeRun}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rowPlan is testPlan with other fault kinds: a row of the matrix.
func rowPlan(faults ...string) Plan {
	p := testPlan()
	p.Faults = nil
	for _, n := range faults {
		f, _ := LookupFault(n)
		p.Faults = append(p.Faults, f)
	}
	return p
}

// Two rows measured apart join into the report of the whole matrix, each
// cell's figures exactly as its own sweep computed them.
func TestJoinRows(t *testing.T) {
	a := runRow(t, rowPlan("link-down"))
	b3 := rowPlan("fast-restart")
	b3.Parallel = 3
	b := runRow(t, b3)
	out := filepath.Join(t.TempDir(), "reference")
	// Given out of the default order (as a glob by name would): the report
	// still reads link-down before fast-restart.
	rep, err := Join(out, []string{b, a})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cells) != 4 || rep.Trials != 12 || len(rep.Joined) != 2 {
		t.Fatalf("cells %d trials %d joined %d, want 4 12 2", len(rep.Cells), rep.Trials, len(rep.Joined))
	}
	if rep.Plan.Parallel != 3 || len(rep.Plan.Faults) != 2 || rep.Plan.Faults[0].Name != "link-down" {
		t.Errorf("joined plan: parallel %d faults %v, want 3 and link-down, fast-restart", rep.Plan.Parallel, rep.Plan.Faults)
	}
	ra, err := ReadReport(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range ra.Cells {
		var got *CellStats
		for i := range rep.Cells {
			if rep.Cells[i].Cell == want.Cell {
				got = &rep.Cells[i]
			}
		}
		if got == nil || !reflect.DeepEqual(*got, want) {
			t.Errorf("cell %s changed in the join:\n got %+v\nwant %+v", want.Cell, got, want)
		}
	}
	for _, f := range []string{ReportJSON, ReportCSV, "index.html", "probability.png", TableFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, PlanFile)); err == nil {
		t.Errorf("a joined folder has a %s: --resume would run the whole matrix in it", PlanFile)
	}
	page, _ := os.ReadFile(filepath.Join(out, "index.html"))
	if !strings.Contains(string(page), "sweep join") || !strings.Contains(string(page), a) {
		t.Error("index.html does not say it joins the folders it was built from")
	}
	if back, err := ReadReport(out); err != nil || len(back.Joined) != 2 {
		t.Errorf("sweep.json does not read back with its sources: %v", err)
	}
	if _, err := Join(out, []string{a, b}); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("join over a joined report: %v, want a refusal", err)
	}
}

func TestJoinRefuses(t *testing.T) {
	ld := runRow(t, rowPlan("link-down"))
	fr := runRow(t, rowPlan("fast-restart"))
	longer := rowPlan("fast-restart")
	longer.TimeLimit = Duration(20 * time.Second)
	otherRule := runRow(t, longer)
	onlyNone := rowPlan("fast-restart")
	onlyNone.Configs = onlyNone.Configs[:1]
	gap := runRow(t, onlyNone)
	renamed := rowPlan("fast-restart")
	renamed.Configs[1].Wait = "2:100ms" // same name, another setting
	redefined := runRow(t, renamed)
	sharded := rowPlan("fast-restart")
	sharded.Shard = &Shard{Index: 0, Count: 2}
	shard := runRow(t, sharded)
	for _, tc := range []struct {
		name string
		dirs []string
		want string
	}{
		{"nothing", nil, "no sweep folders"},
		{"a cell twice", []string{ld, ld}, "in both"},
		{"a cell twice, one only", []string{ld, fr, ld}, "--replace"},
		{"another rule", []string{ld, otherRule}, "different rules"},
		{"a gap", []string{ld, gap}, "in none of the folders"},
		{"one name, two settings", []string{ld, redefined}, "defined differently"},
		{"a shard", []string{ld, shard}, "sweep merge"},
		{"no report", []string{ld, t.TempDir()}, "no sweep.json"},
		{"fine", []string{ld, fr}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Join(filepath.Join(t.TempDir(), "out"), tc.dirs)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("join: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("join: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// A row re-run to a higher cap replaces the old row's cells under
// JoinReplacing, each cell keeping its own cap: the old cells that stopped at
// theirs say so, the new ones do not, and the report names what it replaced.
func TestJoinReplacingCapped(t *testing.T) {
	capped := rowPlan("link-down")
	capped.Trials, capped.UntilCI, capped.MaxTrials = 1, 0.5, 2
	old := runRow(t, capped)
	fr := rowPlan("fast-restart")
	fr.Trials, fr.UntilCI, fr.MaxTrials = 1, 0.5, 40
	other := runRow(t, fr)
	higher := rowPlan("link-down")
	higher.Trials, higher.UntilCI, higher.MaxTrials = 1, 0.5, 40
	higher.Configs = higher.Configs[1:] // the re-run of one cell
	rerun := runRow(t, higher)

	rep, err := Join(filepath.Join(t.TempDir(), "out"), []string{old, other})
	if err != nil {
		t.Fatalf("parts under one rule but different caps: %v", err)
	}
	for _, c := range rep.Cells {
		if c.Fault == "link-down" && (!c.StoppedAtCap || c.MaxTrials != 2) {
			t.Errorf("%s: stopped at cap %v (cap %d), want true (2)", c.Cell, c.StoppedAtCap, c.MaxTrials)
		}
	}
	if _, err := Join(filepath.Join(t.TempDir(), "out"), []string{old, other, rerun}); err == nil || !strings.Contains(err.Error(), "--replace") {
		t.Errorf("a cell in two parts without replacing: %v, want a refusal naming --replace", err)
	}
	rep, err = JoinReplacing(filepath.Join(t.TempDir(), "out"), []string{old, other, rerun})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cells) != 4 {
		t.Fatalf("%d cells, want 4", len(rep.Cells))
	}
	for _, c := range rep.Cells {
		replaced := c.Config == higher.Configs[0].Name && c.Fault == "link-down"
		switch {
		case replaced && (c.StoppedAtCap || c.MaxTrials != 40 || c.Trials <= 2):
			t.Errorf("%s: %d trials, cap %d, stopped at cap %v: want the re-run's figures (more than 2 trials, cap 40, the rule met)", c.Cell, c.Trials, c.MaxTrials, c.StoppedAtCap)
		case !replaced && c.Fault == "link-down" && !c.StoppedAtCap:
			t.Errorf("%s: the old capped cell lost its mark", c.Cell)
		}
	}
	want := higher.Configs[0].Name + ".link-down (from " + filepath.Clean(old) + ")"
	if j := rep.Joined; len(j) != 3 || !reflect.DeepEqual(j[2].Replaced, []string{want}) || len(j[0].Cells) != 1 {
		t.Errorf("joined parts %+v: want the third to name %q as replaced and the first to keep one cell", j, want)
	}
}

// A row measured before a deployment joined the matrix and the row of that
// deployment join into one report: the fault kind the newer row maps onto
// one more deployment is the same kind, and the pairs across the rows that
// mean nothing (a PostgreSQL fault on Sentinel) are n/a with the run's own
// refusal as the reason. A kind that maps one deployment two ways still
// refuses.
func TestJoinAcrossDeployments(t *testing.T) {
	// Long enough for a pg-promote after the warm-up; the rule is one.
	long := Duration(30 * time.Second)
	older := rowPlan("failover")
	older.TimeLimit = long
	older.Faults[0].ByBackend = maps.Clone(older.Faults[0].ByBackend) // the catalog's map is shared
	delete(older.Faults[0].ByBackend, pgBackend)
	old := runRow(t, older)

	pg := rowPlan("failover", "pg-terminate-holder")
	session, err := LookupConfig("pg-session")
	if err != nil {
		t.Fatal(err)
	}
	pg.Configs, pg.TimeLimit = []Config{session}, long
	newer := runRow(t, pg)

	rep, err := Join(filepath.Join(t.TempDir(), "out"), []string{old, newer})
	if err != nil {
		t.Fatalf("join across deployments: %v", err)
	}
	if len(rep.Cells) != 4 {
		t.Errorf("%d cells, want 4 (two Sentinel settings × failover, pg-session × failover and pg-terminate-holder)", len(rep.Cells))
	}
	if len(rep.NotApplicable) != 2 {
		t.Fatalf("n/a %+v, want the two Sentinel settings × pg-terminate-holder", rep.NotApplicable)
	}
	for _, na := range rep.NotApplicable {
		if na.Fault != "pg-terminate-holder" || !strings.Contains(na.Reason, "needs --topology postgres") {
			t.Errorf("n/a %+v, want pg-terminate-holder refused for needing --topology postgres", na)
		}
	}
	for _, f := range rep.Plan.Faults {
		if f.Name == "failover" && (f.ByBackend[pgBackend] == nil || f.ByBackend["sentinel"] == nil) {
			t.Errorf("the joined failover kind maps %v, want both sentinel and postgres", f.ByBackend)
		}
	}

	other := rowPlan("failover")
	other.Faults[0].ByBackend = maps.Clone(other.Faults[0].ByBackend)
	other.Faults[0].ByBackend[pgBackend] = []string{"pg-terminate-holder"}
	other.Configs, other.TimeLimit = []Config{session}, long
	clash := runRow(t, other)
	if _, err := Join(filepath.Join(t.TempDir(), "out"), []string{newer, clash}); err == nil || !strings.Contains(err.Error(), "on postgres it is") {
		t.Errorf("one kind mapping postgres two ways: %v, want a refusal naming postgres", err)
	}
}

// pgBackend is the PostgreSQL deployment's name: a deployment in a folder of
// its own has no constant here.
const pgBackend = "postgres"
