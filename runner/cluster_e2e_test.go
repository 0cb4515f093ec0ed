package runner

import (
	"github.com/lockjepsen/lockjepsen/internal/testslot"
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/deployments/valkeycluster"
	"github.com/lockjepsen/lockjepsen/history"
)

// Valkey Cluster end to end: 3 shards of a real primary and replica
// (cluster-enabled, failover by the cluster bus), real client processes on
// valkey-go's cluster client, the real resource. Each fault targets the
// shard that owns lock:{job-1}'s slot. The expectations are the scenarios'
// own (deployments/valkeycluster/scenarios.go).
func TestClusterScenarios(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, scenario string
		faults         []string
		exit           int
		// did checks that the fault did its part (valid must not mean
		// "nothing happened"); shardChanged when nil.
		did func(t *testing.T, out string, events []history.Event)
	}{
		// SIGKILL of the shard's primary with its replica cut off: the bus
		// elects a replica that never saw the grant, a double grant.
		{"failover-race", "cluster-failover-race", nil, 1, nil},
		// The same cut and grant, then a graceful CLUSTER FAILOVER: the
		// replica catches up first, nothing is lost.
		{"graceful-failover", "cluster-graceful-failover", nil, 0, nil},
		// The same with TAKEOVER: no catch-up, the grant is lost.
		{"takeover", "cluster-failover-race", []string{"cluster-takeover"}, 1, nil},
		// The lock key's slot moved while held (deployments/valkeycluster): valid,
		// the holder renewed across the move, and in the legacy window the
		// fenced acquires were refused.
		{"reshard-legacy", "cluster-reshard-legacy", nil, 0, slotMoved("migrate-slot", "slot-keys-migrated", "EXEC without MULTI")},
		{"reshard-atomic", "cluster-reshard-atomic", nil, 0, slotMoved("migrate-slot-atomic", "migrate-slot-atomic-done", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testslot.Parallel(t)
			cfg := config(t, tt.scenario, func(c *Config) {
				if tt.faults != nil {
					c.Faults = tt.faults
				}
			})
			if cfg.Cluster.TopologyName() != valkeycluster.Topology || cfg.Cluster.Shards != 3 || cfg.Cluster.Replicas != 1 {
				t.Fatalf("scenario %s runs on topology %q, %d shards of %d replicas; want cluster, 3 of 1", tt.scenario, cfg.Cluster.Topology, cfg.Cluster.Shards, cfg.Cluster.Replicas)
			}
			expectLesson(t, cfg, tt.exit)
			events, err := history.ReadFile(cfg.Out + "/history.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			if tt.did == nil {
				tt.did = shardChanged
			}
			tt.did(t, cfg.Out, events)
		})
	}
}

// shardChanged: the shard changed hands after a fresh grant on its primary
// alone.
func shardChanged(t *testing.T, out string, events []history.Event) {
	failovers, grantsAfterCut := 0, 0
	for _, e := range events {
		if e.F == history.NFailover {
			failovers++
		}
		if (e.F == "kill" || e.F == "cluster-failover") && strings.Contains(e.Detail, "after the cut: true") {
			grantsAfterCut++
		}
	}
	if failovers == 0 || grantsAfterCut == 0 {
		t.Fatalf("%d failover(s), %d with a fresh grant after the cut: the fault did not do its part\n%s", failovers, grantsAfterCut, faultStory(out))
	}
}

// slotMoved: the migration fault began after a fresh grant and closed with
// the slot moved, the holder of that grant renewed it after the keys moved
// (the event moved: ASK or MOVED followed), and, when refused is set, an
// acquire inside the window was refused with that error.
func slotMoved(fault, moved, refused string) func(t *testing.T, out string, events []history.Event) {
	return func(t *testing.T, out string, events []history.Event) {
		var begin, end, keysMoved int64
		holder, renewedAfter, refusals := "", false, 0
		for _, e := range events {
			if e.F == moved && begin != 0 && keysMoved == 0 {
				keysMoved = e.Time
			}
			switch {
			case e.F == fault && strings.Contains(e.Detail, "granted the lock just before: true"):
				begin = e.Time
			case e.F == fault+"-done" && begin != 0 && (strings.HasSuffix(e.Detail, ": ok") || strings.Contains(e.Detail, " success after ")):
				end = e.Time
			case !e.IsClient():
			case e.Type == history.OK && e.F == history.FAcquire && begin == 0:
				holder = e.Token
			case e.Type == history.OK && e.F == history.FExtend && e.Token == holder && keysMoved != 0:
				renewedAfter = true
			case e.Type == history.Fail && e.F == history.FAcquire && begin != 0 && end == 0 && refused != "" && strings.Contains(e.Error, refused):
				refusals++
			}
		}
		if begin == 0 || end == 0 || !renewedAfter || (refused != "" && refusals == 0) {
			t.Fatalf("%s: began after a fresh grant %v, closed with the slot moved %v, the holder renewed after %s %v, %d acquire(s) refused with %q in the window: the fault did not do its part\n%s",
				fault, begin != 0, end != 0, moved, renewedAfter, refusals, refused, faultStory(out))
		}
	}
}
