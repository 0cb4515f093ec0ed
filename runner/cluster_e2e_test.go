package runner

import (
	"strings"
	"testing"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
)

// Valkey Cluster end to end: 3 shards of a real primary and replica
// (cluster-enabled, failover by the cluster bus), real client processes on
// valkey-go's cluster client, the real resource. Each fault targets the
// shard that owns lock:{job-1}'s slot. The expectations are the scenarios'
// own (scenario/cluster.go).
func TestClusterScenarios(t *testing.T) {
	tests := []struct {
		name, scenario string
		faults         []string
		exit           int
	}{
		// SIGKILL of the shard's primary with its replica cut off: the bus
		// elects a replica that never saw the grant, a double grant.
		{"failover-race", "cluster-failover-race", nil, 1},
		// The same cut and grant, then a graceful CLUSTER FAILOVER: the
		// replica catches up first, nothing is lost.
		{"graceful-failover", "cluster-graceful-failover", nil, 0},
		// The same with TAKEOVER: no catch-up, the grant is lost.
		{"takeover", "cluster-failover-race", []string{"cluster-takeover"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config(t, tt.scenario, func(c *Config) {
				if tt.faults != nil {
					c.Faults = tt.faults
				}
			})
			if cfg.Cluster.TopologyName() != cluster.TopologyCluster || cfg.Cluster.Shards != 3 || cfg.Cluster.Replicas != 1 {
				t.Fatalf("scenario %s runs on topology %q, %d shards of %d replicas; want cluster, 3 of 1", tt.scenario, cfg.Cluster.Topology, cfg.Cluster.Shards, cfg.Cluster.Replicas)
			}
			expectLesson(t, cfg, tt.exit)
			// Valid must not mean "nothing happened": the shard changed hands,
			// after a fresh grant on its primary alone.
			events, err := history.ReadFile(cfg.Out + "/nemesis.jsonl")
			if err != nil {
				t.Fatal(err)
			}
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
				t.Fatalf("%d failover(s), %d with a fresh grant after the cut: the fault did not do its part\n%s", failovers, grantsAfterCut, faultStory(cfg.Out))
			}
		})
	}
}
