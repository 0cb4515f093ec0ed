// Package sweep runs one scenario many times across a matrix of replication
// settings × fault kinds and aggregates what the trials measured: how often a
// failover hands a lock out twice (with a Wilson interval), how long the
// window stays open, and what each setting costs in acquire latency and
// availability. Each trial is an ordinary lockjepsen run folder; every number
// in sweep.json is recomputed from those folders (Aggregate), so a sweep that
// was interrupted or edited by hand re-aggregates to the same report.
package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/runner"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// Duration is a time.Duration that reads and writes as "100ms" in JSON, so a
// sweep file is written by hand the way flags are typed.
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts "100ms" or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration %s: want a string like \"100ms\"", b)
	}
	*d = Duration(n)
	return nil
}

// Config is one point on the settings axis: the replication knobs of a run,
// and, for a deployment, the topology, recipe, fence and fence source it runs
// (sentinel + fence, Redlock, sql-lease, any --topology ...). The strings use the
// `lockjepsen run` flag syntax (--wait 1:100ms, --topology redlock ...) and
// are handed to runner.Config unparsed: runner.Config.Validate is their one
// check. An empty field keeps the scenario's value.
type Config struct {
	Name        string `json:"name"`
	Topology    string `json:"topology,omitempty"`     // --topology: any registered deployment
	Recipe      string `json:"recipe,omitempty"`       // --recipe
	Fence       string `json:"fence,omitempty"`        // --fence: none | write | read-write
	FenceSource string `json:"fence_source,omitempty"` // --fence-source: valkey | resource
	Nodes       int    `json:"nodes,omitempty"`        // --nodes (redlock); 0: 5
	Wait        string `json:"wait,omitempty"`         // replicas:timeout
	WaitAOF     string `json:"waitaof,omitempty"`      // local:replicas:timeout
	MinReplicas string `json:"min_replicas,omitempty"` // count:lag-seconds
	AppendOnly  bool   `json:"appendonly,omitempty"`
	AppendFsync string `json:"appendfsync,omitempty"` // always | everysec | no
	Replicas    int    `json:"replicas,omitempty"`    // 0: the default (2)
	// MaxMemory and MaxMemoryPolicy are --maxmemory and --maxmemory-policy.
	MaxMemory       string `json:"maxmemory,omitempty"`
	MaxMemoryPolicy string `json:"maxmemory_policy,omitempty"`
	// Opts are the deployment's own options (cluster.Config.Opts), as its
	// flags would set them (cluster.FlagOwner).
	Opts map[string]string `json:"opts,omitempty"`
	Note string            `json:"note,omitempty"` // one line for the report
}

// Fault is one point on the fault axis: nemesis fault kinds and their
// parameters. Duration overrides how long each injected fault is held (for
// faults that are held: pause-primary, pause-client, clock-bump, skew-client);
// Interval is the mean gap between faults.
//
// A point may mean one *kind* of fault on every deployment (failover,
// paused-client, clock-jump): ByBackend then names the nemesis faults it
// stands for on each backend (Backends), Faults holding the sentinel ones,
// and NotOn the backends where the kind has no counterpart, with the reason
// the report prints for the cell (n/a: not run, not faked). A backend in
// neither is refused by Validate.
type Fault struct {
	Name      string              `json:"name"`
	Faults    []string            `json:"faults"`
	ByBackend map[string][]string `json:"by_backend,omitempty"`
	NotOn     map[string]string   `json:"not_on,omitempty"`
	Duration  Duration            `json:"duration,omitempty"`
	Interval  Duration            `json:"interval,omitempty"`
	Note      string              `json:"note,omitempty"`
}

