package main

import (
	"flag"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/runner"
)

// membersFlags registers the consensus topologies' knob (etcd, zookeeper:
// any deployment laid out in cluster.MemberLayout); runner.Config.Validate
// checks it.
func membersFlags(fs *flag.FlagSet, cfg *runner.Config) {
	if cfg.Cluster.Members == 0 {
		cfg.Cluster.Members = cluster.DefaultMembers
	}
	fs.Var(knob.Int{N: &cfg.Cluster.Members, Min: 1, Max: 7}, "members", "etcd and zookeeper topologies: members (Raft or Zab; 3 is the usual)")
}
