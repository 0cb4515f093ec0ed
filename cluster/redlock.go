package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// Topologies lists the shapes a cluster can take: one Sentinel-managed
// primary with replicas, or Redlock's N independent primaries.
var Topologies = []string{TopologySentinel, TopologyRedlock, TopologyEtcd, TopologyCluster}

// Topology names.
const (
	TopologySentinel = "sentinel"
	TopologyRedlock  = "redlock"
)

// DefaultRedlockNodes is the distlock page's N = 5.
const DefaultRedlockNodes = 5

// errNoPrimary answers Primary and WaitFailover on the redlock topology,
// where every node is a primary of its own: faults name nodes instead.
var errNoPrimary = errors.New("the redlock topology has no single primary (N independent primaries): use a per-node fault (kill-node, pause-node, clock-bump-node)")

// IsRedlock reports whether the topology is Redlock's N independent primaries.
func (c *Config) IsRedlock() bool { return c.Topology == TopologyRedlock }

// TopologyName is the topology with its default filled in.
func (c *Config) TopologyName() string {
	if c.Topology == "" {
		return TopologySentinel
	}
	return c.Topology
}

func (c *Config) validateTopology() error {
	switch c.TopologyName() {
	case TopologySentinel:
		return nil
	case TopologyRedlock:
	case TopologyEtcd:
		return c.validateEtcd()
	case TopologyCluster:
		return c.validateCluster()
	default:
		return fmt.Errorf("--topology %q: want sentinel, redlock, etcd or cluster", c.Topology)
	}
	if c.Nodes == 0 {
		c.Nodes = DefaultRedlockNodes
	}
	if c.Nodes < 1 || c.Nodes > 9 {
		return fmt.Errorf("--nodes %d: want 1 to 9 independent primaries (5 is the distlock page's)", c.Nodes)
	}
	if c.MinReplicasToWrite > 0 {
		return fmt.Errorf("--min-replicas is a replication knob: the redlock topology has no replicas")
	}
	return nil
}

// newRedlockLocal lays out Nodes standalone primaries, valkey-0..N-1, with no
// replication and no Sentinel.
func newRedlockLocal(cfg Config, bins Binaries) (*Local, error) {
	ports, err := allocatePorts(cfg.BasePort, cfg.Nodes)
	if err != nil {
		return nil, err
	}
	l := &Local{cfg: cfg, bins: bins, procs: map[string]*proc{}, adm: newAdmin()}
	for i := 0; i < cfg.Nodes; i++ {
		name := fmt.Sprintf("valkey-%d", i)
		d := filepath.Join(cfg.Dir, name)
		l.nodes = append(l.nodes, Node{Name: name, Kind: RolePrimary, Dir: d, LogFile: filepath.Join(d, name+".log"),
			Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i]))})
	}
	return l, nil
}

// upRedlock starts every primary and waits until each answers PING.
func (l *Local) upRedlock(ctx context.Context) error {
	for _, n := range l.Nodes() {
		if err := os.RemoveAll(n.Dir); err != nil {
			return fmt.Errorf("clear %s: %w", n.Dir, err)
		}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", n.Dir, err)
		}
		if err := l.writeConfig(n, false); err != nil {
			return err
		}
		if err := l.start(n.Name); err != nil {
			l.Down()
			return err
		}
	}
	if err := l.saveState(); err != nil {
		return err
	}
	if err := l.WaitReady(ctx); err != nil {
		l.Down()
		return err
	}
	return l.saveState()
}

// redlockReadyOnce: every live, unpaused node answers PING.
func (l *Local) redlockReadyOnce(ctx context.Context) error {
	for _, n := range l.Nodes() {
		if n.PID == 0 || n.Paused {
			continue
		}
		if _, err := l.adm.do(ctx, n.Addr, "PING"); err != nil {
			return fmt.Errorf("%s does not answer PING: %w", n.Name, err)
		}
	}
	return nil
}

// Addrs lists the data nodes' addresses in name order: Redlock's N instances.
func Addrs(rt Runtime) []string {
	var out []string
	for _, n := range rt.Nodes() {
		if n.Kind != RoleSentinel {
			out = append(out, n.Addr)
		}
	}
	return out
}
