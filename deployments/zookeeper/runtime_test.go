package zookeeper

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/internal/testslot"
)

// Three real members: one leader, the others following; SIGKILL the leader
// and another is elected; the killed one restarts from its data dir and the
// ensemble is whole again; Down leaves no JVM behind.
func TestZooKeeperLeaderFailover(t *testing.T) {
	testslot.Parallel(t)
	cfg := cluster.Defaults()
	cfg.Topology, cfg.Dir = Topology, t.TempDir()
	rt, err := cluster.New(cfg, cluster.Binaries{})
	if err != nil {
		t.Fatalf("New (run 'make setup'): %v", err)
	}
	z := rt.(*Local)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	if err := z.Up(ctx); err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("ensemble up in %v: %s", time.Since(start).Round(time.Millisecond), z.Version())
	defer func() {
		nodes := z.Nodes()
		if err := z.Down(); err != nil {
			t.Errorf("Down: %v", err)
		}
		for _, n := range nodes {
			// Down waits until each is no longer running; the reaper
			// may take a moment longer to collect the zombie.
			if n.PID != 0 && !cluster.WaitGone(n.PID, 2*time.Second) {
				t.Errorf("%s (pid %d) outlived Down", n.Name, n.PID)
			}
		}
	}()
	if got := len(cluster.MemberAddrs(z)); got != 3 {
		t.Fatalf("%d endpoints, want 3", got)
	}
	if !strings.HasPrefix(z.Version(), "ZooKeeper 3.") {
		t.Errorf("Version = %q, want ZooKeeper 3.x", z.Version())
	}
	old, err := z.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := z.Kill(old.Name); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	nl, err := z.WaitFailover(ctx, old.Name)
	if err != nil {
		t.Fatal(err)
	}
	if nl.Name == old.Name {
		t.Fatalf("the killed leader %s still leads", old.Name)
	}
	t.Logf("leader %s killed, %s elected in %v", old.Name, nl.Name, time.Since(start).Round(time.Millisecond))
	if err := z.Restart(ctx, old.Name, cluster.AsReplica); err != nil {
		t.Fatal(err)
	}
	if err := z.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if err := z.SetClockOffset(old.Name, "+10"); !errors.Is(err, ErrClock) {
		t.Fatalf("SetClockOffset = %v, want the documented refusal", err)
	}
}

// What the zookeeper topology refuses, before anything starts.
func TestZooKeeperRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*cluster.Config)
		want string
	}{
		{"members", func(c *cluster.Config) { c.Members = 8 }, "--members 8"},
		{"docker-faketime", func(c *cluster.Config) { c.Runtime, c.FakeTime = "docker", true }, "monotonic clock"},
		{"faketime", func(c *cluster.Config) { c.FakeTime = true }, "monotonic clock"},
		{"appendonly", func(c *cluster.Config) { c.AppendOnly = true }, "Valkey knobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster.Defaults()
			c.Topology = Topology
			tc.set(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
