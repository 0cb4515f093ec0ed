package postgres_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockjepsen/lockjepsen/internal/testbin"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// exe is the lockjepsen binary the runs' clients are (TestMain builds it).
var exe string

func TestMain(m *testing.M) { testbin.Main(m.Run, "../../cmd/lockjepsen", &exe) }

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// The deployment's scenarios end to end: a real primary and streaming
// replica, a real PgBouncer, client processes holding advisory locks. Each
// expectation is the scenario's own, measured on 10 of 10 seeds with
// scripts/reproduction-rates.sh before it was asserted here. The tests live
// beside the deployment, not in the runner package, so that CI runs them
// beside the runner's own.
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and PgBouncer")
	}
	t.Parallel()
	for _, tc := range []struct {
		scenario string
		exit     int
	}{
		{"pg-terminated-holder", 0},
		{"pg-restart-pooler", 0},
		{"pg-dropped-connection", 0},
		{"pg-promotion", 1},
		{"pg-pooler-transaction", 1},
		{"pg-pooler-session", 0},
		{"pg-xact-pooler-transaction", 0},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			testslot.Parallel(t)
			sc, err := scenario.Get(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			cfg := runner.FromScenario(sc)
			cfg.Exe, cfg.Out = exe, filepath.Join(t.TempDir(), "run")
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			o := runner.Run(context.Background(), cfg, discard{})
			if !o.Checked {
				t.Fatalf("run not checked: %v", o.Err)
			}
			var r checker.Result
			b, err := os.ReadFile(filepath.Join(cfg.Out, "results.json"))
			if err == nil {
				err = json.Unmarshal(b, &r)
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok, saw := scenario.Holds(runner.Expected(cfg), &r); !ok {
				t.Fatalf("the run did not show the %s lesson: %v\n%s", tc.scenario, saw, o.Summary)
			}
			if o.ExitCode != tc.exit {
				t.Fatalf("exit %d, want %d\n%s", o.ExitCode, tc.exit, o.Summary)
			}
			for _, f := range []string{"history.jsonl", "nemesis.jsonl", "resource.jsonl", "summary.txt", "index.html", "logs/pg-0.log"} {
				if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
					t.Errorf("run folder lacks %s", f)
				}
			}
			testbin.AssertNoProcessesLeft(t, cfg.Out)
		})
	}
}
