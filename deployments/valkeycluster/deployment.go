// Package valkeycluster is Valkey Cluster (--topology cluster): --shards
// primaries with --replicas replicas each as Valkey processes on loopback,
// failed over by the cluster bus (no Sentinel); its slot moves (slotmove.go),
// its faults (faults.go: a shard's primary killed, cut off, failed over;
// reshard.go: the lock key's slot moved) and its scenarios (scenarios.go).
// The lock recipes reach it through valkey-go's cluster client (lock/cluster.go).
package valkeycluster

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// The cluster topology: Valkey Cluster with Shards primaries, each with
// Replicas replicas, failover by the cluster bus (no Sentinel). It runs on
// cluster.Local: valkey-0..S-1 start as the shards'
// primaries (slots split evenly), then valkey-S.. as replicas, shard s's
// r-th replica being valkey-(S + s·Replicas + r).

// Topology is the --topology value.
const Topology = "cluster"

// Slots is Valkey Cluster's hash-slot count.
const Slots = 16384

// LockKey is the first lock key of a run (runner.Keys); Primary and
// WaitFailover on the cluster topology mean the shard that owns its slot.
const LockKey = "lock:{job-1}"

func init() { cluster.Register(3, deployment{}) }

type deployment struct{ cluster.ValkeyBase }

func (deployment) Name() string { return Topology }
func (deployment) Doc() string {
	return "Valkey Cluster: --shards primaries with --replicas replicas each, failed over by the cluster bus"
}

// ClientTestDoc says what client-test starts here (ClientTestDocumenter).
func (deployment) ClientTestDoc() string {
	return "a Valkey Cluster of 3 primaries: LOCKJEPSEN_CLUSTER_NODES"
}
func (deployment) Banner(c cluster.Config, version string) string {
	return fmt.Sprintf("cluster: Valkey Cluster, %d shards of 1 primary and %d replica(s), failover by the cluster bus (cluster-node-timeout %v), no Sentinel (Valkey %s)",
		c.Shards, c.Replicas, c.DownAfter, version)
}
func (deployment) Settled() string {
	return "waiting for cluster_state:ok on every node, replicas in sync"
}
func (deployment) Endpoints(rt cluster.Runtime) endpoint.Set {
	return endpoint.Set{Protocol: endpoint.Cluster, Addrs: cluster.Addrs(rt), DialMap: cluster.DialMapOf(rt)}
}
func (deployment) Protocol() endpoint.Protocol { return endpoint.Cluster }
func (deployment) Offers(need string) bool {
	return need == Topology || need == cluster.NeedAny || need == cluster.NeedReplicas || need == cluster.NeedNetProxy
}
func (deployment) ValidateRun(k cluster.RunKnobs) error {
	if k.DelayedRestart > 0 {
		return fmt.Errorf("--delayed-restart is a redlock-topology knob (a crashed cluster primary rejoins as a replica): add --topology redlock")
	}
	return nil
}

// Defaults: --topology cluster on a Sentinel scenario starts one replica per
// shard unless --replicas says otherwise (Sentinel's default of 2 would
// triple the processes).
func (deployment) Defaults(c *cluster.Config, set func(string) bool) {
	if !set("replicas") {
		c.Replicas = 1
	}
}
func (deployment) Validate(c *cluster.Config) error { return validate(c) }

// DefaultShards is 3 shards: the fewest with which the other primaries
// still form a majority to elect a replica when one primary dies.
const DefaultShards = 3

// Flags registers --shards (cluster.FlagOwner).
func (deployment) Flags(fs *flag.FlagSet, c *cluster.Config) {
	if c.Shards == 0 {
		c.Shards = DefaultShards
	}
	fs.Var(knob.Int{N: &c.Shards, Min: 3, Max: 9}, "shards", "shards, each a primary with --replicas replicas (Valkey Cluster, failover by the cluster bus)")
}

