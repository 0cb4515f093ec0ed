package runner

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/scenario"
	"github.com/lockjepsen/lockjepsen/truetime"
)

// fromScenarioDeployment applies a scenario's topology, recipe and fence,
// and the deployment's defaults for what the scenario leaves unset.
func fromScenarioDeployment(c *Config, s scenario.Scenario) {
	if s.Topology != "" {
		c.Cluster.Topology = s.Topology
	}
	if s.Recipe != "" {
		c.Recipe = s.Recipe
	}
	if s.Fence != "" {
		c.Fence = s.Fence
	}
	for name, v := range s.Opts {
		c.Cluster.SetOpt(name, v)
	}
	if d, err := cluster.Lookup(c.Cluster.Topology); err == nil {
		d.Defaults(&c.Cluster, func(string) bool { return false })
	}
}

// validateTopology refuses the knobs and recipes that mean nothing on the
// run's deployment, in one line naming the knob.
func (c *Config) validateTopology() error {
	d, err := cluster.Lookup(c.Cluster.Topology)
	if err != nil {
		return err
	}
	var all []lock.Offerer
	for _, name := range cluster.Topologies {
		o, _ := cluster.Lookup(name)
		all = append(all, o)
	}
	if err := lock.RunsOn(c.Recipe, d, all); err != nil {
		return err
	}
	if !(c.DriftFactor >= 0 && c.DriftFactor < 0.5) { // NaN fails both comparisons
		return fmt.Errorf("--drift-factor %v: want 0 to below 0.5 (the distlock page uses 0.01)", c.DriftFactor)
	}
	if c.DelayedRestart < 0 {
		return fmt.Errorf("--delayed-restart %v: want 0 or more", c.DelayedRestart)
	}
	return d.ValidateRun(cluster.RunKnobs{Wait: c.Wait.On(), WaitAOF: c.WaitAOF.On(),
		Fence: c.Fence, FenceSource: c.FenceSource, DelayedRestart: c.DelayedRestart})
}

// auditPTTL asks every data node for the PTTL of every lock key once the
// clients have stopped, and records each answer as an "audit-pttl" event
// (process nemesis; key; value = the PTTL in ms, -1 no expiry, -2 no key). A
// -1 on a lock key is a lock nobody can ever take again: the checker's
// liveness verdict reads these events.
func (r *run) auditPTTL(keys []string) {
	if !r.cfg.Cluster.Deployment().Expires() {
		return // no PTTL on a consensus service: a lock key lives exactly as long as its lease or session
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range r.cluster.Nodes() {
		if n.Watches() || n.PID == 0 || n.Paused {
			continue
		}
		for _, k := range keys {
			out, err := r.cluster.Command(ctx, n.Name, "PTTL", k)
			if err != nil && strings.Contains(err.Error(), "MOVED ") {
				continue // Valkey Cluster: this node does not serve the key's slot
			}
			ev := history.Event{Process: history.Nemesis, Type: history.Info, Time: truetime.Now(),
				F: history.NAuditPTTL, Node: n.Name, Key: k}
			if v, perr := strconv.ParseInt(out, 10, 64); err == nil && perr == nil {
				ev.Value = history.Int64(v)
				ev.Detail = fmt.Sprintf("PTTL %s on %s: %d", k, n.Name, v)
			} else {
				ev.Detail = fmt.Sprintf("PTTL %s on %s: no answer (%v)", k, n.Name, err)
			}
			r.record(ev)
		}
	}
}
