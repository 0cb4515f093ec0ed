package runner

import (
	"fmt"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// fromClusterScenario gives a cluster scenario its shape: 3 shards of one
// primary and one replica (the Sentinel default of 2 replicas would start 9
// nodes on a 2-core machine for nothing the lessons need).
func fromClusterScenario(c *Config, s scenario.Scenario) {
	if s.Topology == cluster.TopologyCluster {
		c.Cluster.Shards, c.Cluster.Replicas = cluster.DefaultShards, 1
	}
}

// validateCluster refuses the knobs that mean nothing on Valkey Cluster.
func (c *Config) validateCluster() error {
	if c.DelayedRestart > 0 {
		return fmt.Errorf("--delayed-restart is a redlock-topology knob (a crashed cluster primary rejoins as a replica): add --topology redlock")
	}
	return nil
}

func clusterPhase(cfg Config, version string) string {
	return fmt.Sprintf("cluster: Valkey Cluster, %d shards of 1 primary and %d replica(s), failover by the cluster bus (cluster-node-timeout %v), no Sentinel (Valkey %s)",
		cfg.Cluster.Shards, cfg.Cluster.Replicas, cfg.Cluster.DownAfter, version)
}
