// Package runner carries out one lockjepsen run: cluster and resource up,
// clients started, the nemesis schedule played, everything healed, the history
// checked and the report written.
package runner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/metrics"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/resource"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// Config is every knob of a run; it is written to config.json.
type Config struct {
	Scenario string   `json:"scenario"`
	Recipe   string   `json:"recipe"`
	ExecArgs []string `json:"exec_args,omitempty"` // --exec-arg: arguments of an exec:PATH program
	Fence    string   `json:"fence"`               // none | write | read-write
	// FenceSource is where fence numbers come from: valkey (INCR with the
	// acquire) or resource (the database's own sequence, after the grant).
	// Empty in configs written before it existed: valkey.
	FenceSource string        `json:"fence_source"`
	Clients     int           `json:"clients"`
	Keys        int           `json:"keys"`
	TTL         time.Duration `json:"ttl_ns"`
	TimeLimit   time.Duration `json:"time_limit_ns"`
	Seed        int64         `json:"seed"`
	Faults      []string      `json:"faults"`
	Interval    time.Duration `json:"interval_ns"`
	// BackToBack fires each fault as soon as the previous one healed and the
	// cluster is ready again (nemesis.PlanParams.BackToBack); Interval is
	// then unused.
	BackToBack bool `json:"back_to_back,omitempty"`
	// Net sizes the network faults (--net-latency, --net-jitter,
	// --net-share); zero: nemesis.DefaultNetSizes.
	Net     nemesis.NetSizes `json:"net"`
	Job     scenario.Job     `json:"job"`
	Epsilon time.Duration    `json:"epsilon_ns"` // checker's clock tolerance on lease bounds

	Wait    knob.Wait    `json:"wait"`
	WaitAOF knob.WaitAOF `json:"waitaof"`

	// DriftFactor is Redlock's clock drift factor (--drift-factor); 0: the
	// distlock page's 0.01. DelayedRestart keeps a crashed redlock node down
	// that long before restarting it (antirez's remedy; --delayed-restart).
	DriftFactor    float64       `json:"drift_factor,omitempty"`
	DelayedRestart time.Duration `json:"delayed_restart_ns,omitempty"`

	Cluster     cluster.Config `json:"cluster"`
	ResourceDSN string         `json:"resource_dsn,omitempty"`
	Out         string         `json:"out"`

	Schedule []nemesis.Step `json:"schedule"`
	// FaultsAt is an explicit schedule (--faults-at): these faults fire at
	// these offsets instead of where the seed would put them (the steps'
	// other fields are still drawn from the seed, nemesis.PlanAt); Faults
	// then lists the faults it names. Empty: the seed plans the schedule.
	FaultsAt []nemesis.Step `json:"faults_at,omitempty"`
	// WorkloadStart is when the workload began (r.start), on the history's
	// clock (truetime nanoseconds); config.json is written again with it
	// once the workload starts. A fault's offset is its first event's time
	// less this (shrink --rerun reads nemesis.jsonl that way). 0 in runs
	// made before it was recorded, and in a config not yet run.
	WorkloadStart int64 `json:"workload_start_ns,omitempty"`
	// WallStep is how far the host's wall clock moved against the monotonic
	// clock during the run, when more than NTP's slew accounts for (a
	// stepped clock, a paused virtual machine); 0 otherwise. Valkey expires
	// keys by the wall clock, so such a run's verdict may be the host's
	// doing, not the lock's: HostClockStepped reads it back.
	WallStep int64 `json:"wall_step_ns,omitempty"`
	// Command is the command line that made the run, for "rerun this"; empty
	// when a run was started from code.
	Command []string `json:"command,omitempty"`
	// Exe is the lockjepsen binary whose `client` and `resource serve`
	// subcommands the run starts; default: this executable.
	Exe      string   `json:"-"`
	Versions Versions `json:"versions"`

	// Metrics, when set, is fed every history event as it is written
	// (--metrics-addr); nil: no metrics.
	Metrics *metrics.Run `json:"-"`
}

// Versions records what a run ran on.
type Versions struct {
	Valkey     string `json:"valkey"`
	Lockjepsen string `json:"lockjepsen"`
	Go         string `json:"go"`
}

// Warmup and Settle bracket the fault schedule; MinTimeLimit is the
// shortest workload a run accepts.
const (
	Warmup       = 3 * time.Second
	Settle       = 2 * time.Second
	MinTimeLimit = 5 * time.Second
)

func (c *Config) planParams() nemesis.PlanParams {
	return nemesis.PlanParams{
		Faults: c.Faults, Seed: c.Seed, TimeLimit: c.TimeLimit, Interval: c.Interval,
		Warmup: Warmup, Settle: Settle, TTL: c.TTL, DownAfter: c.Cluster.DownAfter, BackToBack: c.BackToBack, Net: c.Net,
	}
}

