package cluster

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/knob"
)

func init() { Register(0, sentinelDeployment{}) }

// TopologySentinel is the default deployment: one primary with replicas,
// failed over by a quorum of Sentinels; clients find the primary by asking
// them.
const TopologySentinel = "sentinel"

type sentinelDeployment struct{ ValkeyBase }

func (sentinelDeployment) Name() string { return TopologySentinel }
func (sentinelDeployment) Doc() string {
	return "one primary, --replicas replicas and --sentinels Sentinels that fail it over (the default)"
}

// ClientTestDoc says what client-test starts here (ClientTestDocumenter).
func (sentinelDeployment) ClientTestDoc() string {
	return "one Valkey primary, one Sentinel"
}
func (sentinelDeployment) Banner(c Config, version string) string {
	return fmt.Sprintf("cluster: 1 primary, %d replicas, %d Sentinels (Valkey %s)", c.Replicas, c.Sentinels, version)
}
func (sentinelDeployment) Settled() string { return "waiting for one primary with replicas in sync" }
func (sentinelDeployment) Endpoints(rt Runtime) endpoint.Set {
	return endpoint.Set{Protocol: endpoint.Sentinel, Addrs: rt.SentinelAddrs(), MasterSet: MasterName, DialMap: DialMapOf(rt)}
}
func (sentinelDeployment) Protocol() endpoint.Protocol { return endpoint.Sentinel }
func (sentinelDeployment) Offers(need string) bool {
	return need == NeedPrimary || need == NeedFailover || need == NeedAny || need == NeedReplicas || need == NeedNetProxy
}
func (sentinelDeployment) ValidateRun(k RunKnobs) error {
	if k.DelayedRestart > 0 {
		return fmt.Errorf("--delayed-restart is a redlock-topology knob (a crashed Sentinel-managed primary rejoins as a replica): add --topology redlock")
	}
	return nil
}
func (sentinelDeployment) Validate(*Config) error { return nil }

// Flags registers --sentinels (FlagOwner): on any other deployment it would
// change nothing.
func (sentinelDeployment) Flags(fs *flag.FlagSet, c *Config) {
	fs.Var(knob.Int{N: &c.Sentinels, Min: 1, Max: 7}, "sentinels", "Sentinels; quorum is a majority")
}
func (sentinelDeployment) Layout(c Config) []Node                    { return layoutSentinel(c) }
func (sentinelDeployment) Start(ctx context.Context, l *Local) error { return l.UpReplicated(ctx) }
func (sentinelDeployment) ReadyOnce(ctx context.Context, l *Local) error {
	return l.readyOnce(ctx)
}
func (sentinelDeployment) FindPrimary(ctx context.Context, l *Local) (Node, error) {
	return l.sentinelPrimary(ctx)
}
func (sentinelDeployment) AwaitFailover(ctx context.Context, l *Local, from string) (Node, error) {
	return l.sentinelWaitFailover(ctx, from)
}

// sentinelVotes asks every reachable Sentinel for the primary and returns the
// address a majority of all Sentinels names ("" when there is no majority).
func (l *Local) sentinelVotes(ctx context.Context) (string, map[string]string) {
	votes := map[string]int{}
	answers := map[string]string{}
	sentinels := l.SentinelAddrs()
	for _, s := range sentinels {
		n, _ := l.NodeByAddr(s)
		if n.PID == 0 || n.Paused {
			continue
		}
		addr, err := l.adm.sentinelPrimary(ctx, s)
		if err != nil {
			answers[n.Name] = "error: " + err.Error()
			continue
		}
		answers[n.Name] = addr
		votes[addr]++
	}
	for addr, v := range votes {
		if v > len(sentinels)/2 {
			return addr, answers
		}
	}
	return "", answers
}

// Primary returns the deployment's primary: the node a majority of
// Sentinels names, the lock key's shard's primary, the standalone primary.
func (l *Local) Primary(ctx context.Context) (Node, error) {
	return l.cfg.valkey().FindPrimary(ctx, l)
}

// WaitFailover waits until the deployment has a primary other than the node
// `from`, and that node answers as a primary.
func (l *Local) WaitFailover(ctx context.Context, from string) (Node, error) {
	return l.cfg.valkey().AwaitFailover(ctx, l, from)
}

// sentinelPrimary is Primary on the Sentinel topology.
func (l *Local) sentinelPrimary(ctx context.Context) (Node, error) {
	addr, answers := l.sentinelVotes(ctx)
	if addr == "" {
		return Node{}, fmt.Errorf("no majority of Sentinels agrees on a primary: %v", answers)
	}
	n, ok := l.NodeByAddr(addr)
	if !ok {
		return Node{}, fmt.Errorf("Sentinels name %s, which is not a node of this cluster", addr)
	}
	return n, nil
}

