package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/deployments/redlock"
)

// The redlock topology on the docker runtime (etcd and ZooKeeper:
// docker_services_test.go), one cluster each:
// every check of a topology runs against the same containers, since bringing
// a topology up is most of a Docker test's time.

// TestDockerRedlock: five standalone primaries in containers, each on its own
// network; kill (restart empty), freezer pause, clock offset and isolation
// from the clients act through the Engine API and heal.
func TestDockerRedlock(t *testing.T) {
	cluster.DockerSlot(t)
	d := cluster.StartDocker(t, func(c *cluster.Config) { c.Topology, c.FakeTime = redlock.Topology, true })
	ctx := cluster.CtxT(t, 150*time.Second)

	nodes := d.Nodes()
	if len(nodes) != redlock.DefaultNodes {
		t.Fatalf("%d nodes, want %d", len(nodes), redlock.DefaultNodes)
	}
	for _, n := range nodes {
		if n.Kind != cluster.RolePrimary || strings.HasPrefix(n.Addr, "127.") || n.PID == 0 {
			t.Fatalf("%s: kind %s addr %s pid %d; want a primary with a container address", n.Name, n.Kind, n.Addr, n.PID)
		}
		if role := cluster.DockerInfo(t, d, n.Name, "role"); role != "master" {
			t.Errorf("%s reports role %s, want an independent primary", n.Name, role)
		}
	}
	if len(d.WatcherAddrs()) != 0 {
		t.Errorf("Sentinels on the redlock topology: %v", d.WatcherAddrs())
	}
	if _, err := d.Primary(ctx); !errors.Is(err, redlock.ErrNoPrimary) {
		t.Errorf("Primary = %v, want redlock.ErrNoPrimary", err)
	}

	// Kill and restart with its own config: a primary again, and without AOF
	// it has forgotten what it held.
	if _, err := d.Command(ctx, "valkey-1", "SET", "lock:{job-1}", "t1"); err != nil {
		t.Fatal(err)
	}
	if err := d.Kill("valkey-1"); err != nil {
		t.Fatal(err)
	}
	if err := d.Restart(ctx, "valkey-1", cluster.WithOldConfig); err != nil {
		t.Fatal(err)
	}
	if role := cluster.DockerInfo(t, d, "valkey-1", "role"); role != "master" {
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
	if err := d.Restart(ctx, "valkey-1", cluster.AsReplica); err != nil {
		t.Fatal(err)
	}
	if role := cluster.DockerInfo(t, d, "valkey-1", "role"); role != "master" {
		t.Errorf("valkey-1 restarted AsReplica is %s, want a primary", role)
	}

	// Pause: the frozen node answers nothing until thawed.
	cluster.CheckPauseResume(ctx, t, d, "valkey-2")

	// Clock: libfaketime in the image moves one node's wall clock.
	cluster.CheckClockJump(ctx, t, d, "valkey-3")

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
	cluster.DropConn(t, d, "valkey-4")
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