// PlanParamsForEstimate are the nemesis plan parameters of this config, for
// estimating how long its faults take (sweep --dry-run).
func (c *Config) PlanParamsForEstimate() nemesis.PlanParams { return c.planParams() }

// FromScenario fills a config from a preset.
func FromScenario(s scenario.Scenario) Config {
	c := Config{
		Scenario: s.Name, Recipe: lock.Native, Fence: knob.FenceReadWrite, FenceSource: knob.FenceSourceValkey,
		Clients: s.Clients, Keys: s.Keys, TTL: s.TTL, TimeLimit: s.TimeLimit, Seed: 1,
		Faults: s.Faults, Interval: s.Interval, Job: s.Job, Epsilon: checker.DefaultEpsilon,
		Cluster: cluster.Defaults(), Net: nemesis.DefaultNetSizes,
	}
	c.Cluster.FakeTime = s.FakeTime
	fromScenarioDeployment(&c, s)
	c.Cluster.OldReplica = s.OldReplica
	c.Cluster.NetProxy = s.NetProxy
	if s.DownAfter > 0 {
		c.Cluster.DownAfter = s.DownAfter
	}
	if s.NetLatency > 0 {
		c.Net.Latency, c.Net.Jitter = s.NetLatency, s.NetJitter
	}
	c.Cluster.MaxMemory, c.Cluster.MaxMemoryPolicy = s.MaxMemory, s.MaxMemoryPolicy
	if s.Recipe != "" {
		c.Recipe = s.Recipe
	}
	return c
}

// noLuaCaps is what a --valkey-build nolua server has, known without
// starting one: Valkey 9 (SET IFEQ, DELIFEQ, WAITAOF), built with
// BUILD_LUA=no.
var noLuaCaps = lock.Caps{Product: "valkey", Version: "9.1.2",
	Commands: map[string]bool{"SET": true, "DELIFEQ": true, "DELEX": true, "WAITAOF": true}, IFEQ: true, Lua: false}

// Validate is the one check of a run's knobs, for every command that starts
// runs (run, bench scenario, sweep, lab): it runs before anything prints a
// banner or starts a process, and plans the fault schedule.
func (c *Config) Validate() error {
	sc, err := scenario.Get(c.Scenario)
	if err != nil {
		return fmt.Errorf("--scenario: %w", err)
	}
	rec, err := lock.Lookup(c.Recipe)
	if err != nil {
		return fmt.Errorf("--recipe: %w", err)
	}
	if err := c.validateFence(rec); err != nil {
		return err
	}
	if err := c.validateWorkload(); err != nil {
		return err
	}
	if err := c.validateDeployment(sc, rec); err != nil {
		return err
	}
	if err := c.validateFaults(); err != nil {
		return err
	}
	return c.planSchedule()
}

// validateFence checks the recipe's arguments and the fence against it.
func (c *Config) validateFence(rec lock.Recipe) error {
	if len(c.ExecArgs) > 0 && rec.Name != lock.Exec {
		return fmt.Errorf("--exec-arg is for --recipe exec:PATH, not %s", c.Recipe)
	}
	if err := knob.OneOf("fence", c.Fence, knob.FenceModes); err != nil {
		return err
	}
	if c.FenceSource == "" {
		c.FenceSource = knob.FenceSourceValkey
	}
	if err := knob.OneOf("fence-source", c.FenceSource, knob.FenceSources); err != nil {
		return err
	}
	if c.FenceSource == knob.FenceSourceResource && c.Fence == knob.FenceNone {
		return fmt.Errorf("--fence-source resource with --fence none: the numbers would be issued and never checked; use --fence write or read-write")
	}
	// A number from the resource's own sequence needs nothing of the lock
	// recipe, so the libraries that cannot INCR with their SET NX can be fenced.
	if c.Fence != knob.FenceNone && !rec.Fences() && c.FenceSource != knob.FenceSourceResource {
		return fmt.Errorf("--recipe %s draws no fencing token (the library is driven unchanged): use --fence-source resource (the database issues the number) or --fence none", c.Recipe)
	}
	return nil
}