// Comparisons is Valkey Cluster's row in the comparison of lock services
// (cluster.Compared): the native lock fenced by INCR in the lock key's slot;
// its failover is cluster-cut-replication (its Kind).
func (deployment) Comparisons() []cluster.Comparison {
	return []cluster.Comparison{{Name: "cluster-fence", Recipe: "native", Fence: "read-write",
		Note:    "Valkey Cluster, 3 shards of a primary and a replica, fence read-write from INCR in the lock key's slot (--topology cluster --fence read-write)",
		ClockNA: "no clock fault on Valkey Cluster nodes in this version"}}
}

// layout: the shards' primaries valkey-0..S-1, then their replicas.
func (deployment) Layout(c cluster.Config) []cluster.Node {
	return cluster.LayoutValkey(c, c.Shards, c.Shards*c.Replicas)
}
func (deployment) Start(ctx context.Context, l *cluster.Local) error { return upCluster(ctx, l) }

// BusPorts: each node's cluster bus listens on its port + 10000.
func (deployment) BusPorts() bool { return true }
func (deployment) ReadyOnce(ctx context.Context, l *cluster.Local) error {
	return clusterReadyOnce(ctx, l)
}
func (deployment) FindPrimary(ctx context.Context, l *cluster.Local) (cluster.Node, error) {
	return clusterPrimary(ctx, l)
}
func (deployment) AwaitFailover(ctx context.Context, l *cluster.Local, from string) (cluster.Node, error) {
	return clusterWaitFailover(ctx, l, from)
}

// rejoinsAsReplica is false: a cluster node keeps its nodes.conf and
// rejoins as a replica of whoever took its slots (the cluster bus demotes it).
func (deployment) RejoinsAsReplica() bool { return false }

// Replicated is false here although every shard has replicas: "one primary
// with every live replica linked to it" reads the other shards' primaries as
// replicas that never link, so a back-to-back sweep stopped its fault
// schedule after the first fault of every trial ("valkey-1 does not
// replicate valkey-0 with its link up yet"). WaitReady is the right wait
// between two faults: the slots served, one owner in every view (a moved
// slot included), every replica linked.
func (deployment) Replicated() bool { return false }

func validate(c *cluster.Config) error {
	if c.Shards == 0 {
		c.Shards = DefaultShards
	}
	if c.Shards < 3 || c.Shards > 9 {
		return fmt.Errorf("--shards %d: want 3 to 9 (with fewer than 3 primaries the survivors are no majority and no replica can be elected)", c.Shards)
	}
	if c.Replicas < 0 || c.Replicas > 4 {
		return fmt.Errorf("--replicas %d: want 0 to 4 replicas per shard on --topology cluster", c.Replicas)
	}
	if c.Runtime != "" && c.Runtime != cluster.RuntimeLocal {
		return fmt.Errorf("--topology cluster runs on --runtime local only in this version (the docker runtime starts Sentinels)")
	}
	if c.DownAfter < 500*time.Millisecond {
		return fmt.Errorf("--down-after %v is the cluster-node-timeout on --topology cluster: want 500ms or more (1s is reliable on loopback)", c.DownAfter)
	}
	if c.OldReplica {
		return fmt.Errorf("--mixed-versions is a Sentinel-topology scenario knob")
	}
	if n := c.Shards * (1 + c.Replicas); c.BasePort != 0 && (c.BasePort < 1024 || c.BasePort+n > 65535-10000) {
		return fmt.Errorf("--base-port %d: want 1024..%d (each node's cluster bus listens on its port + 10000)", c.BasePort, 65535-10000-n)
	}
	return nil
}

