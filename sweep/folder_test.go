package sweep

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// Two sweeps must not run one folder's trials, and a sweep killed by SIGKILL
// must leave no claim behind that a user would have to clear by hand.
func TestClaimRefusesASecondSweep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		holder func(t *testing.T, dir string) (end func())
	}{
		{"this process", func(t *testing.T, dir string) func() {
			release, err := Claim(dir)
			if err != nil {
				t.Fatal(err)
			}
			return release
		}},
		{"another process, then SIGKILLed", func(t *testing.T, dir string) func() {
			// flock(1) takes the same flock(2) lock Claim does; the shell
			// becomes sleep, so the holder is one process, killed below.
			cmd := exec.Command("sh", "-c", `exec 9>>"$0" && flock 9 && exec sleep 60`, filepath.Join(dir, LockFile))
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				probe := exec.Command("flock", "--nonblock", filepath.Join(dir, LockFile), "true")
				if probe.Run() != nil || time.Now().After(deadline) {
					break // held by the child (or the child failed: the refusal below says)
				}
				time.Sleep(20 * time.Millisecond)
			}
			return func() { cmd.Process.Kill(); cmd.Wait() }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			end := tc.holder(t, dir)
			if _, err := Claim(dir); err == nil || !strings.Contains(err.Error(), "--resume "+dir) {
				end()
				t.Fatalf("a second claim while held: %v, want a refusal that names --resume %s", err, dir)
			}
			end()
			release, err := Claim(dir)
			if err != nil {
				t.Fatalf("claim after the holder ended: %v", err)
			}
			release()
		})
	}
}
