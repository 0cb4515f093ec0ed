// Package sentinel is the default deployment, the one the Valkey lock
// article's failover race happens on: one primary, --replicas replicas and
// --sentinels Sentinels that fail it over by a quorum; clients find the
// primary by asking the Sentinels. Its faults are the primary's (kill, pause,
// cut its replication, restart it fast), declared with their mechanisms in
// package nemesis; the runtimes start its Sentinel processes as a kind of
// node that watches the servers (Role, declared in watcher.go) as they start
// Valkey servers.
package sentinel

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/knob"
)

// Rank 0: the default deployment, the one a config naming no topology runs.
func init() { cluster.Register(0, deployment{}) }

// Topology is the deployment's name, the default of --topology.
const Topology = "sentinel"

type deployment struct{ cluster.ValkeyBase }

func (deployment) Name() string { return Topology }
func (deployment) Doc() string {
	return "one primary, --replicas replicas and --sentinels Sentinels that fail it over (the default)"
}

// ClientTestDoc says what client-test starts here (ClientTestDocumenter).
func (deployment) ClientTestDoc() string {
	return "one Valkey primary, one Sentinel"
}
func (deployment) Banner(c cluster.Config, version string) string {
	return fmt.Sprintf("cluster: 1 primary, %d replicas, %d Sentinels (Valkey %s)", c.Replicas, c.Watchers, version)
}
func (deployment) Settled() string { return "waiting for one primary with replicas in sync" }
func (deployment) Endpoints(rt cluster.Runtime) endpoint.Set {
	return endpoint.Set{Protocol: endpoint.Sentinel, Addrs: rt.WatcherAddrs(), MasterSet: cluster.MasterName, DialMap: cluster.DialMapOf(rt)}
}
func (deployment) Protocol() endpoint.Protocol { return endpoint.Sentinel }
func (deployment) Offers(need string) bool {
	return need == cluster.NeedPrimary || need == cluster.NeedFailover || need == cluster.NeedAny || need == cluster.NeedReplicas || need == cluster.NeedNetProxy
}
func (deployment) ValidateRun(k cluster.RunKnobs) error {
	if k.DelayedRestart > 0 {
		return fmt.Errorf("--delayed-restart is a redlock-topology knob (a crashed Sentinel-managed primary rejoins as a replica): add --topology redlock")
	}
	return nil
}

// Validate checks the Sentinels and fills their quorum, a majority unless
// set.
func (deployment) Validate(c *cluster.Config) error {
	if c.Watchers < 1 || c.Watchers > 7 {
		return fmt.Errorf("--sentinels %d: want 1 to 7 (3 is the usual)", c.Watchers)
	}
	if c.Quorum == 0 {
		c.Quorum = c.Watchers/2 + 1
	}
	if c.Quorum < 1 || c.Quorum > c.Watchers {
		return fmt.Errorf("quorum %d: want 1 to --sentinels (%d)", c.Quorum, c.Watchers)
	}
	return nil
}

// Flags registers --sentinels (FlagOwner): on any other deployment it would
// change nothing.
func (deployment) Flags(fs *flag.FlagSet, c *cluster.Config) {
	fs.Var(knob.Int{N: &c.Watchers, Min: 1, Max: 7}, "sentinels", "Sentinels; quorum is a majority")
}

// Layout is valkey-0 the first primary, its replicas, then the Sentinels.
func (deployment) Layout(c cluster.Config) []cluster.Node {
	nodes := cluster.LayoutValkey(c, 1, c.Replicas)
	for s := 0; s < c.Watchers; s++ {
		nodes = append(nodes, cluster.Node{Name: fmt.Sprintf("sentinel-%d", s), Kind: Role})
	}
	return nodes
}
func (deployment) Start(ctx context.Context, l *cluster.Local) error { return l.UpReplicated(ctx) }

// FindPrimary is the node a majority of all Sentinels names.
func (deployment) FindPrimary(ctx context.Context, l *cluster.Local) (cluster.Node, error) {
	addr, answers := votes(ctx, l)
	if addr == "" {
		return cluster.Node{}, fmt.Errorf("no majority of Sentinels agrees on a primary: %v", answers)
	}
	n, ok := l.NodeByAddr(addr)
	if !ok {
		return cluster.Node{}, fmt.Errorf("Sentinels name %s, which is not a node of this cluster", addr)
	}
	return n, nil
}

