package cluster_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/deployments/etcd"
	"github.com/lockjepsen/lockjepsen/deployments/zookeeper"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// The Docker runtime running a consensus service's members
// (cluster.DockerServed): etcd and ZooKeeper, each from its own folder. The
// members are asked directly, over their container addresses, as a client
// on the host would.

func mustAddr(t *testing.T, d *cluster.Docker, name string) string {
	t.Helper()
	n, ok := d.Node(name)
	if !ok {
		t.Fatalf("no node %s", name)
	}
	return n.Addr
}

// etcdStatus asks one member's Status endpoint, 700 ms at most.
func etcdStatus(ctx context.Context, addr string) error {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel()
	_, err = c.Status(ctx, addr)
	return err
}

// srvr asks one ZooKeeper member the four-letter word srvr: nil when it
// answers that it serves (a Mode line), within 700 ms.
func srvr(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 700*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(700 * time.Millisecond))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return err
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Mode: ") {
			return nil
		}
	}
	return fmt.Errorf("%s: not serving (%v)", addr, sc.Err())
}

// TestDockerEtcd: three etcd members from the lockjepsen/etcd image; a
// partitioned leader is replaced while the host still reaches it, and heals;
// SIGKILL of the leader, restart from the data dir in the bind mount, and the
// freezer pause work as on the local runtime; clock faults are refused.
func TestDockerEtcd(t *testing.T) {
	cluster.DockerSlot(t)
	if _, err := etcd.FindEtcd(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	d := cluster.StartDocker(t, func(c *cluster.Config) { c.Topology = etcd.Topology })
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()

	if got := cluster.MemberAddrs(d); len(got) != cluster.DefaultMembers {
		t.Fatalf("endpoints %v, want %d", got, cluster.DefaultMembers)
	}
	if v := d.Version(); !strings.HasPrefix(v, "etcd 3.") {
		t.Errorf("Version() = %q, want the image's etcd version", v)
	}
	if err := d.SetClockOffset("etcd-0", "+60"); !errors.Is(err, etcd.ErrClock) {
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
	if err := etcdStatus(ctx, mustAddr(t, d, old.Name)); err != nil {
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
	if err := d.Restart(ctx, l.Name, cluster.AsReplica); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitReady(ctx); err != nil {
		t.Fatalf("not ready after %s's restart: %v", l.Name, err)
	}

	// Pause a member (the freezer): it answers nothing, then rejoins.
	if err := d.Pause("etcd-2"); err != nil {
		t.Fatal(err)
	}
	if etcdStatus(ctx, mustAddr(t, d, "etcd-2")) == nil {
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
	cluster.DockerSlot(t)
	if _, _, err := zookeeper.FindZooKeeper(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	d := cluster.StartDocker(t, func(c *cluster.Config) { c.Topology = zookeeper.Topology })
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()

	if got := cluster.MemberAddrs(d); len(got) != cluster.DefaultMembers || !strings.HasSuffix(got[0], ":2181") {
		t.Fatalf("endpoints %v, want %d client ports in the containers", got, cluster.DefaultMembers)
	}
	if v := d.Version(); !strings.HasPrefix(v, "ZooKeeper 3.") {
		t.Errorf("Version() = %q, want the members' ZooKeeper version", v)
	}
	if err := d.SetClockOffset("zk-0", "+60"); !errors.Is(err, zookeeper.ErrClock) {
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
	if srvr(old.Addr) == nil {
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
	if err := d.Restart(ctx, l.Name, cluster.AsReplica); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitReady(ctx); err != nil {
		t.Fatalf("not ready after %s's restart: %v", l.Name, err)
	}

	// Pause a member (the freezer): it answers nothing, then rejoins.
	if err := d.Pause("zk-2"); err != nil {
		t.Fatal(err)
	}
	if srvr(mustAddr(t, d, "zk-2")) == nil {
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
