package sweep

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockjepsen/lockjepsen/runfolder"
)

// A re-swept row lands in its folder: figures, plan and evidence replaced, the
// row's own files kept, and no evidence left on a cell that no longer has a hit.
func TestPublishToARowFolder(t *testing.T) {
	sweepWith := func(seed int64) string {
		dir := t.TempDir()
		p := testPlan()
		p.Trials, p.Seed = 1, seed // fakeRun double-grants on odd seeds only
		if err := Start(dir, p); err != nil {
			t.Fatal(err)
		}
		if _, err := Execute(context.Background(), dir, Options{Run: fakeRun}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(path string) bool { _, err := os.Stat(path); return err == nil }

	row := filepath.Join(t.TempDir(), "rows", "link-down")
	write(filepath.Join(row, "README.md"), "the reading")
	write(filepath.Join(row, "cited-trial", "summary.txt"), "a trial the README cites")

	red := sweepWith(1)
	write(filepath.Join(EvidenceDir(red, "none.link-down"), runfolder.Index), "shrunk")
	rep, err := PublishTo(red, row)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Dir != row {
		t.Errorf("sweep.json names %s, want the row %s", rep.Dir, row)
	}
	got, err := ReadReport(row)
	if err != nil || got.Dir != row || len(got.Cells) != 2 || got.Cells[0].Hits != 1 {
		t.Fatalf("the row's sweep.json: %+v, %v", got, err)
	}
	for _, f := range []string{PlanFile, ReportCSV, runfolder.Index, "README.md", "cited-trial/summary.txt", "evidence/none.link-down/index.html"} {
		if !exists(filepath.Join(row, f)) {
			t.Errorf("%s missing from the row after publishing", f)
		}
	}
	if exists(filepath.Join(row, Trials)) {
		t.Error("the trials were copied: a row is kept without them")
	}

	// The same row re-swept with no hit: its evidence goes, its reading stays.
	write(filepath.Join(EvidenceDir(row, "wait-1-100ms.link-down"), runfolder.Index), "of an earlier sweep")
	if _, err := PublishTo(sweepWith(2), row); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"none.link-down", "wait-1-100ms.link-down"} {
		if exists(EvidenceDir(row, c)) {
			t.Errorf("%s has no hit now, yet keeps the evidence of an earlier sweep", c)
		}
	}
	if !exists(filepath.Join(row, "README.md")) {
		t.Error("the row's README.md is gone")
	}
	if _, err := PublishTo(row, row+"/"); err == nil {
		t.Error("publishing a folder into itself was accepted")
	}
}