// validateWorkload checks the clients' work: its size, pace and tolerance.
func (c *Config) validateWorkload() error {
	if c.Clients < 1 || c.Clients > 256 {
		return fmt.Errorf("--clients %d: want 1 to 256", c.Clients)
	}
	if c.Keys < 1 || c.Keys > c.Clients*4 {
		return fmt.Errorf("--keys %d: want 1 to 4x --clients", c.Keys)
	}
	if c.TTL < 100*time.Millisecond {
		return fmt.Errorf("--ttl %v: want 100ms or more (renewals happen every TTL/3)", c.TTL)
	}
	if c.TimeLimit < MinTimeLimit {
		return fmt.Errorf("--time-limit %v: want %v or more", c.TimeLimit, MinTimeLimit)
	}
	if c.Job.Steps < 1 {
		return fmt.Errorf("--steps %d: want 1 or more critical sections per hold", c.Job.Steps)
	}
	if c.Job.Think < 0 {
		return fmt.Errorf("--think %v: want 0 or more", c.Job.Think)
	}
	if c.Job.Pause < 0 {
		return fmt.Errorf("--idle %v: want 0 or more", c.Job.Pause)
	}
	if c.Epsilon < 0 || c.Epsilon >= c.TTL/2 {
		return fmt.Errorf("--epsilon %v: want 0 to below half the TTL (%v); a wider tolerance cannot see a double grant", c.Epsilon, c.TTL/2)
	}
	if c.Interval < 0 || (c.Interval == 0 && len(c.Faults) > 0 && !c.BackToBack) {
		return fmt.Errorf("--interval %v: want a mean gap between faults above 0, e.g. 5s", c.Interval)
	}
	return nil
}

// validateDeployment checks the deployment and what the recipe, the scenario
// and the replication knobs need of it.
func (c *Config) validateDeployment(sc scenario.Scenario, rec lock.Recipe) error {
	if err := c.validateNet(); err != nil {
		return err
	}
	if c.ResourceDSN != "" {
		if err := resource.CheckDSN(c.ResourceDSN); err != nil {
			return fmt.Errorf("--resource-dsn: %w", err)
		}
	}
	if err := c.Cluster.Validate(); err != nil {
		return err
	}
	if err := c.validateTopology(); err != nil {
		return err
	}
	// The server cannot run this recipe: a Lua-less build is known from
	// the flag, so it is refused here with 254 before the topology starts,
	// as an old server is by Preflight, not found by the capability check
	// once every node is up.
	if c.Cluster.Build == "nolua" {
		if missing := rec.Lacks(noLuaCaps); len(missing) > 0 {
			return fmt.Errorf("--recipe %s cannot run on --valkey-build nolua: that build lacks %s; choose a recipe without EVAL (native), or the default build",
				c.Recipe, strings.Join(missing, " and "))
		}
	}
	if sc.Runtime != "" && c.Cluster.Runtime != sc.Runtime {
		return fmt.Errorf("--scenario %s needs --runtime %s: processes on one loopback interface cannot be partitioned ('make images' builds what it needs)", sc.Name, sc.Runtime)
	}
	if c.Wait.Replicas > c.Cluster.Replicas || c.WaitAOF.Replicas > c.Cluster.Replicas {
		return fmt.Errorf("--wait/--waitaof ask for more replicas than --replicas %d: such an acquire can never succeed", c.Cluster.Replicas)
	}
	if c.WaitAOF.Local > 0 && !c.Cluster.AppendOnly {
		return fmt.Errorf("--waitaof with a local count needs the AOF: add --appendonly (WAITAOF's first argument must be 0 when AOF is off)")
	}
	return nil
}

// validateFaults resolves the faults over a target, takes an explicit
// schedule's faults as the run's, and checks each against the deployment and
// the recipe (turning libfaketime on for the clock faults).
func (c *Config) validateFaults() error {
	if err := c.resolveTargets(); err != nil {
		return err
	}
	flagName := "--faults"
	if len(c.FaultsAt) > 0 {
		if c.BackToBack {
			return fmt.Errorf("--faults-at fixes when each fault fires; a back-to-back pace fires each once the previous one healed: use one or the other")
		}
		// The faults of an explicit schedule are the ones it lists, so
		// that config.json says what was injected.
		flagName, c.Faults = "--faults-at", nil
		for _, s := range c.FaultsAt {
			if !slices.Contains(c.Faults, s.Fault) {
				c.Faults = append(c.Faults, s.Fault)
			}
		}
	}
	for _, name := range c.Faults {
		f, err := nemesis.Lookup(name)
		if err != nil {
			return fmt.Errorf("%s: %w", flagName, err)
		}
		if err := f.Available(c.Cluster); err != nil {
			if len(c.FaultsAt) > 0 {
				return fmt.Errorf("--faults-at: %w", err)
			}
			return err
		}
		if f.Needs.FakeTime {
			c.Cluster.FakeTime = true
		}
		if err := c.recipeTakes(name, f); err != nil {
			return err
		}
	}
	return nil
}

