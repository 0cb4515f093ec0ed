package valkeycluster

import (
	"context"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/cluster/clustertest"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
)

// The cluster topology end to end: 3 shards of a primary and a replica come
// up with every slot served; KeySlot agrees with the server; the shard that
// owns the lock key fails over by the cluster bus when its primary is
// SIGKILLed, and the old primary, restarted with its nodes.conf, rejoins as
// a replica of the promoted one.
func TestClusterTopology(t *testing.T) {
	testslot.Parallel(t)
	l := clustertest.Up(t, func(c *cluster.Config) { c.Topology, c.Replicas = Topology, 1 })
	if got := len(l.Nodes()); got != 6 {
		t.Fatalf("%d nodes, want 6 (3 shards × (1 + 1))", got)
	}
	if len(l.WatcherAddrs()) != 0 {
		t.Fatalf("the cluster topology started Sentinels: %v", l.WatcherAddrs())
	}
	for _, k := range []string{LockKey, "fence:{job-1}", "lock:{job-2}", "plain", "{}x", "a{b}c"} {
		r, err := l.Do(ctxT(t, 2*time.Second), l.Nodes()[0].Addr, "CLUSTER", "KEYSLOT", k)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := r.AsInt64(); int64(KeySlot(k)) != n {
			t.Fatalf("KeySlot(%q) = %d, the server says %d", k, KeySlot(k), n)
		}
	}
	ctx := ctxT(t, 60*time.Second)
	sh, err := l.Shard(ctx, LockKey)
	if err != nil {
		t.Fatal(err)
	}
	if sh.Primary.Name != "valkey-2" || len(sh.Replicas) != 1 || sh.Replicas[0].Name != "valkey-5" {
		t.Fatalf("shard of %s (slot %d): primary %s, replicas %v; want valkey-2 and valkey-5", LockKey, sh.Slot, sh.Primary.Name, sh.Replicas)
	}
	if p, err := l.Primary(ctx); err != nil || p.Name != sh.Primary.Name {
		t.Fatalf("Primary = %v, %v; want the lock key's shard primary %s", p.Name, err, sh.Primary.Name)
	}
	start := time.Now()
	if err := l.Kill(sh.Primary.Name); err != nil {
		t.Fatal(err)
	}
	np, err := l.WaitFailover(ctx, sh.Primary.Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILL %s to %s serving slot %d as primary: %v", sh.Primary.Name, np.Name, sh.Slot, time.Since(start).Round(time.Millisecond))
	if np.Name != "valkey-5" {
		t.Fatalf("promoted %s, want the shard's replica valkey-5", np.Name)
	}
	if err := l.Restart(ctx, sh.Primary.Name, cluster.AsReplica); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := l.Shard(ctx, LockKey)
	if err != nil {
		t.Fatal(err)
	}
	if after.Primary.Name != "valkey-5" || len(after.Replicas) != 1 || after.Replicas[0].Name != sh.Primary.Name {
		t.Fatalf("after the rejoin: primary %s, replicas %v; want valkey-5 with %s", after.Primary.Name, after.Replicas, sh.Primary.Name)
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