// clusterConf is a node's config: the common one plus cluster mode. The
// validity factor 0 lets a replica that was paused or cut off for long still
// be elected (the failover race pauses them for seconds).
func clusterConf(c *cluster.Config, n *cluster.Node, port int) string {
	var b strings.Builder
	b.WriteString(cluster.ValkeyConf(c, n, port, ""))
	b.WriteString("cluster-enabled yes\ncluster-config-file nodes.conf\n")
	fmt.Fprintf(&b, "cluster-node-timeout %d\n", c.DownAfter.Milliseconds())
	b.WriteString("cluster-replica-validity-factor 0\n")
	// A shard without a primary must not stop the others' writes.
	b.WriteString("cluster-require-full-coverage no\n")
	if n.Announce != "" {
		// --net-proxy: the slot map names the proxy (replicas replicate
		// through it, clients are mapped to their own); the bus stays direct.
		h, p, _ := strings.Cut(n.Announce, ":")
		fmt.Fprintf(&b, "cluster-announce-ip %s\ncluster-announce-port %s\ncluster-announce-bus-port %d\n", h, p, port+10000)
	}
	return b.String()
}

// upCluster starts every node, assigns the slots, joins the nodes with
// CLUSTER MEET and makes each replica REPLICATE its shard's primary, then
// waits until the cluster is ready.
func upCluster(ctx context.Context, l *cluster.Local) error {
	cfg := l.Config()
	fail := func(err error) error { l.Down(); return err }
	for _, n := range l.Nodes() {
		if err := os.RemoveAll(n.Dir); err != nil {
			return fmt.Errorf("clear %s: %w", n.Dir, err)
		}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", n.Dir, err)
		}
		p, _ := strconv.Atoi(n.Addr[len("127.0.0.1:"):])
		if err := runfolder.Replace(filepath.Join(n.Dir, "node.conf"), []byte(clusterConf(&cfg, &n, p)), 0o644); err != nil {
			return err
		}
		if cfg.FakeTime {
			if err := l.WriteOffset(n, "+0"); err != nil {
				return err
			}
		}
		if err := l.StartNode(n.Name); err != nil {
			return fail(err)
		}
	}
	if err := l.SaveState(); err != nil {
		return err
	}
	nodes := l.Nodes()
	for i, n := range nodes {
		if err := l.WaitPing(ctx, n.Addr); err != nil {
			return fail(err)
		}
		// Distinct epochs up front: no collision to resolve after the MEETs.
		if _, err := l.Do(ctx, n.Addr, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return fail(err)
		}
	}
	for s := 0; s < cfg.Shards; s++ {
		lo, hi := s*Slots/cfg.Shards, (s+1)*Slots/cfg.Shards-1
		if _, err := l.Do(ctx, nodes[s].Addr, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return fail(err)
		}
	}
	h, p, _ := net.SplitHostPort(nodes[0].Addr)
	for _, n := range nodes[1:] {
		if _, err := l.Do(ctx, n.Addr, "CLUSTER", "MEET", h, p); err != nil {
			return fail(err)
		}
	}
	ids, err := awaitMeet(ctx, l)
	if err != nil {
		return fail(err)
	}
	for i := cfg.Shards; i < len(nodes); i++ {
		shard := (i - cfg.Shards) / max(1, cfg.Replicas)
		if _, err := l.Do(ctx, nodes[i].Addr, "CLUSTER", "REPLICATE", ids[shard]); err != nil {
			return fail(err)
		}
	}
	if err := l.WaitReady(ctx); err != nil {
		return fail(err)
	}
	return l.SaveState()
}

// awaitMeet waits until every node knows every other one (the handshakes
// are done) and returns the node IDs by index.
func awaitMeet(ctx context.Context, l *cluster.Local) ([]string, error) {
	cfg := l.Config()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	nodes := l.Nodes()
	ids := make([]string, len(nodes))
	for {
		done := true
		for i, n := range nodes {
			view, err := clusterNodes(ctx, l, n.Addr)
			if err != nil || len(view) < len(nodes) {
				done = false
				break
			}
			for _, v := range view {
				if strings.Contains(v.Flags, "handshake") || strings.Contains(v.Flags, "noaddr") {
					done = false
				}
				if v.Myself {
					ids[i] = v.ID
				}
			}
		}
		if done {
			return ids, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the cluster nodes did not all meet within 20s; see the logs under %s", cfg.Dir)
		case <-time.After(cluster.PollEvery):
		}
	}
}

