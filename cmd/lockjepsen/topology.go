package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/runner"
)

// topologyHelp is --topology's help: every deployment with its doc line.
func topologyHelp() string {
	var parts []string
	for _, name := range cluster.Topologies {
		d, _ := cluster.Lookup(name)
		parts = append(parts, fmt.Sprintf("%s (%s)", name, d.Doc()))
	}
	return strings.Join(parts, ", ")
}

// topologyDefaults applies what --topology changes when the user left the
// flags it concerns unset (Valkey Cluster: one replica per shard).
func topologyDefaults(fs *flag.FlagSet, cfg *runner.Config) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["topology"] {
		return
	}
	if d, err := cluster.Lookup(cfg.Cluster.Topology); err == nil {
		d.Defaults(&cfg.Cluster, func(flag string) bool { return set[flag] })
	}
}

// redlockFlags registers the topology's flags and Redlock's knobs; they are
// checked once, in runner.Config.Validate.
func redlockFlags(fs *flag.FlagSet, cfg *runner.Config) {
	if cfg.Cluster.Topology == "" {
		cfg.Cluster.Topology = cluster.TopologySentinel
	}
	if cfg.Cluster.Nodes == 0 {
		cfg.Cluster.Nodes = cluster.DefaultRedlockNodes
	}
	fs.Var(knob.Choice{S: &cfg.Cluster.Topology, Among: cluster.Topologies}, "topology", topologyHelp())
	deploymentFlags(fs, &cfg.Cluster)
	membersFlags(fs, cfg)
	fs.Var(knob.Int{N: &cfg.Cluster.Nodes, Min: 1, Max: 9}, "nodes", "redlock topology: independent primaries (the distlock page's N)")
	fs.Float64Var(&cfg.DriftFactor, "drift-factor", 0.01, "Redlock's clock drift factor: validity = TTL - elapsed - TTL*factor - 2ms")
	fs.Var(knob.Duration{D: &cfg.DelayedRestart, Min: 0}, "delayed-restart",
		"redlock topology: keep a crashed node down this long before restarting it (antirez's remedy: more than the TTL)")
}

// deploymentFlags registers the flags deployments own (cluster.FlagOwner);
// each writes into the config's Opts, and the deployment's
// Validate checks the value with the rest of the run.
func deploymentFlags(fs *flag.FlagSet, c *cluster.Config) {
	for _, name := range cluster.Topologies {
		d, _ := cluster.Lookup(name)
		if fo, ok := d.(cluster.FlagOwner); ok {
			fo.Flags(fs, c)
		}
	}
}
