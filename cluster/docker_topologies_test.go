package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The redlock and etcd topologies on the docker runtime, one cluster each:
// every check of a topology runs against the same containers, since bringing
// a topology up is most of a Docker test's time.

// TestDockerRedlock: five standalone primaries in containers, each on its own
// network; kill (restart empty), freezer pause, clock offset and isolation
// from the clients act through the Engine API and heal.
func TestDockerRedlock(t *testing.T) {
	dockerSlot(t)
	d := startDocker(t, func(c *Config) { c.Topology, c.FakeTime = TopologyRedlock, true })
	ctx := ctxT(t, 150*time.Second)

	nodes := d.Nodes()
	if len(nodes) != DefaultRedlockNodes {
		t.Fatalf("%d nodes, want %d", len(nodes), DefaultRedlockNodes)
	}
	for _, n := range nodes {
		if n.Kind != RolePrimary || strings.HasPrefix(n.Addr, "127.") || n.PID == 0 {
			t.Fatalf("%s: kind %s addr %s pid %d; want a primary with a container address", n.Name, n.Kind, n.Addr, n.PID)
		}
		if role := dockerInfo(t, d, n.Name, "role"); role != "master" {
			t.Errorf("%s reports role %s, want an independent primary", n.Name, role)
		}
	}
	if len(d.SentinelAddrs()) != 0 {
		t.Errorf("Sentinels on the redlock topology: %v", d.SentinelAddrs())
	}
	if _, err := d.Primary(ctx); !errors.Is(err, errNoPrimary) {
		t.Errorf("Primary = %v, want errNoPrimary", err)
	}

	// Kill and restart with its own config: a primary again, and without AOF
	// it has forgotten what it held.
	if _, err := d.Command(ctx, "valkey-1", "SET", "lock:{job-1}", "t1"); err != nil {
		t.Fatal(err)
	}
	if err := d.Kill("valkey-1"); err != nil {
		t.Fatal(err)
	}
	if err := d.Restart(ctx, "valkey-1", WithOldConfig); err != nil {
		t.Fatal(err)
	}
	if role := dockerInfo(t, d, "valkey-1", "role"); role != "master" {
		t.Errorf("restarted valkey-1 is %s, want a primary", role)
	}
	if v, _ := d.Command(ctx, "valkey-1", "GET", "lock:{job-1}"); v != "" {
		t.Errorf("restarted valkey-1 (no AOF) still holds lock:{job-1} = %q", v)
	}
	// The runner's final heal restarts killed nodes AsReplica: on redlock
	// that must still be a primary (there is nothing to replicate).
	if err := d.Kill("valkey-1"); err != nil {
		t.Fatal(err)
	}
	if err := d.Restart(ctx, "valkey-1", AsReplica); err != nil {
		t.Fatal(err)
	}
	if role := dockerInfo(t, d, "valkey-1", "role"); role != "master" {
		t.Errorf("valkey-1 restarted AsReplica is %s, want a primary", role)
	}

	// Pause: the frozen node answers nothing until thawed.
	checkPauseResume(ctx, t, d, "valkey-2")

	// Clock: libfaketime in the image moves one node's wall clock.
	checkClockJump(ctx, t, d, "valkey-3")

	// Isolate: the clients on the host no longer reach the node, which runs
	// on with its data; Partition has no link to cut here; Heal reconnects.
	if _, err := d.Command(ctx, "valkey-4", "SET", "kept", "1"); err != nil {
		t.Fatal(err)
	}
	if err := d.Partition("valkey-4"); err == nil {
		t.Error("Partition on the redlock topology: want a refusal (the nodes share no links)")
	}
	if err := d.Isolate("valkey-4"); err != nil {
		t.Fatal(err)
	}
	if got := d.Partitioned(); len(got) != 1 || got[0] != "valkey-4" {
		t.Errorf("Partitioned() = %v, want [valkey-4]", got)
	}
	d.topo.adm.drop(d.mustAddr(t, "valkey-4"))
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	_, err := d.Command(pctx, "valkey-4", "PING")
	cancel()
	if err == nil {
		t.Error("the host still reaches an isolated node")
	}
	if _, err := d.Command(ctx, "valkey-0", "PING"); err != nil {
		t.Errorf("isolating valkey-4 cut valkey-0 off too: %v", err)
	}
	if err := d.Heal("valkey-4"); err != nil {
		t.Fatal(err)
	}
	if len(d.Partitioned()) != 0 {
		t.Errorf("after Heal, Partitioned() = %v", d.Partitioned())
	}
	if err := d.WaitReady(ctx); err != nil {
		t.Fatalf("not ready after heal: %v", err)
	}
	if v, err := d.Command(ctx, "valkey-4", "GET", "kept"); err != nil || v != "1" {
		t.Errorf("healed valkey-4: GET kept = %q, %v; want its data intact", v, err)
	}
}