// AwaitFailover waits until a majority of Sentinels name a primary other
// than the node `from`, and that node answers as a primary.
func (deployment) AwaitFailover(ctx context.Context, l *cluster.Local, from string) (cluster.Node, error) {
	old, err := l.MustNode(from)
	if err != nil {
		return cluster.Node{}, err
	}
	for {
		if addr, _ := votes(ctx, l); addr != "" && !old.Answers(addr) {
			if n, ok := l.NodeByAddr(addr); ok {
				if inf, err := l.Info(ctx, n.Addr, "replication"); err == nil && inf["role"] == "master" {
					return n, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return cluster.Node{}, fmt.Errorf("no failover away from %s: %w", from, ctx.Err())
		case <-time.After(cluster.PollEvery):
		}
	}
}

// votes asks every reachable Sentinel for the primary and returns the
// address a majority of all Sentinels names ("" when there is no majority).
func votes(ctx context.Context, l *cluster.Local) (string, map[string]string) {
	count := map[string]int{}
	answers := map[string]string{}
	sentinels := l.WatcherAddrs()
	for _, s := range sentinels {
		n, _ := l.NodeByAddr(s)
		if n.PID == 0 || n.Paused {
			continue
		}
		addr, err := primaryAt(ctx, l, s)
		if err != nil {
			answers[n.Name] = "error: " + err.Error()
			continue
		}
		answers[n.Name] = addr
		count[addr]++
	}
	for addr, v := range count {
		if v > len(sentinels)/2 {
			return addr, answers
		}
	}
	return "", answers
}

// ReadyOnce is one look at readiness: one primary named by every live
// Sentinel, every live replica's link to it up, and every Sentinel seeing
// all live replicas and the other Sentinels.
func (d deployment) ReadyOnce(ctx context.Context, l *cluster.Local) error {
	primary, err := d.FindPrimary(ctx, l)
	if err != nil {
		return err
	}
	if primary.PID == 0 || primary.Paused {
		return fmt.Errorf("Sentinels still name %s, which is down or paused", primary.Name)
	}
	inf, err := l.Info(ctx, primary.Addr, "replication")
	if err != nil {
		return err
	}
	if inf["role"] != "master" {
		return fmt.Errorf("%s is named primary but reports role %s", primary.Name, inf["role"])
	}
	var liveReplicas []cluster.Node
	for _, n := range l.ValkeyNodes() {
		if n.Name == primary.Name || n.PID == 0 || n.Paused {
			continue
		}
		liveReplicas = append(liveReplicas, n)
		ri, err := l.Info(ctx, n.Addr, "replication")
		if err != nil {
			return err
		}
		if ri["role"] != "slave" || !primary.Answers(ri["master_host"]+":"+ri["master_port"]) {
			return fmt.Errorf("%s does not replicate %s yet (role %s, master %s:%s)", n.Name, primary.Name, ri["role"], ri["master_host"], ri["master_port"])
		}
		if ri["master_link_status"] != "up" {
			return fmt.Errorf("%s: master_link_status %s", n.Name, ri["master_link_status"])
		}
	}
	sentinels := l.WatcherAddrs()
	for _, s := range sentinels {
		sn, _ := l.NodeByAddr(s)
		if sn.PID == 0 || sn.Paused {
			continue
		}
		p, err := primaryAt(ctx, l, s)
		if err != nil {
			return err
		}
		if !primary.Answers(p) {
			return fmt.Errorf("%s names %s, the others %s", sn.Name, p, primary.Reach())
		}
		reps, err := listAt(ctx, l, s, "REPLICAS")
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, r := range reps {
			if !strings.Contains(r["flags"], "down") && !strings.Contains(r["flags"], "disconnected") {
				seen[r["ip"]+":"+r["port"]] = true
			}
		}
		for _, n := range liveReplicas {
			if !seen[n.Reach()] {
				return fmt.Errorf("%s does not yet see replica %s as healthy", sn.Name, n.Name)
			}
		}
		others, err := listAt(ctx, l, s, "SENTINELS")
		if err != nil {
			return err
		}
		if len(others) < len(sentinels)-1 {
			return fmt.Errorf("%s sees %d other Sentinels, want %d", sn.Name, len(others), len(sentinels)-1)
		}
	}
	return nil
}

// ClientTestLayout: one primary watched by one Sentinel is all the cases
// need (no fault here).
func (deployment) ClientTestLayout(c *cluster.Config) { c.Replicas, c.Watchers, c.Quorum = 0, 1, 1 }

func (deployment) ClientTestHooks(_ context.Context, rt cluster.Runtime, _ endpoint.Set) cluster.ClientTestHooks {
	return cluster.ClientTestHooks{Against: fmt.Sprintf("Valkey %s (1 primary, 1 Sentinel)", rt.Version())}
}

// Comparisons are Sentinel's rows of the comparison of lock services
// (cluster.Compared), the ones every other deployment is read against: the
// native lock fenced by INCR on Valkey, and by the resource database's own
// sequence. Its failover kind is the failover race itself (the primary's
// replication cut, then its kill), its clock jump the primary's.
func (deployment) Comparisons() []cluster.Comparison {
	return []cluster.Comparison{
		{Name: "sentinel-fence", Recipe: "native", Fence: knob.FenceReadWrite, FenceSource: knob.FenceSourceValkey,
			Note:     "Sentinel-managed primary + 2 replicas, recipe native, fence read-write from INCR on Valkey (--fence read-write)",
			StandIns: standIns},
		{Name: "sentinel-dbfence", Recipe: "native", Fence: knob.FenceReadWrite, FenceSource: knob.FenceSourceResource,
			Note:     "the same lock, fence numbers from the database's own sequence (--fence-source resource)",
			StandIns: standIns},
	}
}

var standIns = map[string][]string{"failover": {"cut-replication"}, "clock-jump": {"clock-bump"}}
