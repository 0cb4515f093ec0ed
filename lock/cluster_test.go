package lock

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/deployments/valkeycluster"
	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
)

// The recipes on Valkey Cluster through valkey-go's cluster client: the
// fenced MULTI/SET NX/INCR lands on one shard (the hash tag), a graceful
// failover's MOVED is followed, and DisableRetry still leaves a timeout
// unknown (info) rather than retrying it.
func TestRecipesOnCluster(t *testing.T) {
	ctx, vc := upValkeyCluster(t)
	lc := Config{Recipe: Native, Service: endpoint.Set{Protocol: endpoint.Cluster, Addrs: cluster.Addrs(vc)}, Fencing: true}
	vd, err := cluster.Lookup(valkeycluster.Topology)
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
	key, tok := valkeycluster.LockKey, NewToken()
	fence, r := l.Acquire(ctx, key, tok, 5*time.Second)
	mustOutcome(t, "fenced acquire", r, history.OK)
	if fence != 1 {
		t.Fatalf("first fence %d, want 1", fence)
	}
	_, r = l.Acquire(ctx, key, NewToken(), 5*time.Second)
	mustOutcome(t, "second acquire", r, history.Fail)
	// Another key, another shard: the client routes it by its own slot.
	if f, r := l.Acquire(ctx, "lock:{job-2}", NewToken(), 5*time.Second); !r.Ok() || f != 1 {
		t.Fatalf("lock:{job-2} (slot %d): fence %d, %v", valkeycluster.KeySlot("lock:{job-2}"), f, r.Err)
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

// upValkeyCluster starts 3 shards of a primary and a replica for one test.
func upValkeyCluster(t *testing.T) (context.Context, *cluster.Local) {
	t.Helper()
	bins, err := cluster.FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	cfg := cluster.Defaults()
	cfg.Dir, cfg.Topology, cfg.Replicas = t.TempDir(), valkeycluster.Topology, 1
	vc, err := cluster.NewLocal(cfg, bins)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	if err := vc.Up(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vc.Down() })
	return ctx, vc
}

// The fenced native recipe while the lock key's slot moves, the steps of
// the migrate-slot fault one at a time and then migrate-slot-atomic's:
// valkey-go follows ASK and MOVED, the server's TRYAGAIN reaches the recipe
// as a refusal (fail, not unknown), and the fence never goes backwards.
func TestRecipesDuringSlotMigration(t *testing.T) {
	ctx, vc := upValkeyCluster(t)
	l := open(t, Config{Recipe: Native, Service: endpoint.Set{Protocol: endpoint.Cluster, Addrs: cluster.Addrs(vc)}, Fencing: true})
	// The same recipe with WAIT: its acquire runs on a dedicated connection,
	// pinned to one node, which follows a redirect only because the recipe
	// sends it on again (basic.Acquire).
	lw := open(t, Config{Recipe: Native, Service: endpoint.Set{Protocol: endpoint.Cluster, Addrs: cluster.Addrs(vc)}, Fencing: true, Wait: WaitOpt{Replicas: 1, TimeoutMs: 1000}})
	key, slot := valkeycluster.LockKey, strconv.Itoa(valkeycluster.KeySlot(valkeycluster.LockKey))
	cmd := func(node string, args ...string) string {
		t.Helper()
		out, err := vc.Command(ctx, node, args...)
		if err != nil {
			t.Fatalf("%s on %s: %v", strings.Join(args, " "), node, err)
		}
		return out
	}
	sh, err := vc.Shard(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	var primaries []string
	for _, v := range valkeycluster.ParseClusterNodes(cmd(sh.Primary.Name, "CLUSTER", "NODES")) {
		for _, n := range vc.Nodes() {
			if n.Addr == v.Addr {
				ids[n.Name] = v.ID
				if v.Primary {
					primaries = append(primaries, n.Name)
				}
			}
		}
	}
	src, dst := sh.Primary.Name, primaries[0]
	if dst == src {
		dst = primaries[1]
	}
	dstNode, _ := vc.Node(dst)
	host, port, _ := strings.Cut(dstNode.Addr, ":")
	var tok string
	var fence int64
	extend := func() Result { return l.Extend(ctx, key, tok, 10*time.Second) }
	release := func() Result { return l.Release(ctx, key, tok) }
	admin := func(node string, args ...string) func() Result {
		return func() Result { cmd(node, args...); return ok() }
	}
	migrate := func(keys ...string) func() Result {
		return admin(src, append([]string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}, keys...)...)
	}
	// The atomic move is asynchronous: its job runs after MIGRATESLOTS
	// answers, until the source no longer serves the slot.
	movedBack := func() Result {
		for !strings.Contains(cmd(src, "CLUSTER", "GETSLOTMIGRATIONS"), "success") {
			time.Sleep(20 * time.Millisecond)
		}
		return ok()
	}
	acquireOn := func(l Lock) func() Result {
		return func() Result {
			tk := NewToken()
			f, r := l.Acquire(ctx, key, tk, 10*time.Second)
			if r.Ok() {
				if f <= fence {
					t.Errorf("fence %d after %d: backwards", f, fence)
				}
				tok, fence = tk, f
			}
			return r
		}
	}
	waited := acquireOn(lw)
	acquire := acquireOn(l)
	steps := []struct {
		what string
		do   func() Result
		want Outcome
		text string // in the error, when not ok
	}{
		{"acquire before the move", acquire, history.OK, ""},
		{"target IMPORTING", admin(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[src]), history.OK, ""},
		{"source MIGRATING", admin(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[dst]), history.OK, ""},
		{"extend, both keys on the source", extend, history.OK, ""},
		{"acquire by another, both keys on the source", acquire, history.Fail, "another client holds the lock"},
		{"MIGRATE the lock key alone", migrate(key), history.OK, ""},
		{"extend on the target after ASK", extend, history.OK, ""},
		// The source has the fence counter and not the lock key.
		{"acquire by another, the keys split", acquire, history.Fail, "TRYAGAIN"},
		{"MIGRATE the fence counter", migrate(FenceKey(key)), history.OK, ""},
		{"extend, both keys on the target", extend, history.OK, ""},
		// The source answers EXEC with ASK (it discarded the transaction);
		// valkey-go sends ASKING and the EXEC alone on to the target, which
		// never saw the MULTI: every fenced acquire is refused until the
		// slot closes, a refusal and not an unknown, since nothing ran.
		{"acquire by another, both keys on the target", acquire, history.Fail, "EXEC without MULTI"},
		// The waited acquire follows the source's ASK to the target with
		// ASKING, where its MULTI runs whole: the lock's real state answers.
		{"waited acquire by another, both keys on the target", waited, history.Fail, "another client holds the lock"},
		{"release on the target after ASK", release, history.OK, ""},
		{"acquire with the lock free on the target", acquire, history.Fail, "EXEC without MULTI"},
		// With the lock key gone, the target refuses the two-key MULTI on an
		// importing slot (one key missing): TRYAGAIN, what any cluster client
		// following the ASK is told, in place of the EXEC's ASK before.
		{"waited acquire with the lock free on the target", waited, history.Fail, "TRYAGAIN"},
		{"target NODE", admin(dst, "CLUSTER", "SETSLOT", slot, "NODE", ids[dst]), history.OK, ""},
		{"source NODE", admin(src, "CLUSTER", "SETSLOT", slot, "NODE", ids[dst]), history.OK, ""},
		{"acquire after MOVED", acquire, history.OK, ""},
		{"atomic move back while held", admin(dst, "CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", slot, slot, "NODE", ids[src]), history.OK, ""},
		{"await the atomic move", movedBack, history.OK, ""},
		{"extend after MOVED", extend, history.OK, ""},
		{"acquire by another after the atomic move", acquire, history.Fail, "another client holds the lock"},
		// Its slot map still names the old owner: the MOVED is followed.
		{"waited acquire by another after the atomic move", waited, history.Fail, "another client holds the lock"},
		{"release after the atomic move", release, history.OK, ""},
		{"acquire after the atomic move", acquire, history.OK, ""},
	}
	for _, s := range steps {
		r := s.do()
		if r.Outcome != s.want || (s.text != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), s.text))) {
			t.Fatalf("%s: %s %v, want %s with %q", s.what, r.Outcome, r.Err, s.want, s.text)
		}
	}

}
