package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
)

func init() { Register(1, redlockDeployment{}) }

// TopologyRedlock is Redlock's N independent primaries: no replication, no
// Sentinel; the recipe asks a majority of them.
const TopologyRedlock = "redlock"

// DefaultRedlockNodes is the distlock page's N = 5.
const DefaultRedlockNodes = 5

// errNoPrimary answers Primary and WaitFailover on the redlock topology,
// where every node is a primary of its own: faults name nodes instead.
var errNoPrimary = errors.New("the redlock topology has no single primary (N independent primaries): use a per-node fault (kill-node, pause-node, clock-bump-node)")

type redlockDeployment struct{ ValkeyBase }

func (redlockDeployment) Name() string { return TopologyRedlock }
func (redlockDeployment) Doc() string {
	return "--nodes independent primaries (the distlock page's N = 5), no replication, no Sentinel"
}
func (redlockDeployment) Banner(c Config, version string) string {
	return fmt.Sprintf("cluster: redlock, %d independent primaries, no replication, no Sentinel (Valkey %s)", c.Nodes, version)
}

// redlockNote is the Redlock note's title ("Redis SET NX EX vs Redlock",
// checker.RedlockTitle), which the summary cites.
const redlockNote = "Redis SET NX EX vs Redlock"

func (redlockDeployment) Note(c Config, fenced bool) string {
	if fenced {
		return fmt.Sprintf("topology redlock: %d independent primaries. Redlock has no monotonic counter of its own; the fence numbers here come from the resource's own sequence, asked for after each grant (--fence-source resource).", c.Nodes)
	}
	return fmt.Sprintf("topology redlock: %d independent primaries. Redlock has no monotonic counter (no single node could keep one), so no fence number is drawn: a paused holder's late write can only be stopped by a number the resource issues itself (%q).", c.Nodes, redlockNote)
}
func (redlockDeployment) Settled() string { return "waiting for every node to answer PING" }

// Replicated is false: no primary and replicas to settle, every live node
// answering PING is the whole wait.
func (redlockDeployment) Replicated() bool { return false }
func (redlockDeployment) Endpoints(rt Runtime) Endpoints {
	return Endpoints{Addrs: Addrs(rt), DialMap: DialMapOf(rt)}
}
func (redlockDeployment) Offers(need string) bool {
	return need == TopologyRedlock || need == NeedAny || need == NeedNetProxy
}
func (redlockDeployment) ValidateRun(k RunKnobs) error {
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

func (redlockDeployment) Validate(c *Config) error {
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

// layout: valkey-0..N-1, every one a primary.
func (redlockDeployment) Layout(c Config) []Node { return LayoutValkey(c, c.Nodes, 0) }
func (redlockDeployment) Start(ctx context.Context, l *Local) error {
	return l.upRedlock(ctx)
}
func (redlockDeployment) ReadyOnce(ctx context.Context, l *Local) error {
	return l.redlockReadyOnce(ctx)
}
func (redlockDeployment) FindPrimary(context.Context, *Local) (Node, error) {
	return Node{}, errNoPrimary
}
func (redlockDeployment) AwaitFailover(context.Context, *Local, string) (Node, error) {
	return Node{}, errNoPrimary
}

// rejoinsAsReplica is false: a redlock node comes back as the primary it was
// (its own config; the nemesis's kill-node says so).
func (redlockDeployment) RejoinsAsReplica() bool { return false }

// meshed is false: Redlock's primaries never talk to each other, so each
// sits on its home network alone (the host reaches it there); Partition has
// nothing to cut on that topology, Isolate cuts the node off from the clients.
func (redlockDeployment) Meshed() bool { return false }

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
			out = append(out, n.Reach()) // the proxy, with --net-proxy
		}
	}
	return out
}

// ClientTestLayout: three primaries, a majority of 2, so that one can be
// stopped.
func (redlockDeployment) ClientTestLayout(c *Config) { c.Nodes = 3 }

// ClientTestHooks add the minority case: node i SIGSTOPped around a grant.
func (redlockDeployment) ClientTestHooks(_ context.Context, rt Runtime, ep Endpoints) ClientTestHooks {
	return ClientTestHooks{
		Against: fmt.Sprintf("Valkey %s, %d independent primaries (Redlock)", rt.Version(), len(ep.Addrs)),
		PauseNode: func(i int) (func() error, error) {
			name := nodeReaching(rt, ep.Addrs[i])
			if err := rt.Pause(name); err != nil {
				return nil, err
			}
			return func() error { return rt.Resume(name) }, nil
		},
	}
}