// TestDockerEtcd: three etcd members from the lockjepsen/etcd image; a
// partitioned leader is replaced while the host still reaches it, and heals;
// SIGKILL of the leader, restart from the data dir in the bind mount, and the
// freezer pause work as on the local runtime; clock faults are refused.
func TestDockerEtcd(t *testing.T) {
	dockerSlot(t)
	if _, err := FindEtcd(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	d := startDocker(t, func(c *Config) { c.Topology = TopologyEtcd })
	ctx := ctxT(t, 150*time.Second)

	if got := EtcdEndpoints(d); len(got) != DefaultEtcdMembers {
		t.Fatalf("endpoints %v, want %d", got, DefaultEtcdMembers)
	}
	if v := d.Version(); !strings.HasPrefix(v, "etcd 3.") {
		t.Errorf("Version() = %q, want the image's etcd version", v)
	}
	if err := d.SetClockOffset("etcd-0", "+60"); !errors.Is(err, ErrEtcdClock) {
		t.Errorf("SetClockOffset on etcd: %v, want ErrEtcdClock", err)
	}

	// Partition the leader: the host still reaches it, the majority elects
	// another; healed, one leader again.
	old, err := d.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Partition(old.Name); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	nl, err := d.WaitFailover(ctx, old.Name)
	if err != nil {
		t.Fatalf("no new leader while %s is partitioned: %v", old.Name, err)
	}
	t.Logf("leader %s partitioned, %s elected in %v", old.Name, nl.Name, time.Since(start).Round(time.Millisecond))
	if _, err := d.etcd.Status(ctx, old.Name); err != nil {
		t.Errorf("the host cannot reach the partitioned member %s: %v", old.Name, err)
	}
	if err := d.Heal(old.Name); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitReady(ctx); err != nil {
		t.Fatalf("not ready after heal: %v", err)
	}

	// Kill the leader: another is elected; the killed member restarts with
	// its data dir and rejoins.
	l, err := d.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Kill(l.Name); err != nil {
		t.Fatal(err)
	}
	if nl, err := d.WaitFailover(ctx, l.Name); err != nil || nl.Name == l.Name {
		t.Fatalf("after SIGKILL of %s: leader %s, %v", l.Name, nl.Name, err)
	}
	if err := d.Restart(ctx, l.Name, AsReplica); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitReady(ctx); err != nil {
		t.Fatalf("not ready after %s's restart: %v", l.Name, err)
	}

	// Pause a member (the freezer): it answers nothing, then rejoins.
	if err := d.Pause("etcd-2"); err != nil {
		t.Fatal(err)
	}
	// (Status refuses a member flagged paused; ask its endpoint directly.)
	c, err := d.etcd.client("etcd-2")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	_, err = c.Status(sctx, d.mustAddr(t, "etcd-2"))
	cancel()
	if err == nil {
		t.Error("a paused member answered Status")
	}
	if err := d.Resume("etcd-2"); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitReady(ctx); err != nil {
		t.Fatalf("not ready after resume: %v", err)
	}

	logs := filepath.Join(t.TempDir(), "logs")
	if err := d.CollectLogs(logs); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(logs, "etcd-0.log")); err != nil || len(b) == 0 {
		t.Errorf("etcd-0.log: %d bytes, %v; want the member's log from the bind mount", len(b), err)
	}
}

