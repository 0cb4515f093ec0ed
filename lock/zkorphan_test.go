package lock

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/deployments/zookeeper"
	"github.com/lockjepsen/lockjepsen/endpoint"
)

// An orphan (a znode whose release lost its answer) is reaped by its
// client's next acquire on any key, not only on its own: the soak's
// zk-pause-leader seed 1 left one on lock:{job-2} whose client went on to
// other keys, and nobody took lock:{job-2} for the last 18 s of the run. Here
// client a leaves an orphan on job-1 and then acquires job-2; b must then be
// granted job-1. On the per-key reaping b waits behind the orphan and fails.
func TestZKOrphanReapedByAnyAcquire(t *testing.T) {
	cfg := cluster.Defaults()
	cfg.Topology, cfg.Dir, cfg.Members = zookeeper.Topology, t.TempDir(), 1
	rt, err := cluster.New(cfg, cluster.Binaries{})
	if err != nil {
		t.Fatalf("New (run 'make setup'): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := rt.Up(ctx); err != nil {
		t.Fatalf("Up: %v", err)
	}
	defer rt.Down()
	lc := Config{Recipe: ZKLock, Service: endpoint.Set{Protocol: endpoint.ZooKeeper, Addrs: cluster.Addrs(rt)}, TTL: 3 * time.Second,
		RenewEvery: time.Second, OpTimeout: 2 * time.Second}
	open := func() *zkLock {
		l, err := Open(lc)
		if err != nil {
			t.Fatalf("open zk-lock: %v", err)
		}
		t.Cleanup(l.Close)
		return l.(*zkLock)
	}
	a, b := open(), open()
	op := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		t.Cleanup(cancel)
		return c
	}
	// The orphan: a's znode on job-1, as a release that lost its answer
	// leaves it (registered, not deleted).
	dir, err := a.parent(op(), "lock:{job-1}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.conn.Create(dir+"/orphan-token-lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create the orphan: %v", err)
	}
	a.orphan(dir, "orphan-token")
	if _, r := a.Acquire(op(), "lock:{job-2}", "a-token", lc.TTL); !r.Ok() {
		t.Fatalf("a's acquire of job-2: %v", r.Err)
	}
	if _, r := b.Acquire(op(), "lock:{job-1}", "b-token", lc.TTL); !r.Ok() {
		t.Fatalf("b's acquire of job-1 after a's acquire of job-2: %s %v (a's orphan on job-1 was not reaped)", r.Outcome, r.Err)
	}
}
