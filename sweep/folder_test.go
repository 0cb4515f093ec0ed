package sweep

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A sweep whose trial folders are gone (moved, or a mistyped --resume) must
// not have its report replaced by one computed from zero trials.
func TestAggregateOfNoTrialsKeepsTheReport(t *testing.T) {
	dir := t.TempDir()
	if err := Start(dir, testPlan()); err != nil {
		t.Fatal(err)
	}
	if _, err := Execute(context.Background(), dir, Options{Run: fakeRun}); err != nil {
		t.Fatal(err)
	}
	outputs := []string{ReportJSON, ReportCSV, "index.html", "probability.png", "exposure.svg", "cost.png"}
	before := map[string][]byte{}
	for _, f := range outputs {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		before[f] = b
	}
	if err := os.Rename(filepath.Join(dir, Trials), filepath.Join(dir, "trials.moved")); err != nil {
		t.Fatal(err)
	}
	rep, err := Aggregate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := rep.TrialFolders(); n != 0 {
		t.Fatalf("TrialFolders %d, want 0", n)
	}
	if err := Publish(dir, rep); !errors.Is(err, ErrNoTrials) {
		t.Fatalf("Publish of an empty report over a sweep's: %v, want ErrNoTrials", err)
	}
	for _, f := range outputs {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); !bytes.Equal(b, before[f]) {
			t.Errorf("%s was rewritten", f)
		}
	}
	// Execute aggregates too: with no trial left to run (an interrupted
	// resume) it must not overwrite either.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Execute(ctx, dir, Options{Run: fakeRun}); !errors.Is(err, ErrNoTrials) {
		t.Errorf("Execute with every trial folder gone and nothing run: %v, want ErrNoTrials", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ReportJSON)); !bytes.Equal(b, before[ReportJSON]) {
		t.Errorf("Execute rewrote %s", ReportJSON)
	}
}

// A new sweep interrupted before its first trial finished has no report yet:
// writing its empty one is no loss.
func TestPublishOfNoTrialsInANewSweep(t *testing.T) {
	dir := t.TempDir()
	if err := Start(dir, testPlan()); err != nil {
		t.Fatal(err)
	}
	rep, err := Aggregate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Publish(dir, rep); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ReportJSON)); err != nil {
		t.Error(err)
	}
}
