package main

import (
	"flag"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/runner"
)

// shardFlags registers the cluster topology's flag; it is checked once,
// in runner.Config.Validate (cluster.Config.Validate).
func shardFlags(fs *flag.FlagSet, cfg *runner.Config) {
	if cfg.Cluster.Shards == 0 {
		cfg.Cluster.Shards = cluster.DefaultShards
	}
	fs.Var(knob.Int{N: &cfg.Cluster.Shards, Min: 3, Max: 9}, "shards", "cluster topology: shards, each a primary with --replicas replicas (Valkey Cluster, failover by the cluster bus)")
}