// ClusterNode is one line of CLUSTER NODES.
type ClusterNode struct {
	ID, Addr, Flags, MasterID string
	Myself, Primary, Failing  bool
	Slots                     [][2]int
}

// Owns reports whether the node serves slot.
func (c ClusterNode) Owns(slot int) bool {
	for _, r := range c.Slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// ParseClusterNodes reads CLUSTER NODES' text.
func ParseClusterNodes(s string) []ClusterNode {
	var out []ClusterNode
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		addr, _, _ = strings.Cut(addr, ",") // hostname suffix
		cn := ClusterNode{ID: f[0], Addr: addr, Flags: f[2], MasterID: f[3]}
		for _, fl := range strings.Split(f[2], ",") {
			switch fl {
			case "myself":
				cn.Myself = true
			case "master":
				cn.Primary = true
			case "fail", "fail?":
				cn.Failing = true
			}
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") { // a slot being migrated
				continue
			}
			lo, hi, found := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			b := a
			var err2 error
			if found {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 == nil && err2 == nil {
				cn.Slots = append(cn.Slots, [2]int{a, b})
			}
		}
		out = append(out, cn)
	}
	return out
}

func clusterNodes(ctx context.Context, l *cluster.Local, addr string) ([]ClusterNode, error) {
	r, err := l.Do(ctx, addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	s, err := r.ToString()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES from %s: %w", addr, err)
	}
	return ParseClusterNodes(s), nil
}

// KeySlot is Valkey Cluster's hash slot of a key: CRC16 (XMODEM) of the
// hash tag (the part between the first { and the next }, when not empty)
// modulo 16384, as CLUSTER KEYSLOT computes it.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % Slots
}

// cluster.Shard asks a live node which primary owns key's slot, and which replicas
// follow that primary (cluster.ShardFinder: Local.Shard asks it).
func (deployment) Shard(ctx context.Context, l *cluster.Local, key string) (cluster.Shard, error) {
	slot := KeySlot(key)
	var last error = fmt.Errorf("no live node to ask")
	for _, n := range l.Nodes() {
		if n.PID == 0 || n.Paused {
			continue
		}
		view, err := clusterNodes(ctx, l, n.Addr)
		if err != nil {
			last = err
			continue
		}
		sh, err := shardIn(l, view, slot)
		if err != nil {
			last = fmt.Errorf("as %s sees it: %w", n.Name, err)
			continue
		}
		return sh, nil
	}
	return cluster.Shard{}, last
}

func shardIn(l *cluster.Local, view []ClusterNode, slot int) (cluster.Shard, error) {
	sh := cluster.Shard{Slot: slot}
	var pid string
	for _, v := range view {
		if v.Primary && v.Owns(slot) {
			n, ok := l.NodeByAddr(v.Addr)
			if !ok {
				return sh, fmt.Errorf("slot %d is served by %s, not a node of this cluster", slot, v.Addr)
			}
			sh.Primary, sh.Failing, pid = n, v.Failing, v.ID
		}
	}
	if pid == "" {
		return sh, fmt.Errorf("no primary serves slot %d", slot)
	}
	for _, v := range view {
		if !v.Primary && v.MasterID == pid {
			if n, ok := l.NodeByAddr(v.Addr); ok {
				sh.Replicas = append(sh.Replicas, n)
			}
		}
	}
	sort.Slice(sh.Replicas, func(i, j int) bool { return sh.Replicas[i].Name < sh.Replicas[j].Name })
	return sh, nil
}

// clusterPrimary is Primary on the cluster topology: the primary of the
// shard that owns LockKey's slot.
func clusterPrimary(ctx context.Context, l *cluster.Local) (cluster.Node, error) {
	sh, err := l.Shard(ctx, LockKey)
	if err != nil {
		return cluster.Node{}, err
	}
	return sh.Primary, nil
}

