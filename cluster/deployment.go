package cluster

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/endpoint"
)

// Deployment is one shape a cluster can take, the value --topology names:
// Sentinel's primary and replicas, Redlock's independent primaries, Valkey
// Cluster, a standalone primary, and the deployments in folders of their own
// under deployments/.
// Everything that differs between them is a method here, so that a new
// deployment is one folder (its type, registered by Register from its init,
// its runtime, its faults and scenarios, under deployments/); callers ask the value, never the name. What only some
// deployments have (shards, partitions, a database to restart, flags of their
// own) stays an optional interface found by type assertion, as Sharded,
// Partitioner and FlagOwner are.
type Deployment interface {
	Name() string
	// Doc is one line for --topology's help and the docs.
	Doc() string
	// Banner is the run's "cluster:" phase line.
	Banner(c Config, version string) string
	// Note is what a run's summary says of the deployment before the
	// verdict ("" for nothing); fenced: the run checks fence numbers.
	Note(c Config, fenced bool) string
	// Settled says what the end of a run waits for (the "heal:" line).
	Settled() string
	// Replicated: between two faults the runner waits for one primary with
	// every live replica linked; otherwise WaitReady is the whole wait.
	Replicated() bool
	// Endpoints says how a lock client reaches the lock service.
	Endpoints(rt Runtime) endpoint.Set
	// Protocol is what its clients speak (Endpoints' protocol, known
	// before it starts): the recipes that speak it run here.
	Protocol() endpoint.Protocol
	// Expires reports whether the lock keys live on Valkey nodes with a
	// PTTL a run's end can audit (a consensus service's keys live as long
	// as their lease or session).
	Expires() bool
	// Offers reports whether the deployment has what a fault needs (a
	// fault's Needs.Topology: "primary", "failover", "redlock", ...).
	Offers(need string) bool
	// ClockError is why a node's clock cannot be moved here, nil if it can.
	ClockError() error
	// ValidateRun refuses the run knobs that mean nothing here, naming the fix.
	ValidateRun(k RunKnobs) error
	// Defaults fills what --topology changes when the user did not set it
	// (set reports whether a flag was given).
	Defaults(c *Config, set func(flag string) bool)
	// Validate refuses the cluster knobs that mean nothing here (its own
	// options in c.Opts among them), naming the fix.
	Validate(c *Config) error
	// Layout lists the nodes in start order, names and kinds only.
	Layout(c Config) []Node
	// NewLocal makes the runtime that starts the deployment on this machine.
	NewLocal(c Config, bins Binaries) (Runtime, error)
}

// FlagOwner is a deployment with flags of its own (a pooling mode, the
// number of shards, nodes or members): the commands that take --topology
// register them (a flag two deployments own, once), a sweep's configuration
// sets them by name (SetFlag), and they write into the config (a field of
// its, or Opts), which the deployment's Validate checks. Flags may preset
// the default of the field it writes.
type FlagOwner interface {
	Flags(fs *flag.FlagSet, c *Config)
}

// ClientTester is a deployment with a layout or cases of its own for
// client-test: the smallest layout its cases need, and what the conformance
// suite may do behind the program's back there. A deployment without it runs
// client-test's common cases on its run layout, named by its Banner.
type ClientTester interface {
	// ClientTestLayout shrinks c to what the cases need.
	ClientTestLayout(c *Config)
	// ClientTestHooks is what the suite gets on the started deployment.
	ClientTestHooks(ctx context.Context, rt Runtime, ep endpoint.Set) ClientTestHooks
}

// ClientTestDocumenter is a deployment that says, for client-test's
// --topology help, what the program is run against there and where it finds
// it; one without it is described by its Doc.
type ClientTestDocumenter interface {
	ClientTestDoc() string
}

// Described is every registered deployment by rank as "name (doc)", doc
// being what the caller asks of it: --topology's help lists them.
func Described(doc func(Deployment) string) []string {
	parts := make([]string, len(Topologies))
	for i, name := range Topologies {
		parts[i] = name + " (" + doc(deployments[name]) + ")"
	}
	return parts
}

