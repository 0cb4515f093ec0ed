package main

import (
	"flag"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/runner"
)

// redlockFlags registers the topology's flags and Redlock's knobs; they are
// checked once, in runner.Config.Validate.
func redlockFlags(fs *flag.FlagSet, cfg *runner.Config) {
	if cfg.Cluster.Topology == "" {
		cfg.Cluster.Topology = cluster.TopologySentinel
	}
	if cfg.Cluster.Nodes == 0 {
		cfg.Cluster.Nodes = cluster.DefaultRedlockNodes
	}
	fs.Var(knob.Choice{S: &cfg.Cluster.Topology, Among: cluster.Topologies}, "topology",
		"sentinel (one primary, replicas, Sentinels), redlock (--nodes independent primaries, no replication, no Sentinel), etcd (--members etcd members, recipe etcd-mutex) or cluster (Valkey Cluster: --shards primaries with --replicas each, no Sentinel)")
	etcdFlags(fs, cfg)
	fs.Var(knob.Int{N: &cfg.Cluster.Nodes, Min: 1, Max: 9}, "nodes", "redlock topology: independent primaries (the distlock page's N)")
	fs.Float64Var(&cfg.DriftFactor, "drift-factor", 0.01, "Redlock's clock drift factor: validity = TTL - elapsed - TTL*factor - 2ms")
	fs.Var(knob.Duration{D: &cfg.DelayedRestart, Min: 0}, "delayed-restart",
		"redlock topology: keep a crashed node down this long before restarting it (antirez's remedy: more than the TTL)")
}