// sentinelWaitFailover waits until a majority of Sentinels name a primary
// other than the node `from`, and that node answers as a primary.
func (l *Local) sentinelWaitFailover(ctx context.Context, from string) (Node, error) {
	old, err := l.MustNode(from)
	if err != nil {
		return Node{}, err
	}
	for {
		if addr, _ := l.sentinelVotes(ctx); addr != "" && !old.Answers(addr) {
			if n, ok := l.NodeByAddr(addr); ok {
				if inf, err := l.adm.info(ctx, n.Addr, "replication"); err == nil && inf["role"] == "master" {
					return n, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return Node{}, fmt.Errorf("no failover away from %s: %w", from, ctx.Err())
		case <-time.After(PollEvery):
		}
	}
}

// WaitReady waits until the deployment is ready: on Sentinel's, one primary
// named by every live Sentinel, every live replica's link to it up, and every
// Sentinel seeing all live replicas and the other Sentinels.
func (l *Local) WaitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	d := l.cfg.valkey()
	var last error
	for {
		if last = d.ReadyOnce(ctx, l); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ready after %v: %w", ReadyTimeout, last)
		case <-time.After(PollEvery):
		}
	}
}

// readyOnce is one look at the Sentinel topology's readiness.
func (l *Local) readyOnce(ctx context.Context) error {
	primary, err := l.Primary(ctx)
	if err != nil {
		return err
	}
	if primary.PID == 0 || primary.Paused {
		return fmt.Errorf("Sentinels still name %s, which is down or paused", primary.Name)
	}
	inf, err := l.adm.info(ctx, primary.Addr, "replication")
	if err != nil {
		return err
	}
	if inf["role"] != "master" {
		return fmt.Errorf("%s is named primary but reports role %s", primary.Name, inf["role"])
	}
	var liveReplicas []Node
	for _, n := range l.ValkeyNodes() {
		if n.Name == primary.Name || n.PID == 0 || n.Paused {
			continue
		}
		liveReplicas = append(liveReplicas, n)
		ri, err := l.adm.info(ctx, n.Addr, "replication")
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
	sentinels := l.SentinelAddrs()
	for _, s := range sentinels {
		sn, _ := l.NodeByAddr(s)
		if sn.PID == 0 || sn.Paused {
			continue
		}
		p, err := l.adm.sentinelPrimary(ctx, s)
		if err != nil {
			return err
		}
		if !primary.Answers(p) {
			return fmt.Errorf("%s names %s, the others %s", sn.Name, p, primary.Reach())
		}
		reps, err := l.adm.sentinelList(ctx, s, "REPLICAS")
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
		others, err := l.adm.sentinelList(ctx, s, "SENTINELS")
		if err != nil {
			return err
		}
		if len(others) < len(sentinels)-1 {
			return fmt.Errorf("%s sees %d other Sentinels, want %d", sn.Name, len(others), len(sentinels)-1)
		}
	}
	return nil
}

// Status describes each node as it reports itself, for `cluster status`.
type Status struct {
	Node
	Role    string `json:"role"` // what the node says now: master, slave, sentinel, down, paused
	Detail  string `json:"detail"`
	Primary string `json:"sentinel_primary,omitempty"`
}

// Status asks every node for its role and link state.
func (l *Local) Status(ctx context.Context) []Status {
	var out []Status
	for _, n := range l.Nodes() {
		s := Status{Node: n}
		switch {
		case n.PID == 0:
			s.Role = "down"
		case !alive(n.PID):
			s.Role, s.Detail = "down", fmt.Sprintf("pid %d is gone", n.PID)
		case n.Paused:
			s.Role = "paused"
		case n.Kind == RoleSentinel:
			s.Role = "sentinel"
			if p, err := l.adm.sentinelPrimary(ctx, n.Addr); err == nil {
				pn, _ := l.NodeByAddr(p)
				s.Primary = pn.Name
				s.Detail = "primary " + pn.Name
			} else {
				s.Detail = err.Error()
			}
		default:
			inf, err := l.adm.info(ctx, n.Addr, "replication")
			if err != nil {
				s.Role, s.Detail = "unreachable", err.Error()
				break
			}
			s.Role = inf["role"]
			if s.Role == "slave" {
				pn, _ := l.NodeByAddr(inf["master_host"] + ":" + inf["master_port"])
				s.Detail = fmt.Sprintf("of %s, link %s", pn.Name, inf["master_link_status"])
			} else {
				s.Detail = fmt.Sprintf("%s replicas connected", inf["connected_slaves"])
			}
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Kind != RoleSentinel && out[j].Kind == RoleSentinel })
	return out
}

// ClientTestLayout: one primary watched by one Sentinel is all the cases
// need (no fault here).
func (sentinelDeployment) ClientTestLayout(c *Config) { c.Replicas, c.Sentinels, c.Quorum = 0, 1, 1 }

func (sentinelDeployment) ClientTestHooks(_ context.Context, rt Runtime, _ endpoint.Set) ClientTestHooks {
	return ClientTestHooks{Against: fmt.Sprintf("Valkey %s (1 primary, 1 Sentinel)", rt.Version())}
}