// clusterWaitFailover waits until a node other than from says of itself
// that it is a primary serving LockKey's slot (it accepts the lock's writes
// from then on).
func clusterWaitFailover(ctx context.Context, l *cluster.Local, from string) (cluster.Node, error) {
	slot := KeySlot(LockKey)
	for {
		for _, n := range l.Nodes() {
			if n.Name == from || n.PID == 0 || n.Paused {
				continue
			}
			view, err := clusterNodes(ctx, l, n.Addr)
			if err != nil {
				continue
			}
			for _, v := range view {
				if v.Myself && v.Primary && v.Owns(slot) {
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

// clusterReadyOnce: every live node reports cluster_state:ok with every
// slot served, every live node sees the same primaries serving the same
// slots, none of them failing, and every live replica's link is up.
func clusterReadyOnce(ctx context.Context, l *cluster.Local) error {
	var first string
	for _, n := range l.Nodes() {
		if n.PID == 0 || n.Paused {
			continue
		}
		inf, err := l.Info(ctx, n.Addr, "replication")
		if err != nil {
			return err
		}
		r, err := l.Do(ctx, n.Addr, "CLUSTER", "INFO")
		if err != nil {
			return err
		}
		s, _ := r.ToString()
		ci := cluster.ParseInfo(s)
		if ci["cluster_state"] != "ok" || ci["cluster_slots_ok"] != strconv.Itoa(Slots) {
			return fmt.Errorf("%s: cluster_state %s, slots ok %s of %d", n.Name, ci["cluster_state"], ci["cluster_slots_ok"], Slots)
		}
		view, err := clusterNodes(ctx, l, n.Addr)
		if err != nil {
			return err
		}
		var owners []string
		for _, v := range view {
			if v.Primary && len(v.Slots) > 0 {
				if v.Failing {
					return fmt.Errorf("%s flags primary %s %s", n.Name, v.Addr, v.Flags)
				}
				owners = append(owners, fmt.Sprintf("%s=%v", v.Addr, v.Slots))
			}
			if v.Myself && !v.Primary && inf["role"] != "slave" {
				return fmt.Errorf("%s is a replica in the cluster's view but reports role %s", n.Name, inf["role"])
			}
		}
		sort.Strings(owners)
		sig := strings.Join(owners, " ")
		if first == "" {
			first = sig
		} else if sig != first {
			return fmt.Errorf("%s sees the slots served by %s, another node by %s", n.Name, sig, first)
		}
		if inf["role"] == "slave" && inf["master_link_status"] != "up" {
			return fmt.Errorf("%s: master_link_status %s", n.Name, inf["master_link_status"])
		}
	}
	return nil
}

// ClientTestLayout: the primaries are enough (no fault here).
func (deployment) ClientTestLayout(c *cluster.Config) { c.Replicas = 0 }

// cluster.ClientTestHooks add the slot case: the key's slot moved mid-grant, the
// legacy way (ASK while the move is open, MOVED once it closes).
func (deployment) ClientTestHooks(ctx context.Context, rt cluster.Runtime, ep endpoint.Set) cluster.ClientTestHooks {
	return cluster.ClientTestHooks{
		Against: fmt.Sprintf("Valkey %s Cluster (%d primaries)", rt.Version(), len(ep.Addrs)),
		MoveSlot: func(key string) (func() error, error) {
			m, err := PlanSlotMove(ctx, rt, key)
			if err != nil {
				return nil, err
			}
			if err := m.Open(ctx, rt); err != nil {
				return nil, err
			}
			if _, err := m.MigrateKeys(ctx, rt, nil); err != nil {
				_, _ = m.Close(context.WithoutCancel(ctx), rt, nil)
				return nil, err
			}
			return func() error { _, err := m.Close(context.WithoutCancel(ctx), rt, nil); return err }, nil
		},
	}
}