// TestDockerZooKeeper: three ZooKeeper members from the lockjepsen/zookeeper
// image; the leader isolated (cut off from the other members and from the
// host) is replaced and, healed, follows; SIGKILL of the leader, restart
// from the data dir in the bind mount and the freezer pause work as on the
// local runtime; clock faults are refused.
func TestDockerZooKeeper(t *testing.T) {
	dockerSlot(t)
	if _, _, err := FindZooKeeper(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	d := startDocker(t, func(c *Config) { c.Topology = TopologyZooKeeper })
	ctx := ctxT(t, 150*time.Second)

	if got := EtcdEndpoints(d); len(got) != DefaultZooKeeperMembers || !strings.HasSuffix(got[0], ":2181") {
		t.Fatalf("endpoints %v, want %d client ports in the containers", got, DefaultZooKeeperMembers)
	}
	if v := d.Version(); !strings.HasPrefix(v, "ZooKeeper 3.") {
		t.Errorf("Version() = %q, want the members' ZooKeeper version", v)
	}
	if err := d.SetClockOffset("zk-0", "+60"); !errors.Is(err, ErrZooKeeperClock) {
		t.Errorf("SetClockOffset on zookeeper: %v, want ErrZooKeeperClock", err)
	}

	// Isolate the leader: the host no longer reaches it, the majority
	// elects another; healed, it follows and the ensemble is whole.
	old, err := d.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Isolate(old.Name); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	nl, err := d.WaitFailover(ctx, old.Name)
	if err != nil {
		t.Fatalf("no new leader while %s is isolated: %v", old.Name, err)
	}
	t.Logf("leader %s isolated, %s elected in %v", old.Name, nl.Name, time.Since(start).Round(time.Millisecond))
	if _, err := d.zk.srvr(ctx, old); err == nil {
		t.Errorf("the host still reaches the isolated member %s", old.Name)
	}
	if err := d.Heal(old.Name); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := d.WaitReady(ctx); err != nil {
		t.Fatalf("not ready after heal: %v", err)
	}
	t.Logf("%s rejoined %v after the heal", old.Name, time.Since(start).Round(time.Millisecond))

	// Kill the leader: another is elected; the killed member restarts with
	// its data dir and rejoins.
	l, err := d.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Kill(l.Name); err != nil {
		t.Fatal(err)
	}
	if nl, err := d.WaitFailover(ctx, l.Name); err != nil || nl.Name == l.Name {
		t.Fatalf("after SIGKILL of %s: leader %s, %v", l.Name, nl.Name, err)
	}
	if err := d.Restart(ctx, l.Name, AsReplica); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitReady(ctx); err != nil {
		t.Fatalf("not ready after %s's restart: %v", l.Name, err)
	}

	// Pause a member (the freezer): it answers nothing, then rejoins.
	if err := d.Pause("zk-2"); err != nil {
		t.Fatal(err)
	}
	n, _ := d.Node("zk-2")
	n.Paused = false // (srvr refuses a member flagged paused; ask it anyway)
	if _, err := d.zk.srvr(ctx, n); err == nil {
		t.Error("a paused member answered srvr")
	}
	if err := d.Resume("zk-2"); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitReady(ctx); err != nil {
		t.Fatalf("not ready after resume: %v", err)
	}

	logs := filepath.Join(t.TempDir(), "logs")
	if err := d.CollectLogs(logs); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(logs, "zk-0.log")); err != nil || len(b) == 0 {
		t.Errorf("zk-0.log: %d bytes, %v; want the member's log from the bind mount", len(b), err)
	}
}
