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
	return strings.Join(cluster.Described(cluster.Deployment.Doc), ", ")
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

// topologyFlags registers --topology, the deployments' own flags and
// Redlock's knobs; they are checked once, in runner.Config.Validate.
func topologyFlags(fs *flag.FlagSet, cfg *runner.Config) {
	if cfg.Cluster.Topology == "" {
		cfg.Cluster.Topology = cluster.DefaultTopology()
	}
	fs.Var(knob.Choice{S: &cfg.Cluster.Topology, Among: cluster.Topologies}, "topology", topologyHelp())
	deploymentFlags(fs, &cfg.Cluster)
	fs.Float64Var(&cfg.DriftFactor, "drift-factor", 0.01, "Redlock's clock drift factor: validity = TTL - elapsed - TTL*factor - 2ms")
	fs.Var(knob.Duration{D: &cfg.DelayedRestart, Min: 0}, "delayed-restart",
		"redlock topology: keep a crashed node down this long before restarting it (antirez's remedy: more than the TTL)")
}

// deploymentFlags registers the flags deployments own (cluster.FlagOwner),
// once each (two consensus deployments own --members), its help prefixed with
// the topologies that take it; each writes into the config, and the
// deployment's Validate checks the value with the rest of the run.
// foreignFlags refuses one given on another topology.
func deploymentFlags(fs *flag.FlagSet, c *cluster.Config) {
	owners := cluster.FlagOwners()
	for _, name := range cluster.Topologies {
		d, _ := cluster.Lookup(name)
		fo, ok := d.(cluster.FlagOwner)
		if !ok {
			continue
		}
		own := flag.NewFlagSet(name, flag.ContinueOnError)
		fo.Flags(own, c)
		own.VisitAll(func(f *flag.Flag) {
			if fs.Lookup(f.Name) != nil {
				return
			}
			o := owners[f.Name]
			kind := "topology"
			if len(o) > 1 {
				kind = "topologies"
			}
			fs.Var(f.Value, f.Name, fmt.Sprintf("%s %s: %s", strings.Join(o, " and "), kind, f.Usage))
		})
	}
}

// foreignFlags refuses a deployment's own flag the user gave on a run of
// another topology: it would change nothing, silently.
func foreignFlags(fs *flag.FlagSet, c *cluster.Config) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err == nil {
			err = cluster.ForeignFlag(f.Name, givenValue(f, c), c.TopologyName())
		}
	})
	return err
}

// givenValue is the value the user gave flag f: a Func flag that writes
// Opts (--pooler) shows none of its own.
func givenValue(f *flag.Flag, c *cluster.Config) string {
	if v := f.Value.String(); v != "" {
		return v
	}
	return c.Opt(f.Name)
}