// Plan is a whole sweep: written to plan.json in the sweep folder so that
// --resume knows what remains. A sweep file given with --file has the same
// shape (any field left out takes the default).
type Plan struct {
	Scenario  string   `json:"scenario"`
	Seed      int64    `json:"seed"`       // trial n of every cell uses seed Seed+n
	Trials    int      `json:"trials"`     // trials per cell, always run
	TimeLimit Duration `json:"time_limit"` // 0: the scenario's
	// MinFailovers, when set, keeps adding trials to a cell until it has seen
	// that many opportunities (failovers, or faults for kinds without one),
	// up to MaxTrials.
	MinFailovers int `json:"min_failovers,omitempty"`
	// UntilCI, when set, keeps adding trials to a cell until the 95% Wilson
	// interval of its P is narrower than UntilCI; for a cell with no hit (its
	// interval is [0, hi]) until hi is below Below (default: UntilCI, the
	// same rule); up to MaxTrials. With MinFailovers too, both must hold.
	UntilCI   float64 `json:"until_ci,omitempty"`
	Below     float64 `json:"below,omitempty"`
	MaxTrials int     `json:"max_trials,omitempty"`
	// BackToBack: each trial fires its faults one after the other, as soon
	// as the previous one healed and the cluster is ready again
	// (runner.Config.BackToBack), so a long trial holds many opportunities.
	BackToBack bool     `json:"back_to_back,omitempty"`
	Parallel   int      `json:"parallel"`
	Configs    []Config `json:"configs"`
	Faults     []Fault  `json:"faults"`
	// Shard, when set, makes this folder one shard of a sweep: it runs the
	// trials whose index in Jobs is ≡ Shard.Index mod Shard.Count.
	// `lockjepsen sweep merge` joins shard folders whose plans are equal but
	// for this field.
	Shard *Shard `json:"shard,omitempty"`
	// HostParallel, set by `sweep merge --host-parallel N`, is how many
	// trials ran at once on the machine across all the shards, when the
	// shards ran side by side on one machine (containers): each shard
	// records only its own --parallel, which would then understate the load
	// that widened the windows and latencies. Every merged cell counts at
	// least this many (CellStats.Parallel), and its figures carry the caveat.
	HostParallel int `json:"host_parallel,omitempty"`
}

// Job is one trial of a plan: trial N of a cell.
type Job struct {
	Cell Cell
	N    int
}

// Jobs lists every trial a plan may run, in its fixed order: trial 0 of every
// cell, then trial 1 of every cell, ... up to MaxTrials for an adaptive plan
// (Trials otherwise).
func (p Plan) Jobs() []Job {
	cells := p.Cells()
	n := p.Trials
	if p.Adaptive() {
		n = max(n, p.MaxTrials)
	}
	out := make([]Job, 0, n*len(cells))
	for t := 0; t < n; t++ {
		for _, c := range cells {
			out = append(out, Job{c, t})
		}
	}
	return out
}

// HasDeployments reports whether a configuration of the plan sets a
// deployment (topology, recipe, fence or fence source) rather than only
// replication knobs: the report then reads as a comparison of deployments.
func (p Plan) HasDeployments() bool {
	for _, c := range p.Configs {
		if c.Topology != "" || c.Recipe != "" || c.Fence != "" || c.FenceSource != "" || len(c.Opts) > 0 {
			return true
		}
	}
	return false
}

// HasLibraries reports whether some configuration runs a third-party
// library (a recipe that brings its own commands), not only the project's
// own recipes (lock.Recipe.Driven): the report then calls its rows locks.
func (p Plan) HasLibraries() bool {
	for _, c := range p.Configs {
		if r, err := lock.Lookup(c.Recipe); err == nil && r.Driven {
			return true
		}
	}
	return false
}

// Cell is one configuration under one fault.
type Cell struct {
	Config Config `json:"config"`
	Fault  Fault  `json:"fault"`
}

// ID names the cell's folder under trials/: config.fault.
func (c Cell) ID() string { return c.Config.Name + "." + c.Fault.Name }

// Cells is the matrix, configurations outer, so the report reads config by
// config and the fault axis sits side by side. A fault kind that maps per
// deployment (Fault.ByBackend) is resolved here: the cell's Fault.Faults are
// the nemesis faults of the configuration's backend. A pair with no
// counterpart (NotOn) is no cell: NotApplicable lists it for the report.
func (p Plan) Cells() []Cell {
	var out []Cell
	for _, c := range p.Configs {
		for _, f := range p.Faults {
			rf, err := f.On(p.Backend(c))
			if err != nil {
				continue // n/a, or refused by Validate
			}
			out = append(out, Cell{Config: c, Fault: rf})
		}
	}
	return out
}

// Cell is the matrix's cell whose ID is id, false when there is none.
func (p Plan) Cell(id string) (Cell, bool) {
	for _, c := range p.Cells() {
		if c.ID() == id {
			return c, true
		}
	}
	return Cell{}, false
}

// NACell is a (configuration, fault) pair with no meaning on that
// deployment: the report shows it as n/a with the reason.
type NACell struct {
	Config string `json:"config"`
	Fault  string `json:"fault"`
	Reason string `json:"reason"`
}

