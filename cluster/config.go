package cluster

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/knob"
)

// MasterName is the name Sentinel monitors the primary under.
const MasterName = endpoint.DefaultMasterSet

// Config describes a topology and its timing. Zero values are filled by Defaults.
type Config struct {
	Dir      string // run directory; each node gets Dir/<name>/
	Replicas int
	// Watchers is how many watcher nodes a deployment that has them runs
	// (its WatcherKind: Sentinel's Sentinels), and Quorum how many of them
	// must agree; the deployment validates both. The JSON key is the one
	// every committed config.json carries.
	Watchers int `json:"Sentinels"`
	Quorum   int
	BasePort int // 0: pick free ports; else nodes use BasePort, BasePort+1, ...

	// Sentinel timing. Defaults chosen for fast, reliable failovers on loopback:
	// below ~200 ms down-after Sentinels flag healthy nodes down, and
	// failover-timeout 500 aborts failovers while 1000-3000 works.
	DownAfter       time.Duration
	FailoverTimeout time.Duration

	// Replication and persistence settings written into every node's config,
	// because Sentinel does not carry them over to a promoted replica.
	MinReplicasToWrite int
	MinReplicasMaxLag  int // seconds, as Valkey measures it
	AppendOnly         bool
	AppendFsync        string // always | everysec | no

	// MaxMemory (bytes, 0: none) and MaxMemoryPolicy are maxmemory and
	// maxmemory-policy on every node, as a managed cache sets them: with a
	// volatile-* policy the lock keys, which all have an expire, are
	// candidates for eviction (eviction.go).
	MaxMemory       int64  `json:"maxmemory,omitempty"`
	MaxMemoryPolicy string `json:"maxmemory_policy,omitempty"`

	// FakeTime starts every Valkey process under libfaketime so that its wall
	// clock can be moved at run time (SetClockOffset).
	FakeTime bool

	// Build picks the Valkey build every node runs: "" the default (9.x, with
	// Lua), "nolua" the same version built with BUILD_LUA=no, where every
	// EVAL-based lock fails. `make setup-ci` (setup.sh --builds) makes it.
	Build string `json:"build,omitempty"`
	// OldReplica runs the last replica on the old build (Valkey 8.1, no
	// DELIFEQ) and makes it Sentinel's preferred candidate (replica-priority 1,
	// the others 100): a rolling upgrade caught halfway.
	OldReplica bool `json:"old_replica,omitempty"`

	// Runtime is "local" (processes on loopback, the default) or "docker"
	// (containers on a private network, partitions possible).
	Runtime string `json:"runtime,omitempty"`

	// Topology is "sentinel" (one primary, replicas and Sentinels: the
	// default) or "redlock" (Nodes independent primaries, no replication, no
	// Sentinel), see redlock.go.
	Topology string `json:"topology,omitempty"`
	// Nodes is the number of independent primaries of the redlock topology.
	Nodes int `json:"nodes,omitempty"`
	// Members is the number of members of a consensus topology (MemberLayout).
	Members int `json:"members,omitempty"`
	// Shards is the number of primaries of the cluster topology (Valkey
	// Cluster), each with Replicas replicas; see deployments/valkeycluster.
	Shards int `json:"shards,omitempty"`

	// Opts are the options of a deployment that owns flags of its own
	// (FlagOwner), by flag name; its Validate checks them.
	Opts map[string]string `json:"opts,omitempty"`

	// NetProxy puts a TCP proxy in front of every Valkey node, in
	// lockjepsen's own process, that the network faults act on
	// (netproxy.go).
	NetProxy bool `json:"net_proxy,omitempty"`

	// Detached leaves the processes running when lockjepsen exits (cluster up);
	// otherwise they die with it (parent-death signal).
	Detached bool
}

// Builds lists the Valkey builds a topology can run (--valkey-build).
var Builds = []string{"default", "nolua"}

func (c *Config) build() string {
	if c.Build == "" {
		return "default"
	}
	return c.Build
}

// OldNode is the node that runs the old build under OldReplica: the last
// replica, so that the first primary stays on the new build.
func (c *Config) OldNode() string {
	if !c.OldReplica {
		return ""
	}
	return fmt.Sprintf("valkey-%d", c.Replicas)
}

// RuntimeLocal is the default runtime's name: processes on loopback.
const RuntimeLocal = "local"

func (c *Config) runtime() string {
	if c.Runtime == "" {
		return RuntimeLocal
	}
	return c.Runtime
}

// validateWithDir is Validate plus the run directory every runtime needs.
func (c *Config) validateWithDir() error {
	if c.Dir == "" {
		return fmt.Errorf("cluster config: no run directory")
	}
	return c.Validate()
}

// Defaults returns the documented defaults.
func Defaults() Config {
	return Config{
		Replicas:          2,
		Watchers:          3,
		DownAfter:         1000 * time.Millisecond,
		FailoverTimeout:   2000 * time.Millisecond,
		MinReplicasMaxLag: 10,
		AppendFsync:       "everysec",
	}
}