// recipeTakes says whether the recipe lets the fault act: a client's
// watchdog to stall, a partition inside the clients, replies to reach.
func (c *Config) recipeTakes(name string, f *nemesis.Fault) error {
	if f.Needs.ClientRenews {
		if r, err := lock.Lookup(c.Recipe); err == nil && r.SelfRenews {
			return fmt.Errorf("%s stalls the client's watchdog, and --recipe %s renews its leases inside the library, "+
				"where no fault reaches: use a recipe whose client renews (native, redsync, redislock, an exec program), "+
				"or pause-client to stop the whole process", name, c.Recipe)
		}
	}
	if f.Needs.ClientPartition {
		if r, err := lock.Lookup(c.Recipe); err == nil && !r.Partitions {
			return fmt.Errorf("%s cuts some nodes off from some clients inside the clients (a partial partition on loopback), and "+
				"--recipe %s sends to every node through a library that cannot be told which: the fault would run with no partition; "+
				"use --recipe redlock, or an exec program that takes the \"unreachable\" request (docs/protocol.md)", name, c.Recipe)
		}
	}
	if f.Needs.Replies != "" {
		if r, err := lock.Lookup(c.Recipe); err == nil && !r.ReachesReplies() {
			return fmt.Errorf("%s acts on the replies of the connections the project's Valkey clients open, and "+
				"--recipe %s opens connections of its own, which those faults do not reach: use a recipe that speaks Valkey "+
				"(native, redsync, redislock, valkeylock), or an exec program that takes the %q request (docs/protocol.md)",
				name, c.Recipe, lock.ExecReplyField(f.Needs.Replies))
		}
	}
	return nil
}

// planSchedule draws the fault schedule from the seed, or places an explicit
// one's steps.
func (c *Config) planSchedule() error {
	if len(c.FaultsAt) > 0 {
		sched, err := nemesis.PlanAt(c.planParams(), c.FaultsAt)
		if err != nil {
			return fmt.Errorf("--faults-at: %w", err)
		}
		c.Schedule = sched
		return nil
	}
	sched, err := nemesis.Plan(c.planParams())
	if err != nil {
		return err
	}
	c.Schedule = sched
	return nil
}

// validateNet checks the network faults' sizes (filling the defaults into a
// config made without them, as a sweep's).
func (c *Config) validateNet() error {
	if c.Net == (nemesis.NetSizes{}) {
		c.Net = nemesis.DefaultNetSizes
	}
	n := c.Net
	switch {
	case n.Latency <= 0:
		return fmt.Errorf("--net-latency %v: want a delay above 0, e.g. 300ms", n.Latency)
	case n.Latency > c.TimeLimit:
		return fmt.Errorf("--net-latency %v is longer than --time-limit %v: no reply would arrive inside the run; want e.g. 300ms", n.Latency, c.TimeLimit)
	case n.Jitter < 0 || n.Jitter > n.Latency:
		return fmt.Errorf("--net-jitter %v: want 0 to --net-latency (%v); toxiproxy draws each delay in latency ± jitter", n.Jitter, n.Latency)
	case !(n.Share > 0 && n.Share <= 1):
		return fmt.Errorf("--net-share %v: want a share of the connections above 0 and at most 1, e.g. 0.5", n.Share)
	}
	return nil
}

// UseDefaultFaultGap gives faults on a scenario with no gap of its own
// (baseline: 0) scenario.DefaultFaultInterval, and reports whether it did:
// the one rule run --faults and a sweep's cells follow.
func (c *Config) UseDefaultFaultGap() bool {
	if c.Interval != 0 || len(c.Faults) == 0 || c.BackToBack {
		return false
	}
	c.Interval = scenario.DefaultFaultInterval
	return true
}

// resolveTargets maps each fault given as a mechanism over a target
// (kill-leader) to the entry of the run's deployment (its folder's own), so
// that the schedule, the history and config.json name what was injected.
func (c *Config) resolveTargets() error {
	var faults []string
	for _, name := range c.Faults {
		r, err := nemesis.Resolve(name, c.Cluster.Topology)
		if err != nil {
			return fmt.Errorf("--faults: %w", err)
		}
		// kill-leader,kill-primary on Sentinel is one fault, not one drawn
		// twice as often as the others.
		if !slices.Contains(faults, r) {
			faults = append(faults, r)
		}
	}
	if c.Faults != nil { // an empty list stays one in config.json
		c.Faults = append(make([]string, 0, len(faults)), faults...)
	}
	for i, s := range c.FaultsAt {
		r, err := nemesis.Resolve(s.Fault, c.Cluster.Topology)
		if err != nil {
			return fmt.Errorf("--faults-at: %w", err)
		}
		c.FaultsAt[i].Fault = r
	}
	return nil
}