// NotApplicable lists the pairs of the matrix that are not run because the
// fault kind has no counterpart on the deployment (Fault.NotOn).
func (p Plan) NotApplicable() []NACell {
	var out []NACell
	for _, c := range p.Configs {
		for _, f := range p.Faults {
			var na *NotApplicableError
			if _, err := f.On(p.Backend(c)); errors.As(err, &na) {
				out = append(out, NACell{Config: c.Name, Fault: f.Name, Reason: na.Reason})
			}
		}
	}
	return out
}

// SeedOf is the seed of trial n. Trial n of every cell shares it, so the cells
// are compared on the same fault schedules and client choices where the
// fault kind allows (common random numbers: the differences between
// settings are not drowned by differences between draws).
func (p Plan) SeedOf(n int) int64 { return p.Seed + int64(n) }

// RunConfig builds the runner config of trial n of a cell, writing to out.
func (p Plan) RunConfig(cell Cell, n int, out string) (runner.Config, error) {
	sc, err := scenario.Get(p.Scenario)
	if err != nil {
		return runner.Config{}, fmt.Errorf("--scenario: %w", err)
	}
	cfg := runner.FromScenario(sc)
	cfg.Seed = p.SeedOf(n)
	if p.TimeLimit > 0 {
		cfg.TimeLimit = time.Duration(p.TimeLimit)
	}
	cfg.Faults = append([]string(nil), cell.Fault.Faults...)
	if cell.Fault.Interval > 0 {
		cfg.Interval = time.Duration(cell.Fault.Interval)
	}
	cfg.BackToBack = p.BackToBack
	cfg.UseDefaultFaultGap() // a scenario without faults of its own (baseline), as run --faults
	c := cell.Config
	// A deployment, as `lockjepsen run --topology --recipe --fence
	// --fence-source --nodes` would set it; Validate below is its check.
	if c.Topology != "" {
		cfg.Cluster.Topology = c.Topology
		d, err := cluster.Lookup(c.Topology)
		if err != nil {
			return cfg, err
		}
		// As `run --topology T` without the flags the cell leaves unset.
		d.Defaults(&cfg.Cluster, func(flag string) bool { return flag == "replicas" && c.Replicas != 0 })
	}
	if c.Recipe != "" {
		cfg.Recipe = c.Recipe
	}
	if c.Fence != "" {
		cfg.Fence = c.Fence
	}
	if c.FenceSource != "" {
		cfg.FenceSource = c.FenceSource
	}
	if c.Nodes > 0 {
		cfg.Cluster.Nodes = c.Nodes
	}
	if cfg.Wait, err = knob.ParseWait(c.Wait); err != nil {
		return cfg, err
	}
	if cfg.WaitAOF, err = knob.ParseWaitAOF(c.WaitAOF); err != nil {
		return cfg, err
	}
	mr, err := knob.ParseMinReplicas(c.MinReplicas)
	if err != nil {
		return cfg, err
	}
	cfg.Cluster.MinReplicasToWrite, cfg.Cluster.MinReplicasMaxLag = mr.Count, mr.LagS
	cfg.Cluster.AppendOnly = c.AppendOnly || c.AppendFsync != ""
	if c.AppendFsync != "" {
		cfg.Cluster.AppendFsync = c.AppendFsync
	}
	if c.Replicas > 0 {
		cfg.Cluster.Replicas = c.Replicas
	}
	if c.MaxMemory != "" {
		if cfg.Cluster.MaxMemory, err = knob.ParseBytes(c.MaxMemory); err != nil {
			return cfg, fmt.Errorf("configuration %s: maxmemory %w", c.Name, err)
		}
	}
	if c.MaxMemoryPolicy != "" {
		cfg.Cluster.MaxMemoryPolicy = c.MaxMemoryPolicy
	}
	for name, v := range c.Opts {
		// As the deployment's --name takes it: into a field of the config
		// (--shards) or its Opts.
		if err := cfg.Cluster.SetFlag(name, v); err != nil {
			return cfg, fmt.Errorf("configuration %s: %w", c.Name, err)
		}
	}
	cfg.Out = out
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	if d := time.Duration(cell.Fault.Duration); d > 0 {
		for i := range cfg.Schedule {
			if cfg.Schedule[i].Duration > 0 {
				cfg.Schedule[i].Duration = d
			}
		}
	}
	return cfg, nil
}