// ClientTestTopologies describes every registered deployment for
// client-test's --topology help: "sentinel (...), ... or postgres (...)".
func ClientTestTopologies() string {
	return orList(Described(func(d Deployment) string {
		if c, ok := d.(ClientTestDocumenter); ok {
			return c.ClientTestDoc()
		}
		return d.Doc()
	}))
}

// orList is "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// ClientTestHooks mirror the conformance suite's options (lock's
// ClientTestOptions, which this package does not import): each nil one
// leaves its case out.
type ClientTestHooks struct {
	// Against names what the program runs against, e.g. "Valkey 9.1.2 (1
	// primary, 1 Sentinel)".
	Against string
	// TTL is the lease the cases ask for; 0: client-test's 5 s.
	TTL time.Duration
	// PauseNode stops node i of ep.Addrs until resume is called.
	PauseNode func(i int) (resume func() error, err error)
	// MoveSlot opens a move of key's slot and migrates its keys (ASK);
	// done closes it (MOVED).
	MoveSlot func(key string) (done func() error, err error)
	// ChangeLeader kills the leader; restore restarts it.
	ChangeLeader func() (restore func() error, leader string, err error)
}

// Comparison is one row a deployment offers the comparison of lock services
// (the sweep's deployment axis): the recipe and fence it runs, its options as
// its flags would set them, and a note for the report.
type Comparison struct {
	Name, Recipe, Fence string
	// FenceSource: where the fence number comes from ("" the recipe's
	// default; "resource" the database's sequence).
	FenceSource string
	Opts        map[string]string
	Note        string
	// ClockNA is why the clock-jump fault kind has no counterpart here, as
	// a table's n/a cell says it; "" falls back to ClockError's words.
	ClockNA string
	// StandIns names, per deployment-neutral fault kind, faults declared
	// elsewhere that stand for it here (standalone's clock jump is the
	// Sentinel primary's clock-bump), beside the faults whose own Kind and
	// On name this deployment.
	StandIns map[string][]string
}

// Compared is a deployment that joins the comparison sweep with rows of its
// own; the sweep adds only the database's lease, which is a recipe's.
type Compared interface {
	Comparisons() []Comparison
}

// ValkeyDeployment is a deployment of Valkey nodes, which the Local and
// Docker runtimes start: what those runtimes ask of it beyond Deployment.
// Embedding ValkeyBase gives the common answers.
type ValkeyDeployment interface {
	Deployment
	// Start starts l's nodes in order and returns once they are ready.
	Start(ctx context.Context, l *Local) error
	// ReadyOnce is nil when the deployment is ready now (WaitReady polls it).
	ReadyOnce(ctx context.Context, l *Local) error
	// FindPrimary is the node the deployment's clients write to.
	FindPrimary(ctx context.Context, l *Local) (Node, error)
	// AwaitFailover waits for a primary other than from.
	AwaitFailover(ctx context.Context, l *Local, from string) (Node, error)
	// RejoinsAsReplica: Restart(AsReplica) rewrites a data node's config to
	// follow the current primary (a redlock node comes back as the primary
	// it was; a cluster node is demoted by the cluster bus).
	RejoinsAsReplica() bool
	// Meshed (docker runtime): every node sits on every node's network.
	Meshed() bool
	// LayoutDocker lays out the docker runtime's containers.
	LayoutDocker(d *Docker)
	// BusPorts: each node also listens on its port + 10000 (Valkey
	// Cluster's bus), which must be free too.
	BusPorts() bool
}

// dialMapper is a runtime with client proxies (--net-proxy).
type dialMapper interface{ DialMap() map[string]string }

// DialMapOf is rt's dial map, nil when it has none.
func DialMapOf(rt Runtime) map[string]string {
	if d, ok := rt.(dialMapper); ok {
		return d.DialMap()
	}
	return nil
}

// RunKnobs are the run's knobs (runner.Config's) that a deployment may refuse.
type RunKnobs struct {
	Wait, WaitAOF      bool
	Fence, FenceSource string
	DelayedRestart     time.Duration
}

