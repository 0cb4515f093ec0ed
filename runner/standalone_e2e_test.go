package runner

import (
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/deployments/standalone"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
)

// The standalone primary end to end: one real primary and two replicas, no
// Sentinel, the clients at the service address in front of the primary. The
// expectations are the scenarios' own (deployments/standalone/scenarios.go), each
// measured over 10 seeds before it went in (docs/deployments.md, "A
// standalone primary").
func TestStandaloneScenarios(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, scenario string
		mutate         func(*Config)
		exit           int
		// events the nemesis must have logged: the fault did what it says.
		events []string
	}{
		{"baseline", "standalone-baseline", func(c *Config) { c.TimeLimit = 10 * time.Second }, 0, nil},
		// SIGKILL and restart without persistence: the replicas resync from
		// the empty primary, and the lock is granted again.
		{"restart", "standalone-restart", nil, 1, []string{"fast-restart", "restarted"}},
		// With appendfsync always the restarted primary reloads its locks.
		{"restart-aof", "standalone-restart", func(c *Config) {
			c.Cluster.AppendOnly, c.Cluster.AppendFsync = true, "always"
		}, 0, []string{"fast-restart", "restarted"}},
		// The operator promotes a replica that never saw the fresh grant.
		{"promote", "standalone-promote", nil, 1, []string{"promote-replica", "promoted", history.NFailover, "demote"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testslot.Parallel(t)
			cfg := config(t, tt.scenario, tt.mutate)
			if cfg.Cluster.TopologyName() != standalone.Topology {
				t.Fatalf("scenario %s runs on topology %q, want standalone", tt.scenario, cfg.Cluster.Topology)
			}
			expectLesson(t, cfg, tt.exit)
			assertNemesisLogged(t, cfg.Out, tt.events)
		})
	}
}

// assertNemesisLogged fails unless the run's nemesis.jsonl holds each of
// events: the fault ran its course.
func assertNemesisLogged(t *testing.T, out string, events []string) {
	t.Helper()
	evs, err := history.ReadFile(out + "/nemesis.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range evs {
		seen[e.F] = true
	}
	for _, want := range events {
		if !seen[want] {
			t.Errorf("no %q event in nemesis.jsonl: the fault did not run its course", want)
		}
	}
}
