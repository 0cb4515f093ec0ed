package lock

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/endpoint"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/internal/testvalkey"
)

func TestFenceKey(t *testing.T) {
	for in, want := range map[string]string{
		"lock:{job-1}": "fence:{job-1}",
		"plain":        "fence:{plain}",
		"lock:{}x":     "fence:{lock:{}x}",
	} {
		if got := FenceKey(in); got != want {
			t.Errorf("FenceKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFencing: numbers strictly increase across acquisitions, and the INCR of
// a refused acquire is burnt, never handed out.
func TestFencing(t *testing.T) {
	for _, recipe := range []string{Native, Lua} {
		t.Run(recipe, func(t *testing.T) {
			cfg := testConfig(recipe)
			cfg.Fencing = true
			l := open(t, cfg)
			key, ctx := "lock:{fence-"+recipe+"}", opCtx(t)
			var last int64
			for i := 0; i < 5; i++ {
				tok := NewToken()
				fence, r := l.Acquire(ctx, key, tok, 2*time.Second)
				mustOutcome(t, "fenced acquire", r, history.OK)
				if fence <= last {
					t.Fatalf("fence %d after %d: not strictly increasing", fence, last)
				}
				last = fence
				// A contender's refused acquire still runs its INCR.
				burnt, r := l.Acquire(ctx, key, NewToken(), 2*time.Second)
				mustOutcome(t, "contended fenced acquire", r, history.Fail)
				if burnt != 0 {
					t.Fatalf("refused acquire handed out fence %d", burnt)
				}
				if !strings.Contains(r.Error(), "not handed out") {
					t.Fatalf("refused acquire's error should say the number was not handed out: %v", r.Err)
				}
				counter, _ := strconv.ParseInt(get(t, FenceKey(key)), 10, 64)
				if counter != fence+1 {
					t.Fatalf("counter %d, want %d (the refused INCR ran)", counter, fence+1)
				}
				mustOutcome(t, "release", l.Release(ctx, key, tok), history.OK)
			}
			next, r := l.Acquire(ctx, key, NewToken(), time.Second)
			mustOutcome(t, "acquire after refusals", r, history.OK)
			if next != last+2 {
				t.Fatalf("fence %d after %d and one burnt number, want %d", next, last, last+2)
			}
		})
	}
}

// TestWaitPausedReplicas: with the replicas stopped, WAIT 1 gets no ack, so the
// acquire is reported failed and the lock is gone.
func TestWaitPausedReplicas(t *testing.T) {
	cfg := testConfig(Native)
	cfg.Fencing = true
	cfg.Wait = WaitOpt{Replicas: 1, TimeoutMs: 200}
	l := open(t, cfg)
	key, ctx := "lock:{wait}", context.Background()
	if _, r := l.Acquire(ctx, key, NewToken(), 2*time.Second); !r.Ok() {
		t.Fatalf("acquire with replicas up: %v", r.Err)
	} else if err := raw.Do(ctx, raw.B().Del().Key(key).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	var paused []string
	for _, n := range testCluster.ValkeyNodes() {
		if n.Kind == "replica" {
			if err := testCluster.Pause(n.Name); err != nil {
				t.Fatal(err)
			}
			paused = append(paused, n.Name)
		}
	}
	resume := func() {
		for _, n := range paused {
			_ = testCluster.Resume(n)
		}
		paused = nil
	}
	t.Cleanup(resume)
	start := time.Now()
	fence, r := l.Acquire(ctx, key, NewToken(), 2*time.Second)
	took := time.Since(start)
	left := get(t, key)
	resume()
	mustOutcome(t, "acquire with replicas paused", r, history.Fail)
	if !strings.Contains(r.Error(), "WAIT 1 200: 0 replica(s) acknowledged; lock released") {
		t.Fatalf("error should name the WAIT shortfall and the release: %v", r.Err)
	}
	if fence != 0 || left != "" {
		t.Fatalf("failed acquire left fence %d, key %q", fence, left)
	}
	if took < 200*time.Millisecond {
		t.Fatalf("acquire took %v: WAIT did not wait its timeout", took)
	}
}

// TestCapabilityRefusal runs the check against a real older server, Debian
// bookworm's redis-server 7.0, which has neither IFEQ nor DELIFEQ.
func TestCapabilityRefusal(t *testing.T) {
	addr := startRedis7(t)
	cfg := Config{Recipe: Native, Service: endpoint.One(addr)}
	caps, err := Check(context.Background(), cfg)
	if err == nil {
		t.Fatalf("native accepted on %v", caps)
	}
	t.Logf("refusal: %v", err)
	for _, want := range []string{"Redis 7.0", "IFEQ", "DELIFEQ", "Valkey 9.0 or newer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not mention %q", err, want)
		}
	}
	for _, ok := range []string{Lua, Unsafe, Redsync} {
		if _, err := Check(context.Background(), Config{Recipe: ok, Service: endpoint.One(addr)}); err != nil {
			t.Errorf("%s refused on Redis 7.0: %v", ok, err)
		}
	}
	// The same check passes on the Valkey 9 cluster, and refuses WAITAOF with a
	// local fsync when appendonly is off.
	caps, err = Check(context.Background(), testConfig(Native))
	if err != nil || caps.Product != "valkey" || !caps.IFEQ || !caps.Commands["DELIFEQ"] {
		t.Fatalf("native on the Valkey 9 cluster: %v, %+v", err, caps)
	}
	aof := testConfig(Native)
	aof.WaitAOF = WaitAOFOpt{Local: 1, Replicas: 1, TimeoutMs: 100}
	if _, err := Check(context.Background(), aof); err == nil || !strings.Contains(err.Error(), "appendonly is off") {
		t.Fatalf("WAITAOF 1 1 with appendonly off: %v", err)
	}
}

// startRedis7 runs /usr/bin/redis-server on a free loopback port.
func startRedis7(t *testing.T) string {
	t.Helper()
	bin := "/usr/bin/redis-server"
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is needed for the refusal test (apt-get install redis-server): %v", bin, err)
	}
	return testvalkey.Start(t, bin)
}

// TestLualessBuildRefusesEvalRecipes runs the check against Valkey 9.1.2 built
// with BUILD_LUA=no (make setup-ci builds it): native runs there, every
// EVAL-based recipe is refused before a run with the reason.
func TestLualessBuildRefusesEvalRecipes(t *testing.T) {
	bins, err := cluster.FindBinaries()
	if err != nil || bins.NoLuaServer == "" {
		t.Fatalf("the Lua-less build is needed (make setup-ci builds it): %v", err)
	}
	addr := testvalkey.Start(t, bins.NoLuaServer)
	caps, err := Check(context.Background(), Config{Recipe: Native, Service: endpoint.One(addr)})
	if err != nil || caps.Lua {
		t.Fatalf("native on the Lua-less build: %v (caps %+v)", err, caps)
	}
	for _, r := range []string{Lua, Redsync, Valkeylock, Redislock} {
		_, err := Check(context.Background(), Config{Recipe: r, Service: endpoint.One(addr)})
		if err == nil || !strings.Contains(err.Error(), "Lua engine") {
			t.Errorf("%s on the Lua-less build: %v, want a refusal naming the missing Lua engine", r, err)
		}
	}
	// Forced past the check, an EVAL is refused by the server itself.
	c, err := Connect(Config{Service: endpoint.One(addr)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Do(context.Background(), c.B().Eval().Script("return 1").Numkeys(0).Build()).Error()
	if err == nil {
		t.Fatal("EVAL ran on the Lua-less build")
	}
	t.Logf("EVAL on the Lua-less build: %v", err)
}
