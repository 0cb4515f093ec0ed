// Package redlock is Redlock's deployment: --nodes independent Valkey
// primaries (the distlock page's N = 5) on loopback or in containers, no
// replication, no Sentinel, and its scenarios (scenarios.go). The recipe that
// asks a majority of them is lock/redlock.go; the faults that act on one node
// of N (kill-node, crash-node, pause-node, clock-bump-node, redlock-clock-jump,
// redlock-restart, partition-minority) are nemesis's mechanisms over the
// nodes this deployment offers (cluster.NeedNodes).
package redlock

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/knob"
)

func init() { cluster.Register(1, deployment{}) }

// Topology is the --topology value: Redlock's N independent primaries, no
// replication, no Sentinel; the recipe asks a majority of them.
const Topology = "redlock"

// ErrNoPrimary answers Primary and WaitFailover on the redlock topology,
// where every node is a primary of its own: faults name nodes instead.
var ErrNoPrimary = errors.New("the redlock topology has no single primary (N independent primaries): use a per-node fault (kill-node, pause-node, clock-bump-node)")

type deployment struct{ cluster.ValkeyBase }

func (deployment) Name() string { return Topology }
func (deployment) Doc() string {
	return "--nodes independent primaries (the distlock page's N = 5), no replication, no Sentinel"
}

// ClientTestDoc says what client-test starts here (ClientTestDocumenter).
func (deployment) ClientTestDoc() string {
	return "3 independent primaries: LOCKJEPSEN_REDLOCK_NODES, and a case with one of them stopped"
}
func (deployment) Banner(c cluster.Config, version string) string {
	return fmt.Sprintf("cluster: redlock, %d independent primaries, no replication, no Sentinel (Valkey %s)", c.Nodes, version)
}

// redlockNote is the Redlock note's title ("Redis SET NX EX vs Redlock",
// report.NoteTitle), which the summary cites.
const redlockNote = "Redis SET NX EX vs Redlock"

func (deployment) Note(c cluster.Config, fenced bool) string {
	if fenced {
		return fmt.Sprintf("topology redlock: %d independent primaries. Redlock has no monotonic counter of its own; the fence numbers here come from the resource's own sequence, asked for after each grant (--fence-source resource).", c.Nodes)
	}
	return fmt.Sprintf("topology redlock: %d independent primaries. Redlock has no monotonic counter (no single node could keep one), so no fence number is drawn: a paused holder's late write can only be stopped by a number the resource issues itself (%q).", c.Nodes, redlockNote)
}
func (deployment) Settled() string { return "waiting for every node to answer PING" }

// Replicated is false: no primary and replicas to settle, every live node
// answering PING is the whole wait.
func (deployment) Replicated() bool { return false }
func (deployment) Endpoints(rt cluster.Runtime) endpoint.Set {
	return endpoint.Set{Protocol: endpoint.Redlock, Addrs: cluster.Addrs(rt), DialMap: cluster.DialMapOf(rt)}
}
func (deployment) Protocol() endpoint.Protocol { return endpoint.Redlock }
func (deployment) Offers(need string) bool {
	return need == Topology || need == cluster.NeedNodes || need == cluster.NeedAny || need == cluster.NeedNetProxy
}
func (deployment) ValidateRun(k cluster.RunKnobs) error {
	switch {
	case k.Wait:
		return fmt.Errorf("--wait counts replicas: the redlock topology has none")
	case k.WaitAOF:
		return fmt.Errorf("--waitaof is refused on the redlock topology: the recipes there write on N nodes, and WAITAOF counts one connection's writes")
	case k.Fence != "none" && k.FenceSource != "resource":
		// The database's own sequence needs nothing of the N nodes: Redlock
		// can be fenced that way (--fence-source resource), not by INCR.
		return fmt.Errorf("--fence %s: Redlock has no monotonic counter to fence with (no single node can keep one); use --fence none, or --fence-source resource (the database issues the number)", k.Fence)
	}
	return nil
}

// DefaultNodes is --nodes: the distlock page's N = 5.
const DefaultNodes = 5

// Flags registers --nodes (cluster.FlagOwner).
func (deployment) Flags(fs *flag.FlagSet, c *cluster.Config) {
	if c.Nodes == 0 {
		c.Nodes = DefaultNodes
	}
	fs.Var(knob.Int{N: &c.Nodes, Min: 1, Max: 9}, "nodes", "independent primaries (the distlock page's N)")
}

