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
	"os"
	"path/filepath"
	"reflect"
	"strings"
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
// (sentinel + fence, Redlock, etcd, sql-lease ...). The strings use the
// `lockjepsen run` flag syntax (--wait 1:100ms, --topology redlock ...) and
// are handed to runner.Config unparsed: runner.Config.Validate is their one
// check. An empty field keeps the scenario's value.
type Config struct {
	Name        string `json:"name"`
	Topology    string `json:"topology,omitempty"`     // --topology: sentinel | redlock | etcd | cluster
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

// Shard is one of Count shards of a sweep.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// Adaptive reports whether the plan adds trials beyond Trials.
func (p Plan) Adaptive() bool { return p.MinFailovers > 0 || p.UntilCI > 0 }

// ZeroHitBound is the --until-ci rule for a cell with no hit: its upper bound below this (Below, or UntilCI).
func (p Plan) ZeroHitBound() float64 {
	if p.Below > 0 {
		return p.Below
	}
	return p.UntilCI
}

// Enough reports whether a cell with these counts needs no more trials under
// the plan's stopping rules (always true for a plan without one). A shard
// judges its own counts scaled by the number of shards: the other shards run
// the same number of trials of the cell on the same seeds' neighbours, so the
// merged cell meets the rule about as well (merge reports the real widths).
func (p Plan) Enough(hits, opps int) bool {
	if p.Shard != nil && p.Shard.Count > 1 {
		hits, opps = hits*p.Shard.Count, opps*p.Shard.Count
	}
	if p.MinFailovers > 0 && opps < p.MinFailovers {
		return false
	}
	if p.UntilCI > 0 {
		lo, hi := Wilson(hits, opps, Z95)
		if opps == 0 {
			return false
		}
		if hits == 0 && hi >= p.ZeroHitBound() || hits > 0 && hi-lo >= p.UntilCI {
			return false
		}
	}
	return true
}

// OpportunitiesFor is how many opportunities a cell needs under the --until-ci
// rule when its hits are 0 (the Below bound) and at p = 1/2 (the widest
// interval); 0 without the rule.
func (p Plan) OpportunitiesFor() (zeroHits, half int) {
	if p.UntilCI <= 0 {
		return 0, 0
	}
	for n := 1; n < 1_000_000; n++ {
		if _, hi := Wilson(0, n, Z95); zeroHits == 0 && hi < p.ZeroHitBound() {
			zeroHits = n
		}
		if lo, hi := Wilson(n/2, n, Z95); half == 0 && hi-lo < p.UntilCI {
			half = n
		}
		if zeroHits > 0 && half > 0 {
			break
		}
	}
	return zeroHits, half
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

// ShardIndex is the index that decides a trial's shard: trial n of the cell
// at position ci of Cells has index ci + n, and shard I of N runs the trials
// whose index is ≡ I mod N. Each cell's trials are so dealt round-robin to
// the shards, starting one shard further for each cell: every shard runs
// every cell (which the per-shard stopping rule needs), the shards' loads
// differ by at most one trial per cell, and the owner of a trial does not
// depend on --trials or --max-trials, which a resume may change. (A plain
// position in Jobs would pin each cell to one shard whenever the shard count
// divides the cell count.)
func ShardIndex(ci, n int) int { return ci + n }

// Owns reports whether this plan's shard runs trial n of the cell with
// index ci in Cells (every trial without a shard).
func (p Plan) Owns(ci, n int) bool {
	if p.Shard == nil || p.Shard.Count <= 1 {
		return true
	}
	return ShardIndex(ci, n)%p.Shard.Count == p.Shard.Index
}

// Owned is how many of the cell's fixed trials (n < Trials) this plan's
// shard runs.
func (p Plan) Owned(ci int) int {
	k := 0
	for n := 0; n < p.Trials; n++ {
		if p.Owns(ci, n) {
			k++
		}
	}
	return k
}

// Unsharded is the plan without its shard: what every shard of one sweep
// shares, and the plan of a merged sweep.
func (p Plan) Unsharded() Plan {
	p.Shard = nil
	return p
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

// ReadPlanFile reads a sweep file (JSON, the shape of Plan). Configurations
// and faults may be given by catalog name alone ({"name": "wait-1-100ms"}).
func ReadPlanFile(path string) (Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Plan{}, fmt.Errorf("read sweep file: %w", err)
	}
	var p Plan
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Plan{}, fmt.Errorf("sweep file %s: %w", path, err)
	}
	for i, c := range p.Configs {
		if bare := (Config{Name: c.Name}); len(c.Opts) == 0 && reflect.DeepEqual(c, bare) {
			if p.Configs[i], err = LookupConfig(c.Name); err != nil {
				return Plan{}, fmt.Errorf("sweep file %s: %w", path, err)
			}
		}
	}
	for i, f := range p.Faults {
		// 0 is "the fault's own"; below 0 is a typo to name.
		if f.Duration < 0 || f.Interval < 0 {
			return Plan{}, fmt.Errorf("sweep file %s: fault %q: duration %s, interval %s: want durations above 0, or leave them out for the fault's own",
				path, f.Name, time.Duration(f.Duration), time.Duration(f.Interval))
		}
		if len(f.Faults) == 0 {
			lf, err := LookupFault(f.Name)
			if err != nil {
				return Plan{}, fmt.Errorf("sweep file %s: %w", path, err)
			}
			lf.Duration, lf.Interval = f.Duration, f.Interval
			p.Faults[i], f = lf, lf
		}
		if f.Duration > 0 {
			if err := f.takesDuration(); err != nil {
				return Plan{}, fmt.Errorf("sweep file %s: fault %q: duration %s: %w; leave duration out", path, f.Name, time.Duration(f.Duration), err)
			}
		}
	}
	return p, nil
}

// Defaults fills what a plan leaves out.
func (p *Plan) Defaults() {
	if p.Scenario == "" {
		p.Scenario = "failover-race"
	}
	if p.Seed == 0 {
		p.Seed = 1
	}
	if p.Trials == 0 {
		p.Trials = DefaultTrials
	}
	if p.Parallel == 0 {
		p.Parallel = 1
	}
	if p.MinFailovers > 0 && p.MaxTrials == 0 {
		p.MaxTrials = 4 * max(p.Trials, p.MinFailovers)
	}
	if p.UntilCI > 0 && p.MaxTrials == 0 {
		p.MaxTrials = DefaultMaxTrials
	}
}

// DefaultMaxTrials caps the trials of a cell under --until-ci: at the
// back-to-back pace a 2-minute trial holds 20-40 opportunities, so 10 trials
// are 200 or more.
const DefaultMaxTrials = 10

// setting names a plan setting both ways a user can have typed it: the flag and
// the sweep file's field (--max-trials, "max_trials").
func setting(flag string) string {
	return fmt.Sprintf("--%s (%q in a sweep file)", flag, strings.ReplaceAll(flag, "-", "_"))
}

// Validate checks the plan by building the run config of every cell, so a
// bad knob is reported before the first trial rather than an hour in.
func (p Plan) Validate() error {
	if len(p.Configs) == 0 || len(p.Faults) == 0 {
		return fmt.Errorf("sweep: the matrix is empty (%d configurations × %d faults)", len(p.Configs), len(p.Faults))
	}
	if p.Trials < 1 {
		return fmt.Errorf("%s %d: want 1 or more", setting("trials"), p.Trials)
	}
	if p.Parallel < 1 || p.Parallel > 16 {
		return fmt.Errorf("%s %d: want 1 to 16", setting("parallel"), p.Parallel)
	}
	if p.TimeLimit < 0 {
		return fmt.Errorf("%s %v: want a workload above 0, or leave it out for the scenario's", setting("time-limit"), time.Duration(p.TimeLimit))
	}
	if p.MinFailovers < 0 {
		return fmt.Errorf("%s %d: want 0 (no minimum) or more", setting("min-failovers"), p.MinFailovers)
	}
	if p.MaxTrials < 0 {
		return fmt.Errorf("%s %d: want a cap of at least the trials, or leave it out", setting("max-trials"), p.MaxTrials)
	}
	if p.Adaptive() && p.MaxTrials < p.Trials {
		return fmt.Errorf("%s %d is below %s %d", setting("max-trials"), p.MaxTrials, setting("trials"), p.Trials)
	}
	// Written so that NaN, which fails every comparison, is refused too.
	if !(p.UntilCI >= 0 && p.UntilCI < 1) {
		return fmt.Errorf("%s %v: want an interval width between 0 and 1, e.g. 0.2", setting("until-ci"), p.UntilCI)
	}
	if !(p.Below >= 0 && p.Below < 1) {
		return fmt.Errorf("%s %v: want a rate between 0 and 1, e.g. 0.04", setting("below"), p.Below)
	}
	if p.Below > 0 && p.UntilCI == 0 {
		return fmt.Errorf("%s %v needs %s", setting("below"), p.Below, setting("until-ci"))
	}
	if s := p.Shard; s != nil && (s.Count < 1 || s.Index < 0 || s.Index >= s.Count) {
		return fmt.Errorf("--shard %d/%d: want I/N with 0 <= I < N", s.Index, s.Count)
	}
	seen := map[string]bool{}
	for _, c := range p.Configs {
		if !nameRE.MatchString(c.Name) || strings.Contains(c.Name, ".") {
			return fmt.Errorf("configuration name %q: letters, digits, '-', '_' and '+' only", c.Name)
		}
		if seen["c"+c.Name] {
			return fmt.Errorf("configuration %q appears twice", c.Name)
		}
		seen["c"+c.Name] = true
	}
	for _, f := range p.Faults {
		if seen["f"+f.Name] {
			return fmt.Errorf("fault %q appears twice", f.Name)
		}
		seen["f"+f.Name] = true
	}
	for _, c := range p.Configs {
		for _, f := range p.Faults {
			var na *NotApplicableError
			if _, err := f.On(p.Backend(c)); err != nil && !errors.As(err, &na) {
				return fmt.Errorf("%s.%s: %w", c.Name, f.Name, err)
			}
		}
	}
	if len(p.Cells()) == 0 {
		return fmt.Errorf("sweep: every pair of the matrix is n/a (%d configurations × %d faults)", len(p.Configs), len(p.Faults))
	}
	for _, cell := range p.Cells() {
		if _, err := p.RunConfig(cell, 0, "/nonexistent"); err != nil {
			return fmt.Errorf("%s: %w", cell.ID(), err)
		}
	}
	return nil
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
		cfg.Cluster.SetOpt(name, v)
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

// RewritePlan replaces plan.json of a sweep being resumed (only --parallel
// and the adaptive trial counts may change).
func RewritePlan(dir string, p Plan) error { return writePlan(filepath.Join(dir, PlanFile), p) }
