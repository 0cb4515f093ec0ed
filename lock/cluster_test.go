package lock

import (
	"context"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/history"
)

// The recipes on Valkey Cluster through valkey-go's cluster client: the
// fenced MULTI/SET NX/INCR lands on one shard (the hash tag), a graceful
// failover's MOVED is followed, and DisableRetry still leaves a timeout
// unknown (info) rather than retrying it.
func TestRecipesOnCluster(t *testing.T) {
	bins, err := cluster.FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	cfg := cluster.Defaults()
	cfg.Dir, cfg.Topology, cfg.Replicas = t.TempDir(), cluster.TopologyCluster, 1
	vc, err := cluster.NewLocal(cfg, bins)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := vc.Up(ctx); err != nil {
		t.Fatal(err)
	}
	defer vc.Down()
	lc := Config{Recipe: Native, ClusterAddrs: cluster.Addrs(vc), Fencing: true}
	vd, err := cluster.Lookup(cluster.TopologyCluster)
	if err != nil {
		t.Fatal(err)
	}
	if err := RunsOn(Native, vd, nil); err != nil {
		t.Fatal(err)
	}
	if err := RunsOn("redlock", vd, nil); err == nil {
		t.Fatal("redlock accepted on the cluster topology")
	}
	if _, err := Check(ctx, lc); err != nil {
		t.Fatalf("capability check over the cluster client: %v", err)
	}
	l := open(t, lc)
	key, tok := cluster.LockKey, NewToken()
	fence, r := l.Acquire(ctx, key, tok, 5*time.Second)
	mustOutcome(t, "fenced acquire", r, history.OK)
	if fence != 1 {
		t.Fatalf("first fence %d, want 1", fence)
	}
	_, r = l.Acquire(ctx, key, NewToken(), 5*time.Second)
	mustOutcome(t, "second acquire", r, history.Fail)
	// Another key, another shard: the client routes it by its own slot.
	if f, r := l.Acquire(ctx, "lock:{job-2}", NewToken(), 5*time.Second); !r.Ok() || f != 1 {
		t.Fatalf("lock:{job-2} (slot %d): fence %d, %v", cluster.KeySlot("lock:{job-2}"), f, r.Err)
	}

	// A graceful failover moves the slot; the client's next command goes to
	// the old primary, which answers MOVED, and valkey-go follows it.
	sh, err := vc.Shard(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vc.Command(ctx, sh.Replicas[0].Name, "CLUSTER", "FAILOVER"); err != nil {
		t.Fatal(err)
	}
	if _, err := vc.WaitFailover(ctx, sh.Primary.Name); err != nil {
		t.Fatal(err)
	}
	mustOutcome(t, "extend after the failover (MOVED followed)", l.Extend(ctx, key, tok, 5*time.Second), history.OK)
	mustOutcome(t, "release", l.Release(ctx, key, tok), history.OK)

	// The shard's primary paused, well inside cluster-node-timeout: the
	// acquire times out, and its outcome is unknown.
	sh, err = vc.Shard(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := vc.Pause(sh.Primary.Name); err != nil {
		t.Fatal(err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 150*time.Millisecond)
	_, r = l.Acquire(tctx, key, NewToken(), time.Second)
	tcancel()
	if err := vc.Resume(sh.Primary.Name); err != nil {
		t.Fatal(err)
	}
	mustOutcome(t, "acquire against a paused shard primary", r, history.Info)
}
