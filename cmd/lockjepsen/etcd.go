package main

import (
	"flag"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/runner"
)

// etcdFlags registers the etcd topology's knob; runner.Config.Validate checks it.
func etcdFlags(fs *flag.FlagSet, cfg *runner.Config) {
	if cfg.Cluster.Members == 0 {
		cfg.Cluster.Members = cluster.DefaultEtcdMembers
	}
	fs.Var(knob.Int{N: &cfg.Cluster.Members, Min: 1, Max: 7}, "members", "etcd topology: etcd members (Raft; 3 is the usual)")
}
