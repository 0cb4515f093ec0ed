// Package runner carries out one lockjepsen run: cluster and resource up,
// clients started, the nemesis schedule played, everything healed, the history
// checked and the report written.
package runner

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// Config is every knob of a run; it is written to config.json.
type Config struct {
	Scenario  string        `json:"scenario"`
	Recipe    string        `json:"recipe"`
	Fence     string        `json:"fence"` // none | write | read-write
	Clients   int           `json:"clients"`
	Keys      int           `json:"keys"`
	TTL       time.Duration `json:"ttl_ns"`
	TimeLimit time.Duration `json:"time_limit_ns"`
	Seed      int64         `json:"seed"`
	Faults    []string      `json:"faults"`
	Interval  time.Duration `json:"interval_ns"`
	Job       scenario.Job  `json:"job"`
	Epsilon   time.Duration `json:"epsilon_ns"` // checker's clock tolerance on lease bounds

	Wait    lock.WaitOpt    `json:"wait"`
	WaitAOF lock.WaitAOFOpt `json:"waitaof"`

	Cluster     cluster.Config `json:"cluster"`
	ResourceDSN string         `json:"resource_dsn,omitempty"`
	Out         string         `json:"out"`

	Schedule []nemesis.Step `json:"schedule"`
	// Exe is the lockjepsen binary whose `client` and `resource serve`
	// subcommands the run starts; default: this executable.
	Exe      string   `json:"-"`
	Versions Versions `json:"versions"`
}

// Versions records what a run ran on.
type Versions struct {
	Valkey     string `json:"valkey"`
	Lockjepsen string `json:"lockjepsen"`
	Go         string `json:"go"`
}

// Warmup and Settle bracket the fault schedule.
const (
	Warmup = 3 * time.Second
	Settle = 2 * time.Second
)

// FromScenario fills a config from a preset.
func FromScenario(s scenario.Scenario) Config {
	c := Config{
		Scenario: s.Name, Recipe: lock.Native, Fence: "read-write",
		Clients: s.Clients, Keys: s.Keys, TTL: s.TTL, TimeLimit: s.TimeLimit, Seed: 1,
		Faults: s.Faults, Interval: s.Interval, Job: s.Job, Epsilon: checker.DefaultEpsilon,
		Cluster: cluster.Defaults(),
	}
	c.Cluster.FakeTime = s.FakeTime
	return c
}

// Validate checks the knobs and plans the schedule.
func (c *Config) Validate() error {
	switch c.Fence {
	case "none", "write", "read-write":
	default:
		return fmt.Errorf("--fence %q: want none, write or read-write", c.Fence)
	}
	if c.Fence != "none" && !Fenced(c.Recipe) {
		return fmt.Errorf("--recipe %s draws no fencing token (the library is driven unchanged): use --fence none", c.Recipe)
	}
	if c.Clients < 1 || c.Clients > 256 {
		return fmt.Errorf("--clients %d: want 1 to 256", c.Clients)
	}
	if c.Keys < 1 || c.Keys > c.Clients*4 {
		return fmt.Errorf("--keys %d: want 1 to 4x --clients", c.Keys)
	}
	if c.TTL < 100*time.Millisecond {
		return fmt.Errorf("--ttl %v: want 100ms or more (renewals happen every TTL/3)", c.TTL)
	}
	if c.TimeLimit < 5*time.Second {
		return fmt.Errorf("--time-limit %v: want 5s or more", c.TimeLimit)
	}
	if c.Wait.Replicas > c.Cluster.Replicas || c.WaitAOF.Replicas > c.Cluster.Replicas {
		return fmt.Errorf("--wait/--waitaof ask for more replicas than --replicas %d: such an acquire can never succeed", c.Cluster.Replicas)
	}
	if c.WaitAOF.Local > 0 && !c.Cluster.AppendOnly {
		return fmt.Errorf("--waitaof with a local count needs the AOF: add --appendonly (WAITAOF's first argument must be 0 when AOF is off)")
	}
	for _, f := range c.Faults {
		if (f == "clock-bump" || f == "clock-strobe") && !c.Cluster.FakeTime {
			c.Cluster.FakeTime = true
		}
	}
	if c.Interval <= 0 {
		c.Interval = 5 * time.Second
	}
	sched, err := nemesis.Plan(nemesis.PlanParams{
		Faults: c.Faults, Seed: c.Seed, TimeLimit: c.TimeLimit, Interval: c.Interval,
		Warmup: Warmup, Settle: Settle, TTL: c.TTL, DownAfter: c.Cluster.DownAfter,
	})
	if err != nil {
		return err
	}
	c.Schedule = sched
	return nil
}

// ParseWait reads --wait n:timeout (timeout a duration or milliseconds).
func ParseWait(s string) (lock.WaitOpt, error) {
	if s == "" {
		return lock.WaitOpt{}, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) != 2 {
		return lock.WaitOpt{}, fmt.Errorf("--wait %q: want replicas:timeout, e.g. 1:100ms", s)
	}
	n, err := strconv.Atoi(parts[0])
	if err != nil || n < 0 {
		return lock.WaitOpt{}, fmt.Errorf("--wait %q: replicas must be a number >= 0", s)
	}
	ms, err := parseMs(parts[1])
	if err != nil {
		return lock.WaitOpt{}, fmt.Errorf("--wait %q: %v", s, err)
	}
	return lock.WaitOpt{Replicas: n, TimeoutMs: ms}, nil
}

// ParseWaitAOF reads --waitaof local:replicas:timeout.
func ParseWaitAOF(s string) (lock.WaitAOFOpt, error) {
	if s == "" {
		return lock.WaitAOFOpt{}, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return lock.WaitAOFOpt{}, fmt.Errorf("--waitaof %q: want local:replicas:timeout, e.g. 1:1:100ms", s)
	}
	l, err1 := strconv.Atoi(parts[0])
	r, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || l < 0 || l > 1 || r < 0 {
		return lock.WaitAOFOpt{}, fmt.Errorf("--waitaof %q: local is 0 or 1, replicas a number >= 0", s)
	}
	ms, err := parseMs(parts[2])
	if err != nil {
		return lock.WaitAOFOpt{}, fmt.Errorf("--waitaof %q: %v", s, err)
	}
	return lock.WaitAOFOpt{Local: l, Replicas: r, TimeoutMs: ms}, nil
}

// ParseMinReplicas reads --min-replicas n:lag (lag in seconds, as Valkey has it).
func ParseMinReplicas(s string) (n, lag int, err error) {
	if s == "" {
		return 0, 10, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) != 2 {
		return 0, 0, fmt.Errorf("--min-replicas %q: want count:lag-seconds, e.g. 1:10", s)
	}
	n, err1 := strconv.Atoi(parts[0])
	lag, err2 := strconv.Atoi(strings.TrimSuffix(parts[1], "s"))
	if err1 != nil || err2 != nil || n < 0 || lag < 0 {
		return 0, 0, fmt.Errorf("--min-replicas %q: count and lag are whole numbers >= 0 (lag in seconds)", s)
	}
	return n, lag, nil
}

func parseMs(s string) (int64, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d.Milliseconds(), nil
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms < 0 {
		return 0, fmt.Errorf("timeout %q: want a duration (100ms) or milliseconds (100)", s)
	}
	return ms, nil
}
