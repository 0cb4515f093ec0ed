package workshop

import (
	"context"
	"fmt"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pagesDir is docs/workshop, relative to this package.
const pagesDir = "../docs/workshop"

// TestPagesAreCurrent fails when a page's generated region differs from the lab
// table (question, command, claims) or its captured output came from another
// step definition: run scripts/workshop-capture.sh and commit the pages.
func TestPagesAreCurrent(t *testing.T) {
	problems, err := Stale(pagesDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p + " (regenerate with scripts/workshop-capture.sh)")
	}
	// Every timeline a page shows is on disk.
	for _, l := range Labs() {
		for _, s := range l.Steps {
			if s.Kind != KindRun && s.Kind != KindShrink {
				continue
			}
			if _, err := os.Stat(filepath.Join(pagesDir, "img", s.Name+"-timeline.png")); err != nil {
				t.Errorf("lab %d: no captured timeline for %s", l.N, s.Name)
			}
		}
	}
}

func TestLabTableIsConsistent(t *testing.T) {
	names := map[string]bool{}
	for i, l := range Labs() {
		if l.N != i+1 {
			t.Errorf("lab %d is listed at position %d", l.N, i+1)
		}
		if l.Question == "" || !strings.HasSuffix(l.Question, "?") {
			t.Errorf("lab %d: the prediction must be a question", l.N)
		}
		for _, s := range l.Steps {
			if names[s.Name] {
				t.Errorf("step name %s used twice", s.Name)
			}
			names[s.Name] = true
			if len(s.Claims) == 0 {
				t.Errorf("%s: a step without a claim teaches nothing the tests can keep true", s.Name)
			}
			if s.Kind == KindRun && s.Flag("--scenario") == "" {
				t.Errorf("%s: name the scenario on the page's command", s.Name)
			}
			if from, ok := step(l, s.From); s.Kind == KindShrink && (!ok || from.Kind != KindRun || !names[s.From]) {
				t.Errorf("%s shrinks %q, which is no run step before it in lab %d", s.Name, s.From, l.N)
			}
		}
	}
	if TotalMinutes() > 85 {
		t.Errorf("the labs take %d of the 90 minutes: no room for the welcome and the wrap-up", TotalMinutes())
	}
}

// TestLabsShowTheirClaims runs every lab exactly as `lockjepsen lab all` does
// (the binary, the same commands) and asserts each page's claims from the
// files the runs left. It never skips: CI has Valkey 9 (make setup).
func TestLabsShowTheirClaims(t *testing.T) {
	// Five minutes of labs back to back: served first, or the suite ends
	// five minutes after everything else.
	testslot.ParallelLong(t)
	exe := filepath.Join(t.TempDir(), "lockjepsen")
	build := exec.Command("go", "build", "-o", exe, "../cmd/lockjepsen")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("build lockjepsen: %v", err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, exe, "lab", "--no-wait", "--dir", dir, "--cluster-dir", filepath.Join(dir, "no-cluster"), "all")
	cmd.Env = append(os.Environ(), "CI=true")
	out, err := cmd.CombinedOutput()
	t.Logf("all labs back to back: %v", time.Since(start).Round(time.Second))
	if err != nil {
		t.Errorf("lockjepsen lab all: %v\n%s", err, tail(string(out), 4000))
	}
	// The claims again, in-process, from the folders: a failing one names
	// what the run showed instead.
	for _, l := range Labs() {
		for _, s := range l.Steps {
			t.Run(s.Name, func(t *testing.T) {
				ev, err := Load(s, filepath.Join(dir, s.Name))
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range s.Claims {
					if obs, ok := c.Check(ev); !ok {
						t.Errorf("lab %d claims %q, but %s\n%s", l.N, c.Text, obs, runEvidence(ev))
					}
				}
			})
		}
	}
	if !strings.Contains(string(out), "read next: docs/workshop/lab8.md") {
		t.Errorf("lab all did not reach lab 8:\n%s", tail(string(out), 2000))
	}
}

// runEvidence is what a failed claim's run folder says of its lock
// violations and its own warnings (a wall-clock step): the folder is a
// TempDir, and a CI log is all a thrown-away machine leaves. Three
// paused-client labs once checked lock invalid together, on an idle machine,
// with nothing kept. The violations are Load's, already read.
func runEvidence(ev *Evidence) string {
	var b strings.Builder
	if log, err := os.ReadFile(filepath.Join(ev.Dir, "run.log")); err == nil {
		for _, l := range strings.Split(string(log), "\n") {
			if strings.Contains(l, "warning") {
				fmt.Fprintf(&b, "run.log: %s\n", l)
			}
		}
	}
	if ev.Result != nil {
		for _, v := range ev.Result.Violations {
			if v.Affects == "lock" {
				fmt.Fprintf(&b, "%s on %s at %.3f s (cause %s): %s\n", v.Kind, v.Key, v.StartS, v.Cause, v.Explanation)
			}
		}
	}
	if nem, err := os.ReadFile(filepath.Join(ev.Dir, "nemesis.jsonl")); err == nil {
		fmt.Fprintf(&b, "nemesis.jsonl:\n%s", nem)
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("...%s", s[len(s)-n:])
}
