// Package cluster starts and breaks the deployments a lock runs on (a
// Deployment each: the Valkey ones here, Sentinel, Redlock, Valkey Cluster,
// standalone; the others in their folders under deployments/).
// Runtime is what the nemesis and runner use; Local runs the nodes as
// processes on loopback, Docker as containers on private networks.
package cluster

import (
	"context"
	"fmt"
	"time"
)

// Role of a node.
type Role string

const (
	RolePrimary Role = "primary"
	RoleReplica Role = "replica"
)

// Node is one Valkey server or Sentinel.
type Node struct {
	Name     string `json:"name"` // valkey-0.., sentinel-0..
	Kind     Role   `json:"kind"` // RolePrimary/RoleReplica as started, or a kind of its deployment (a Sentinel, a pooler)
	Addr     string `json:"addr"` // host:port clients use
	PID      int    `json:"pid"`  // 0 while the node is down
	Dir      string `json:"dir"`
	LogFile  string `json:"log"`
	Paused   bool   `json:"paused,omitempty"`
	Killed   bool   `json:"killed,omitempty"`
	ClockOff string `json:"clock_offset,omitempty"`
	// Announce is where the node's peers and clients reach it when that is
	// not Addr: its proxy under --net-proxy (netproxy.go); "" otherwise.
	Announce string `json:"announce,omitempty"`
}

// Reach is the address the node's peers and clients use: its proxy under
// --net-proxy, else Addr.
func (n Node) Reach() string {
	if n.Announce != "" {
		return n.Announce
	}
	return n.Addr
}

// Answers reports whether addr is one of the node's addresses (the direct
// one the harness uses, or the one it announces).
func (n Node) Answers(addr string) bool {
	return addr == n.Addr || (n.Announce != "" && addr == n.Announce)
}

// RestartMode says how a killed node comes back.
type RestartMode int

const (
	// AsReplica rewrites the node's config to replicate the current primary
	// (asked of Sentinel) before starting it: the safe default.
	AsReplica RestartMode = iota
	// WithOldConfig starts the node with the config it had. A former primary then
	// comes back as an empty, writable primary for ~10 s until Sentinel demotes
	// it, and writes it accepts in that window vanish: a lesson, not a default.
	WithOldConfig
)

// Runtime starts, observes and breaks a topology.
type Runtime interface {
	Up(ctx context.Context) error // start everything and wait until ready
	Down() error                  // stop everything the runtime started
	Nodes() []Node                // the servers, then the nodes that watch them
	Node(name string) (Node, bool)
	// WatcherAddrs lists the addresses of the nodes that watch the
	// servers (Node.Watches: Sentinel's); none where nothing does.
	WatcherAddrs() []string
	Version() string

	Kill(name string) error   // SIGKILL
	Pause(name string) error  // SIGSTOP
	Resume(name string) error // SIGCONT
	Restart(ctx context.Context, name string, mode RestartMode) error
	Stop(name string) error                   // graceful stop (SIGTERM), the node stays down
	SetClockOffset(name, offset string) error // libfaketime offset such as "+120" or "-1.5"; "" resets

	Primary(ctx context.Context) (Node, error) // the primary as the deployment names it (a majority of Sentinels, a shard's, a leader)
	// WaitFailover waits until the deployment names a primary other than from.
	WaitFailover(ctx context.Context, from string) (Node, error)
	WaitReady(ctx context.Context) error // ready as the deployment says: one primary, replicas linked, its watchers agreeing
	CollectLogs(dst string) error        // copy node logs into dst
	// Command runs one command on a node (CLIENT KILL, INFO ...).
	Command(ctx context.Context, name string, args ...string) (string, error)
}

// Timeouts used while waiting; generous because a loaded 2-core machine is slow.
const (
	ReadyTimeout    = 30 * time.Second
	PollEvery       = 50 * time.Millisecond
	commandDeadline = 2 * time.Second
)

// New makes the runtime cfg.Runtime names for cfg's deployment.
func New(cfg Config, bins Binaries) (Runtime, error) {
	d, err := Lookup(cfg.Topology)
	if err != nil {
		return nil, err
	}
	switch cfg.Runtime {
	case "", "local":
		return d.NewLocal(cfg, bins)
	case "docker":
		return newDocker(cfg, bins)
	}
	return nil, fmt.Errorf("--runtime %q: want local or docker", cfg.Runtime)
}

// newDocker is replaced by the Docker runtime when it is built in.
var newDocker = func(Config, Binaries) (Runtime, error) {
	return nil, fmt.Errorf("the docker runtime is not available in this build")
}

// Preflighter is a runtime that can say, before anything is created, that Up
// would fail (the docker runtime: daemon, image).
type Preflighter interface {
	Preflight(ctx context.Context) error
}

// NodeReaching is the name of the node clients reach at addr, "" if none.
func NodeReaching(rt Runtime, addr string) string {
	for _, n := range rt.Nodes() {
		if n.Reach() == addr {
			return n.Name
		}
	}
	return ""
}

// Repointer is a runtime whose clients reach the primary at a service
// address the operator can move (the standalone topology).
type Repointer interface {
	// Repoint sends new connections to node and drops the open ones, as a
	// moved virtual IP does: each client reconnects to node.
	Repoint(node string) error
}

// Shard is the primary and replicas serving one slot, as one node sees it.
type Shard struct {
	Slot     int    `json:"slot"`
	Primary  Node   `json:"primary"`
	Replicas []Node `json:"replicas"`
	// Failing: the node asked flags the primary fail or fail?.
	Failing bool `json:"failing,omitempty"`
}

// Sharded is a runtime whose topology has shards: the nemesis asks it for
// the shard that owns the lock key's slot.
type Sharded interface {
	Shard(ctx context.Context, key string) (Shard, error)
}

// ShardFinder is a Valkey deployment with shards (Valkey Cluster): Local
// is Sharded through it, whoever holds the Local (a run, `cluster up`, a
// test).
type ShardFinder interface {
	Shard(ctx context.Context, l *Local, key string) (Shard, error)
}

var _ Sharded = (*Local)(nil)

// Shard asks the deployment which primary owns key's slot, and which
// replicas follow that primary.
func (l *Local) Shard(ctx context.Context, key string) (Shard, error) {
	f, ok := l.cfg.Deployment().(ShardFinder)
	if !ok {
		return Shard{}, fmt.Errorf("the %s topology has no shards", l.cfg.TopologyName())
	}
	return f.Shard(ctx, l, key)
}

// Addrs lists the data nodes' addresses in name order: Redlock's N instances.
func Addrs(rt Runtime) []string {
	var out []string
	for _, n := range rt.Nodes() {
		if !n.Watches() {
			out = append(out, n.Reach()) // the proxy, with --net-proxy
		}
	}
	return out
}