// Capabilities a fault can need (Needs.Topology) that more than one
// deployment offers.
const (
	// NeedPrimary: one primary the clients write to, with replicas.
	NeedPrimary = "primary"
	// NeedFailover: an automatic failover of that primary (Sentinel's).
	NeedFailover = "failover"
	// NeedAny: every deployment (faults that act on clients only).
	NeedAny = "any"
	// NeedReplicas: the lock's primary replicates to replicas of its own
	// (Sentinel's, standalone's, a cluster shard's), not Redlock's N.
	NeedReplicas = "replicas"
	// NeedNodes: N independent primaries, one of which a per-node fault
	// picks (Redlock's).
	NeedNodes = "nodes"
	// NeedNetProxy: Valkey nodes a proxy can stand in front of (--net-proxy):
	// the clients, Sentinels and replicas dial them through the run's dial map.
	NeedNetProxy = "net-proxy"
)

var (
	deployments = map[string]Deployment{}
	ranks       = map[string]int{}
)

// Topologies lists the registered deployments' names by rank: the order
// --topology's help and its errors list them in, the default first.
var Topologies []string

// Register adds a deployment (from its package's init); rank places it in
// Topologies, and rank 0 makes it the default: the deployment a config that
// names no topology runs (Sentinel's primary and replicas, which the project
// grew up on).
func Register(rank int, d Deployment) {
	if _, dup := deployments[d.Name()]; dup {
		panic("cluster: deployment " + d.Name() + " registered twice")
	}
	if def := DefaultTopology(); rank == 0 && def != "" {
		panic("cluster: deployments " + def + " and " + d.Name() + " both registered as the default (rank 0)")
	}
	deployments[d.Name()], ranks[d.Name()] = d, rank
	Topologies = append(Topologies, d.Name())
	sort.SliceStable(Topologies, func(i, j int) bool { return ranks[Topologies[i]] < ranks[Topologies[j]] })
}

// DefaultTopology is the name of the deployment registered with rank 0, ""
// when none is (a binary linking no deployment package).
func DefaultTopology() string {
	for name, r := range ranks {
		if r == 0 {
			return name
		}
	}
	return ""
}

// Lookup returns the deployment --topology names ("" is the default).
func Lookup(name string) (Deployment, error) {
	if name == "" {
		name = DefaultTopology()
	}
	if d, ok := deployments[name]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("--topology %q: want %s", name, orList(Topologies))
}

// Deployment is the config's deployment; Validate has refused unknown names,
// so an unknown one here is a programming error.
func (c *Config) Deployment() Deployment {
	d, err := Lookup(c.Topology)
	if err != nil {
		panic(err)
	}
	return d
}

// TopologyName is the topology with its default filled in.
func (c *Config) TopologyName() string {
	if c.Topology == "" {
		return DefaultTopology()
	}
	return c.Topology
}

// valkey is the config's deployment as the Local and Docker runtimes
// drive it; only Valkey deployments get there.
func (c *Config) valkey() ValkeyDeployment { return c.Deployment().(ValkeyDeployment) }

func (c *Config) validateTopology() error {
	d, err := Lookup(c.Topology)
	if err != nil {
		return err
	}
	_, valkey := d.(ValkeyDeployment)
	_, served := d.(DockerServed)
	if !valkey && !served && c.runtime() != RuntimeLocal {
		return fmt.Errorf("--runtime %s: --topology %s runs on --runtime local only (drop --runtime)", c.runtime(), d.Name())
	}
	return d.Validate(c)
}

// ValkeyBase holds what most Valkey deployments share: a local runtime
// of Valkey processes, a primary found by its role, every node meshed.
type ValkeyBase struct{}

func (ValkeyBase) Expires() bool                       { return true }
func (ValkeyBase) Note(Config, bool) string            { return "" }
func (ValkeyBase) ClockError() error                   { return nil }
func (ValkeyBase) Replicated() bool                    { return true }
func (ValkeyBase) Meshed() bool                        { return true }
func (ValkeyBase) Defaults(*Config, func(string) bool) {}
func (ValkeyBase) NewLocal(c Config, bins Binaries) (Runtime, error) {
	return newLocal(c, bins)
}
func (ValkeyBase) RejoinsAsReplica() bool { return true }
func (ValkeyBase) BusPorts() bool         { return false }
func (ValkeyBase) LayoutDocker(d *Docker) { d.layoutValkey() }
