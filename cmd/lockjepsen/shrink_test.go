package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/internal/checkertest"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// writeGenerated writes a generated run to a new folder.
func writeGenerated(t *testing.T, cfg checkertest.Config) string {
	t.Helper()
	dir := t.TempDir()
	events, attempts, _ := checkertest.Simulate(cfg)
	if err := checkertest.WriteRun(dir, events, attempts); err != nil {
		t.Fatal(err)
	}
	return dir
}

func exitOf(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

// The binary shrinks a failing run into a folder `lockjepsen check`
// judges invalid with the same violation, and says so: exit 1, what it
// kept, and the command that checks it; a valid run has nothing to shrink
// (exit 0, no folder).
func TestShrinkCommand(t *testing.T) {
	tests := []struct {
		name string
		cfg  checkertest.Config
		args []string
		exit int
		want string // on stdout
	}{
		{"injected double grant", checkertest.Config{Seed: 3, Clients: 6, Keys: 2, Events: 3000, TTLms: 150, PInfo: 0.03, PPause: 0.05, Inject: true},
			nil, exitInvalid, "lockjepsen check "},
		{"failovers, a reported-only kind", checkertest.Config{Seed: 2, Clients: 8, Keys: 1, Events: 1 << 30, Until: 4e9, TTLms: 500, PInfo: 0.01, Failovers: 2, FailEvery: 15e8},
			[]string{"--kind", "newer-holder-turned-away"}, exitInvalid, "newer-holder-turned-away on lock:{job-0} (cause: failover)"},
		{"legal", checkertest.Config{Seed: 1, Clients: 4, Keys: 1, Events: 2000, TTLms: 150, PInfo: 0.03, PPause: 0.05},
			nil, exitValid, "nothing to shrink: the history is valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeGenerated(t, tt.cfg)
			out := filepath.Join(t.TempDir(), "shrunk")
			stdout, err := exec.Command(bin, append([]string{"shrink", dir, "--out", out}, tt.args...)...).Output()
			if got := exitOf(t, err); got != tt.exit || !strings.Contains(string(stdout), tt.want) {
				t.Fatalf("exit %d, want %d, with %q on stdout:\n%s", got, tt.exit, tt.want, stdout)
			}
			if tt.exit == exitValid {
				if _, err := os.Stat(out); err == nil {
					t.Fatal("nothing to shrink, yet a folder was written")
				}
				return
			}
			var rec struct{ Kind, Key, Cause string }
			if err := runfolder.ReadJSON(filepath.Join(out, runfolder.Shrink), &rec); err != nil {
				t.Fatal(err)
			}
			checkOut, err := exec.Command(bin, "check", "-no-html", out).CombinedOutput()
			if got := exitOf(t, err); got != exitInvalid {
				t.Fatalf("check of the shrunk run: exit %d, want 1\n%s", got, checkOut)
			}
			var res checker.Result
			if err := runfolder.ReadJSON(filepath.Join(out, runfolder.Results), &res); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, v := range res.Violations {
				found = found || v.Kind == rec.Kind && v.Key == rec.Key && v.Cause == rec.Cause
			}
			if !found || rec.Kind == "" {
				t.Fatalf("check of the shrunk run does not show shrink.json's %s on %s (cause %s):\n%s", rec.Kind, rec.Key, rec.Cause, checkOut)
			}
		})
	}
}