func (deployment) Validate(c *cluster.Config) error {
	if c.Nodes == 0 {
		c.Nodes = DefaultNodes
	}
	if c.Nodes < 1 || c.Nodes > 9 {
		return fmt.Errorf("--nodes %d: want 1 to 9 independent primaries (5 is the distlock page's)", c.Nodes)
	}
	if c.MinReplicasToWrite > 0 {
		return fmt.Errorf("--min-replicas is a replication knob: the redlock topology has no replicas")
	}
	return nil
}

// Comparisons are Redlock's rows in the comparison of lock services
// (cluster.Compared): unfenced, as the algorithm has no counter, and fenced
// by the database's sequence. Its failover is crash-node, its clock jump
// clock-bump-node (their Kind).
func (deployment) Comparisons() []cluster.Comparison {
	return []cluster.Comparison{
		{Name: "redlock", Recipe: "redlock", Fence: "none",
			Note: "Redlock over 5 independent primaries, no fence (--topology redlock --recipe redlock --fence none)"},
		{Name: "redlock-dbfence", Recipe: "redlock", Fence: "read-write", FenceSource: "resource",
			Note: "Redlock fenced by the database's sequence (--topology redlock --recipe redlock --fence-source resource)"},
	}
}

// layout: valkey-0..N-1, every one a primary.
func (deployment) Layout(c cluster.Config) []cluster.Node { return cluster.LayoutValkey(c, c.Nodes, 0) }
func (deployment) Start(ctx context.Context, l *cluster.Local) error {
	return upRedlock(ctx, l)
}
func (deployment) ReadyOnce(ctx context.Context, l *cluster.Local) error {
	return redlockReadyOnce(ctx, l)
}
func (deployment) FindPrimary(context.Context, *cluster.Local) (cluster.Node, error) {
	return cluster.Node{}, ErrNoPrimary
}
func (deployment) AwaitFailover(context.Context, *cluster.Local, string) (cluster.Node, error) {
	return cluster.Node{}, ErrNoPrimary
}

// RejoinsAsReplica is false: a redlock node comes back as the primary it was
// (its own config; the nemesis's kill-node says so).
func (deployment) RejoinsAsReplica() bool { return false }

// Meshed is false: Redlock's primaries never talk to each other, so each
// sits on its home network alone (the host reaches it there); Partition has
// nothing to cut on that topology, Isolate cuts the node off from the clients.
func (deployment) Meshed() bool { return false }

// upRedlock starts every primary and waits until each answers PING.
func upRedlock(ctx context.Context, l *cluster.Local) error {
	for _, n := range l.Nodes() {
		if err := os.RemoveAll(n.Dir); err != nil {
			return fmt.Errorf("clear %s: %w", n.Dir, err)
		}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", n.Dir, err)
		}
		if err := l.WriteConfig(n, false); err != nil {
			return err
		}
		if err := l.StartNode(n.Name); err != nil {
			l.Down()
			return err
		}
	}
	if err := l.SaveState(); err != nil {
		return err
	}
	if err := l.WaitReady(ctx); err != nil {
		l.Down()
		return err
	}
	return l.SaveState()
}

// redlockReadyOnce: every live, unpaused node answers PING.
func redlockReadyOnce(ctx context.Context, l *cluster.Local) error {
	for _, n := range l.Nodes() {
		if n.PID == 0 || n.Paused {
			continue
		}
		if _, err := l.Do(ctx, n.Addr, "PING"); err != nil {
			return fmt.Errorf("%s does not answer PING: %w", n.Name, err)
		}
	}
	return nil
}

// ClientTestLayout: three primaries, a majority of 2, so that one can be
// stopped.
func (deployment) ClientTestLayout(c *cluster.Config) { c.Nodes = 3 }

// cluster.ClientTestHooks add the minority case: node i SIGSTOPped around a grant.
func (deployment) ClientTestHooks(_ context.Context, rt cluster.Runtime, ep endpoint.Set) cluster.ClientTestHooks {
	return cluster.ClientTestHooks{
		Against: fmt.Sprintf("Valkey %s, %d independent primaries (Redlock)", rt.Version(), len(ep.Addrs)),
		PauseNode: func(i int) (func() error, error) {
			name := cluster.NodeReaching(rt, ep.Addrs[i])
			if err := rt.Pause(name); err != nil {
				return nil, err
			}
			return func() error { return rt.Resume(name) }, nil
		},
	}
}