// Validate checks the knobs and fills derived values. It does not ask for a
// run directory, so that a command can check its flags before it has made
// one; NewLocal and NewDocker do.
func (c *Config) Validate() error {
	if err := c.validateTopology(); err != nil {
		return err
	}
	if err := c.validateOpts(); err != nil {
		return err
	}
	if c.Replicas < 0 || c.Replicas > 8 {
		return fmt.Errorf("--replicas %d: want 0 to 8", c.Replicas)
	}
	if c.DownAfter < 100*time.Millisecond {
		return fmt.Errorf("--down-after %v: below ~200ms Sentinels flag healthy nodes down; use 200ms or more", c.DownAfter)
	}
	if c.FailoverTimeout < 1000*time.Millisecond {
		return fmt.Errorf("--failover-timeout %v: below 1s failovers abort on Valkey 9.1; use 1s-3s", c.FailoverTimeout)
	}
	if c.MinReplicasToWrite < 0 || c.MinReplicasToWrite > c.Replicas {
		// Both spellings: --min-replicas COUNT:LAG is the flag, the old
		// --min-replicas-to-write still parses.
		return fmt.Errorf("--min-replicas %d:%d (--min-replicas-to-write %d): want a count of 0 to --replicas (%d)", c.MinReplicasToWrite, c.MinReplicasMaxLag, c.MinReplicasToWrite, c.Replicas)
	}
	if c.MinReplicasMaxLag < 0 {
		return fmt.Errorf("--min-replicas-max-lag %d: want seconds >= 0", c.MinReplicasMaxLag)
	}
	switch c.AppendFsync {
	case "":
		c.AppendFsync = "everysec"
	case "always", "everysec", "no":
	default:
		return fmt.Errorf("--appendfsync %q: want always, everysec or no", c.AppendFsync)
	}
	if err := c.validateMaxMemory(); err != nil {
		return err
	}
	if err := knob.OneOf("runtime", c.runtime(), knob.Runtimes); err != nil {
		return err
	}
	if err := knob.OneOf("valkey-build", c.build(), Builds); err != nil {
		return err
	}
	if (c.Build != "" || c.OldReplica) && c.runtime() != "local" {
		return fmt.Errorf("--valkey-build and --mixed-versions need --runtime local: the docker image carries the default build only")
	}
	if c.OldReplica && c.Replicas < 1 {
		return fmt.Errorf("--mixed-versions runs one replica on the old build: want --replicas 1 or more")
	}
	if c.NetProxy {
		switch {
		case !c.Deployment().Offers(NeedNetProxy):
			return fmt.Errorf("--net-proxy puts proxies in front of Valkey nodes: drop it with --topology %s", c.TopologyName())
		case c.Detached:
			return fmt.Errorf("--net-proxy needs lockjepsen running beside the nodes (the proxies are in its process): use it with run, not cluster up")
		}
	}
	// A port a node, as the Valkey deployments take them (Valkey Cluster
	// checks its bus ports' range too, in its Validate); --base-port is a
	// flag of `cluster up` alone, which starts the default deployment.
	if n := len(c.Deployment().Layout(*c)); c.BasePort != 0 && (c.BasePort < 1024 || c.BasePort+n > 65535) {
		return fmt.Errorf("--base-port %d: want 1024..%d", c.BasePort, 65535-n)
	}
	return nil
}

// Opt is the deployment option name's value ("" when unset).
func (c *Config) Opt(name string) string { return c.Opts[name] }

// SetOpt sets a deployment option (its flag's Set).
func (c *Config) SetOpt(name, value string) {
	if c.Opts == nil {
		c.Opts = map[string]string{}
	}
	c.Opts[name] = value
}

// validateOpts refuses an option the config's deployment does not own: a
// flag of another deployment's on this one is a mistake the user should hear of.
func (c *Config) validateOpts() error {
	for name, v := range c.Opts {
		if err := ForeignFlag(name, v, c.TopologyName()); err != nil {
			return err
		}
	}
	return nil
}

// FlagOwners maps each flag a deployment owns (FlagOwner) to the
// topologies that register it, in Topologies' order.
func FlagOwners() map[string][]string {
	owners := map[string][]string{}
	for _, t := range Topologies {
		d, _ := Lookup(t)
		if fo, ok := d.(FlagOwner); ok {
			fs := flag.NewFlagSet("", flag.ContinueOnError)
			fo.Flags(fs, &Config{})
			fs.VisitAll(func(f *flag.Flag) { owners[f.Name] = append(owners[f.Name], t) })
		}
	}
	return owners
}

// ForeignFlag refuses a deployment's own flag set on a run of another
// topology (nil when topology owns it, or no deployment does): given on the
// wrong deployment it would change nothing, silently.
func ForeignFlag(name, value, topology string) error {
	owners, owned := FlagOwners()[name]
	if !owned || slices.Contains(owners, topology) {
		return nil
	}
	return fmt.Errorf("--%s %s: it is an option of --topology %s, and this run uses %s; drop --%s or use --topology %s",
		name, value, strings.Join(owners, " or "), topology, name, strings.Join(owners, " or "))
}

// SetFlag sets the config's deployment's own flag name to value, as its
// --name would: how a sweep's configuration applies NAME=VALUE.
func (c *Config) SetFlag(name, value string) error {
	if err := ForeignFlag(name, value, c.TopologyName()); err != nil {
		return err
	}
	fo, ok := c.Deployment().(FlagOwner)
	if !ok {
		return fmt.Errorf("--%s %s: no deployment has that option", name, value)
	}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fo.Flags(fs, c)
	if err := fs.Set(name, value); err != nil {
		return fmt.Errorf("--%s %s: %w", name, value, err)
	}
	return nil
}
