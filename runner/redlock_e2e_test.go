package runner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/exitcode"
	"github.com/lockjepsen/lockjepsen/internal/testslot"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// The Redlock topology and the stuck-lock anti-patterns, end to end: five
// real standalone Valkey primaries (or the Sentinel set), real client
// processes, the real resource. Each case is one run; the expectation is the
// scenario's own (deployments/redlock/scenarios.go), so the claims in docs/deployments.md
// ("Redlock: five independent primaries") and these tests cannot drift apart.

func expectLesson(t *testing.T, cfg Config, exit int) *checker.Result {
	t.Helper()
	o, r := runAndLoad(t, cfg)
	ok, saw := scenario.Holds(Expected(cfg), r)
	if !ok {
		t.Fatalf("the run did not show the %s lesson: %v\n%s\n%s", cfg.Scenario, saw, o.Summary, faultStory(cfg.Out))
	}
	if exit < 0 { // the verdict may go either way: the exit code must follow it
		exit = exitcode.Valid
		if r.Valid == checker.Invalid {
			exit = exitcode.Invalid
		}
	}
	if o.ExitCode != exit {
		t.Fatalf("exit %d, want %d\n%s", o.ExitCode, exit, o.Summary)
	}
	assertNoProcessesLeft(t, cfg.Out)
	return r
}

// faultStory lists a run's fault events and the grants and extends
// around them, in true time from the first event, so that a lesson that did
// not show says what the fault did and what the clients got meanwhile.
func faultStory(out string) string {
	evs, err := history.ReadFile(out + "/history.jsonl")
	if err != nil {
		return "(no history: " + err.Error() + ")"
	}
	var b strings.Builder
	b.WriteString("fault events, and the acquires and extends that succeeded (s from the first event):\n")
	var t0 int64
	lines := 0
	for i, e := range evs {
		if i == 0 {
			t0 = e.Time
		}
		client := e.IsClient() && e.Type == history.OK && (e.F == history.FAcquire || e.F == history.FExtend)
		if !client && e.IsClient() {
			continue
		}
		if lines++; lines > 80 {
			b.WriteString("  ...\n")
			break
		}
		at := float64(e.Time-t0) / 1e9
		if client {
			fmt.Fprintf(&b, "  %7.3f  client %d %s ok %s on %s, token %.8s\n", at, e.Client, e.F, e.Key, e.Node, e.Token)
		} else {
			fmt.Fprintf(&b, "  %7.3f  %s %s: %s\n", at, e.F, e.Node, e.Detail)
		}
	}
	return b.String()
}

// A correct Redlock run with no faults checks valid: the checker bounds each
// lease by the validity the recipe reported, never a false alarm.
func TestRedlockBaselineIsValid(t *testing.T) {
	t.Parallel()
	for _, recipe := range []string{"redlock", "redsync"} {
		t.Run(recipe, func(t *testing.T) {
			testslot.Parallel(t)
			cfg := config(t, "redlock-baseline", func(c *Config) { c.Recipe = recipe; c.TimeLimit = 10 * time.Second })
			r := expectLesson(t, cfg, 0)
			if r.Ops["acquire"] == nil || r.Ops["acquire"].OK < 50 {
				t.Fatalf("too little work to mean anything: %+v", r.Ops)
			}
			events, err := history.ReadFile(cfg.Out + "/history.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			withValidity := 0
			for _, e := range events {
				if e.F == history.FAcquire && e.Type == history.OK && e.ValidityMs > 0 && e.ValidityMs < e.TTLMs+1 {
					withValidity++
				}
			}
			if withValidity == 0 {
				t.Fatalf("no acquire ok carries validity_ms")
			}
		})
	}
}

func TestRedlockScenarios(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scenario string
		mutate   func(*Config)
		exit     int
	}{
		// Kleppmann's clock jump with the partial partition: lock invalid.
		{"redlock-clock-jump", nil, 1},
		// A node restarted without persistence: invalid; antirez's remedies: valid.
		{"redlock-restart", nil, 1},
		// The remedies: the lock is never granted twice; the resource may
		// see a slow holder's late write, which no fence stops here.
		{"redlock-restart", func(c *Config) { c.Cluster.AppendOnly, c.Cluster.AppendFsync = true, "always" }, -1},
		{"redlock-restart", func(c *Config) { c.DelayedRestart = 4 * time.Second }, -1},
		// A paused holder: the lock is valid, the data is not (no fence).
		{"redlock-paused-client", nil, 1},
	}
	for _, tt := range tests {
		cfg := config(t, tt.scenario, tt.mutate)
		name := fmt.Sprintf("%s/aof-%s/delayed-%v", tt.scenario, map[bool]string{true: cfg.Cluster.AppendFsync, false: "off"}[cfg.Cluster.AppendOnly], cfg.DelayedRestart)
		t.Run(name, func(t *testing.T) {
			testslot.Parallel(t)
			expectLesson(t, cfg, tt.exit)
		})
	}
}

// setnx-expire and extend-no-px leave keys with no TTL when a client dies at
// the wrong moment: the liveness verdict flags them, with the PTTL audit's
// -1 as evidence and the operation that left the key behind; native under the
// same schedule is not flagged.
func TestStuckLocks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		recipe string
		faults []string
		exit   int
		leftBy string
	}{
		{"setnx-expire", []string{"crash-client"}, 1, history.FAcquire},
		{"extend-no-px", []string{"kill-holder"}, 1, history.FExtend},
		{"native", []string{"crash-client", "kill-holder"}, 0, ""},
	}
	for _, tt := range tests {
		cfg := config(t, "stuck-lock", func(c *Config) { c.Recipe = tt.recipe; c.Faults = tt.faults })
		t.Run(tt.recipe, func(t *testing.T) {
			testslot.Parallel(t)
			r := expectLesson(t, cfg, tt.exit)
			if tt.leftBy == "" {
				return
			}
			for _, s := range r.Liveness.StuckLocks {
				if s.LeftBy.F == tt.leftBy && s.LeftBy.Token != "" {
					return
				}
			}
			t.Fatalf("no stuck lock left behind by an %s: %+v", tt.leftBy, r.Liveness.StuckLocks)
		})
	}
}
